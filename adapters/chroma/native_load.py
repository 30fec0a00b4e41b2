"""Chroma's native bulk path (see native_load.sh): `add` bodies of ids and base64 embeddings,
as Chroma's own client sends them, into a collection with ragdbeval's HNSW configuration."""
import base64
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../scripts"))
import native_load as lib  # noqa: E402

COLLECTIONS = "/api/v2/tenants/default_tenant/databases/default_database/collections"


def call(conn, method, path, body=None):
    data = lib.http_call(conn, method, path, body, what="chroma")
    return json.loads(data) if data else None


def body(x, lo, hi):
    return json.dumps({
        "ids": [str(i) for i in range(lo, hi)],
        "embeddings": [base64.b64encode(x[i].tobytes()).decode() for i in range(lo, hi)],
    }).encode()


def load(url, blobs, streams, n, dim):
    connect = lib.http_connector(url, 600)
    admin = connect()
    try:
        call(admin, "DELETE", f"{COLLECTIONS}/native_load")
    except SystemExit:
        pass
    hnsw = {"space": "l2", "ef_search": 100, "max_neighbors": 16, "ef_construction": 100}
    coll = call(admin, "POST", COLLECTIONS, json.dumps(
        {"name": "native_load", "configuration": {"hnsw": hnsw}}).encode())["id"]
    path = f"{COLLECTIONS}/{coll}/add"
    elapsed = lib.send_all(blobs, streams, connect,
                           lambda c, blob: call(c, "POST", path, blob), "chroma add")
    count = call(admin, "GET", f"{COLLECTIONS}/{coll}/count")
    if count != n:
        raise SystemExit(f"native load: {count} points, not {n}")
    call(admin, "DELETE", f"{COLLECTIONS}/native_load")
    return f"{elapsed:.3f} 0"


lib.main(body, load)
