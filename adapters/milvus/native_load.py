"""Milvus's native bulk path (see native_load.sh): pymilvus inserting pre-built column batches
into a collection created and loaded with ragdbeval's IVF_FLAT index, then the flush and the
wait until the index has every row and the collection is loaded.

    native_load.py URL BASE.fbin STREAMS BATCH     # prints load-s index-s
"""
import math
import os
import sys
import time

from pymilvus import Collection, CollectionSchema, DataType, FieldSchema, connections, utility
from pymilvus.client.types import IndexState

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../scripts"))
import native_load as lib  # noqa: E402


def create(n, d):
    if utility.has_collection("native_load"):
        utility.drop_collection("native_load")
    schema = CollectionSchema([FieldSchema("id", DataType.INT64, is_primary=True),
                               FieldSchema("vector", DataType.FLOAT_VECTOR, dim=int(d))])
    coll = Collection("native_load", schema, shards_num=1, consistency_level="Strong")
    nlist = max(1, min(65536, round(4 * math.sqrt(n))))
    coll.create_index("vector", {"index_type": "IVF_FLAT", "metric_type": "L2",
                                 "params": {"nlist": nlist}}, index_name="vector")
    coll.load()
    return coll


def wait_ready(coll, n):
    coll.flush()
    # Polled as ragdbeval polls (pymilvus' own waits sleep half a second before each look).
    handler = connections._fetch_handler("default")
    while (state := handler.get_index_state("native_load", "vector")[0]) != IndexState.Finished:
        if state == IndexState.Failed:
            raise SystemExit("milvus: the index build failed")
        time.sleep(0.001)
    while handler.get_loading_progress("native_load") < 100:
        time.sleep(0.001)
    # The row count is part of the wait, as ragdbeval's ready step counts before it reports.
    count = coll.query(expr="", output_fields=["count(*)"])[0]["count(*)"]
    if count != n:
        raise SystemExit(f"native load: {count} rows, not {n}")


def main(url, base, streams, batch):
    x = lib.read_base(base)
    n, d = x.shape
    connections.connect(uri=url, timeout=600)
    coll = create(n, d)
    # Column batches built before the clock starts, as lists pymilvus sends without conversion.
    batches = [[list(range(lo, min(n, lo + batch))), x[lo:lo + batch]]
               for lo in range(0, n, batch)]
    loaded = lib.send_all(batches, streams, lambda: coll, Collection.insert, "milvus insert")
    start = time.perf_counter()
    wait_ready(coll, n)
    ready = time.perf_counter() - start
    utility.drop_collection("native_load")
    print(f"{loaded:.3f} {ready:.3f}")


main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
