# chroma's native bulk path for scripts/load_vs_native.sh, which sources this file and calls
# chroma_setup, chroma_encode BASE.fbin OUT-DIR, chroma_native N ROUND and, where defined,
# chroma_warmup N (the names it defines are the script's to use; see its header).
#
# pre-encoded `add` bodies (ids, base64 embeddings, as Chroma's own client sends
# them) of the server's max_batch_size points, STREAMS sent at once over keep-alive
# connections, into a collection with ragdbeval's HNSW configuration (m = 16,
# ef_construction = 100, ef_search = 100); ragdbeval with `--batch-size` the same maximum.
# Single-node Chroma adds to the graph inside `add`: the index build is part of the load.
BATCH=${BATCH:-}

chroma_setup() {
  DISTANCE=euclidean
  local max
  max=$(python3 -c 'import json, sys, urllib.request as u; print(json.load(u.urlopen(sys.argv[1] + "/api/v2/pre-flight-checks"))["max_batch_size"])' "$url")
  BATCH=${BATCH:-$max}
  bench_args=()
  chroma_client
  echo "== chroma at $url; HNSW m = 16, ef_construction = 100, ef_search = 100;" \
    "$STREAMS connections; batches of $BATCH (the server's max_batch_size: $max)"
}

chroma_client() { # client.py: the native side's HTTP loop, shared by encode and load
  cat >"$work/chroma_native.py" <<'PY'
import base64, http.client, json, sys, threading, time
from urllib.parse import urlparse
import numpy as np

COLLECTIONS = "/api/v2/tenants/default_tenant/databases/default_database/collections"

def call(conn, method, path, body=None):
    conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    if r.status >= 300:
        raise SystemExit(f"chroma {method} {path}: {r.status} {data[:300]!r}")
    return json.loads(data) if data else None

def encode(base, out, batch):
    n, d = np.fromfile(base, dtype="<i4", count=2)
    x = np.fromfile(base, dtype="<f4", offset=8).reshape(n, d)
    with open(out, "wb") as f:
        for lo in range(0, n, batch):
            hi = min(n, lo + batch)
            body = json.dumps({
                "ids": [str(i) for i in range(lo, hi)],
                "embeddings": [base64.b64encode(x[i].tobytes()).decode() for i in range(lo, hi)],
            }).encode()
            f.write(len(body).to_bytes(8, "little") + body)

def load(url, bodies, streams, n):
    u = urlparse(url)
    conn = lambda: http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    admin = conn()
    try:
        call(admin, "DELETE", f"{COLLECTIONS}/native_load")
    except SystemExit:
        pass
    hnsw = {"space": "l2", "ef_search": 100, "max_neighbors": 16, "ef_construction": 100}
    coll = call(admin, "POST", COLLECTIONS, json.dumps(
        {"name": "native_load", "configuration": {"hnsw": hnsw}}).encode())["id"]
    blobs = []
    with open(bodies, "rb") as f:
        while head := f.read(8):
            blobs.append(f.read(int.from_bytes(head, "little")))
    path = f"{COLLECTIONS}/{coll}/add"
    next_blob = iter(range(len(blobs)))
    lock = threading.Lock()
    errors = []
    def worker():
        c = conn()
        while True:
            with lock:
                i = next(next_blob, None)
            if i is None or errors:
                return
            try:
                call(c, "POST", path, blobs[i])
            except BaseException as e:
                errors.append(e)
    threads = [threading.Thread(target=worker) for _ in range(streams)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise SystemExit(f"chroma add: {errors[0]}")
    count = call(admin, "GET", f"{COLLECTIONS}/{coll}/count")
    if count != n:
        raise SystemExit(f"native load: {count} points, not {n}")
    call(admin, "DELETE", f"{COLLECTIONS}/native_load")
    print(f"{elapsed:.3f}")

if sys.argv[1] == "encode":
    encode(sys.argv[2], sys.argv[3], int(sys.argv[4]))
else:
    load(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
PY
}

chroma_encode() { # base.fbin out-dir
  "$py" "$work/chroma_native.py" encode "$1" "$2/bodies.bin" "$BATCH"
}

chroma_native() { # N round
  local seconds
  seconds=$("$py" "$work/chroma_native.py" load "$url" "$work/native-$1/bodies.bin" "$STREAMS" "$1")
  record native "$1" "$2" "$seconds" 0
}
