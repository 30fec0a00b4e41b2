# milvus's native bulk path for scripts/load_vs_native.sh, which sources this file and calls
# milvus_setup, milvus_encode BASE.fbin OUT-DIR, milvus_native N ROUND and, where defined,
# milvus_warmup N (the names it defines are the script's to use; see its header).
#
# pymilvus (2.5, its own virtualenv under the cache) inserting pre-built column
# batches of BATCH (default 10000) rows from STREAMS threads into a collection created and
# loaded with ragdbeval's IVF_FLAT index (nlist = 4 x sqrt(SIZE), L2, strong consistency,
# 1 shard), then `flush` and the wait until the index has every row and the collection is
# loaded: the index build. ragdbeval with the same BATCH.
#
BATCH=${BATCH:-10000}

milvus_setup() {
  DISTANCE=euclidean
  # pymilvus in its own virtualenv: the project's .venv holds milvus-lite, whose Python
  # package set must not change under it; 2.5 is the client release of the 2.5 server.
  mvenv="${XDG_CACHE_HOME:-$HOME/.cache}/ragdbeval/pymilvus-venv"
  if ! "$mvenv/bin/python" -c "import pymilvus, numpy" 2>/dev/null; then
    python3 -m venv "$mvenv"
    "$mvenv/bin/pip" install -q --disable-pip-version-check 'pymilvus>=2.5,<2.6' numpy
  fi
  bench_args=(--build-param consistency=strong)
  echo "== milvus at $url; IVF_FLAT nlist = 4 x sqrt(n), L2, strong consistency, 1 shard;" \
    "$STREAMS streams of $BATCH-row inserts; pymilvus $("$mvenv/bin/python" -c 'import pymilvus; print(pymilvus.__version__)')"
  cat >"$work/milvus_native.py" <<'PY'
import math, sys, threading, time
import numpy as np
from pymilvus import Collection, CollectionSchema, DataType, FieldSchema, connections, utility
from pymilvus.client.types import IndexState

url, base, streams, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
n, d = np.fromfile(base, dtype="<i4", count=2)
x = np.fromfile(base, dtype="<f4", offset=8).reshape(n, d)
connections.connect(uri=url, timeout=600)
if utility.has_collection("native_load"):
    utility.drop_collection("native_load")
schema = CollectionSchema([FieldSchema("id", DataType.INT64, is_primary=True),
                           FieldSchema("vector", DataType.FLOAT_VECTOR, dim=int(d))])
coll = Collection("native_load", schema, shards_num=1, consistency_level="Strong")
nlist = max(1, min(65536, round(4 * math.sqrt(n))))
coll.create_index("vector", {"index_type": "IVF_FLAT", "metric_type": "L2",
                             "params": {"nlist": nlist}}, index_name="vector")
coll.load()
# Column batches built before the clock starts, as lists pymilvus sends without conversion.
batches = [[list(range(lo, min(n, lo + batch))), x[lo:lo + batch]]
           for lo in range(0, n, batch)]
cursor = iter(batches)
lock = threading.Lock()
errors = []
def worker():
    while not errors:
        with lock:
            b = next(cursor, None)
        if b is None:
            return
        try:
            coll.insert(b)
        except BaseException as e:
            errors.append(e)
threads = [threading.Thread(target=worker) for _ in range(streams)]
t0 = time.perf_counter()
for t in threads:
    t.start()
for t in threads:
    t.join()
t1 = time.perf_counter()
if errors:
    raise SystemExit(f"milvus insert: {errors[0]}")
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
t2 = time.perf_counter()
if count != n:
    raise SystemExit(f"native load: {count} rows, not {n}")
utility.drop_collection("native_load")
print(f"{t1 - t0:.3f} {t2 - t1:.3f}")
PY
}

milvus_encode() { cp "$1" "$2/base.fbin"; }

milvus_native() { # N round
  local times
  times=$("$mvenv/bin/python" "$work/milvus_native.py" "$url" "$work/native-$1/base.fbin" "$STREAMS" "$BATCH")
  record native "$1" "$2" "${times% *}" "${times#* }"
}
