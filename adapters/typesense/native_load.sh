# typesense's native bulk path for scripts/load_vs_native.sh, which sources this file and calls
# typesense_setup, typesense_encode BASE.fbin OUT-DIR and typesense_native N ROUND (the names
# it defines are the script's to use; see its header).
#
# Pre-encoded `documents/import?action=create` bodies (JSON lines of `{"id", "ragdbeval_vector"}`,
# as Typesense's own clients send an import) of BATCH documents, STREAMS sent at once over
# keep-alive connections, into a collection with one cosine vector field; ragdbeval with
# `--batch-size` the same. Typesense indexes every document into its HNSW graph (M = 16,
# ef_construction = 200, fixed) inside the import call: the index build is part of the load.
BATCH=${BATCH:-}

typesense_setup() {
  DISTANCE=angular
  local state=${RAGDBEVAL_SERVER_DIR:-/tmp/ragdbeval-servers}/typesense
  [ -n "$started" ] && state="$work/servers/typesense"
  TYPESENSE_API_KEY=${TYPESENSE_API_KEY:-$(cat "$state/api_key")}
  export TYPESENSE_API_KEY
  bench_args=(--api-key-env TYPESENSE_API_KEY)
  typesense_client
  echo "== typesense at $url; HNSW M = 16, ef_construction = 200 (fixed); $STREAMS connections;" \
    "batches of ${BATCH:-size / STREAMS + 1} documents"
}

typesense_client() { # the native side's HTTP loop, shared by encode and load
  cat >"$work/typesense_native.py" <<'PY'
import http.client, json, os, sys, threading, time
from urllib.parse import urlparse
import numpy as np

KEY = os.environ["TYPESENSE_API_KEY"]

def call(conn, method, path, body=None):
    conn.request(method, path, body=body, headers={
        "Content-Type": "application/json", "X-TYPESENSE-API-KEY": KEY})
    r = conn.getresponse()
    data = r.read()
    if r.status >= 300:
        raise SystemExit(f"typesense {method} {path}: {r.status} {data[:300]!r}")
    return data

def encode(base, out, batch):
    n, d = np.fromfile(base, dtype="<i4", count=2)
    x = np.fromfile(base, dtype="<f4", offset=8).reshape(n, d)
    with open(out, "wb") as f:
        for lo in range(0, n, batch):
            hi = min(n, lo + batch)
            # str() of a float32 is its shortest text, as ragdbeval writes it.
            body = "\n".join(
                '{"id":"%d","ragdbeval_vector":[%s]}' % (i, ",".join(str(v) for v in x[i]))
                for i in range(lo, hi)).encode()
            f.write(len(body).to_bytes(8, "little") + body)

def load(url, bodies, streams, n, dim):
    u = urlparse(url)
    conn = lambda: http.client.HTTPConnection(u.hostname, u.port, timeout=3600)
    admin = conn()
    try:
        call(admin, "DELETE", "/collections/native_load")
    except SystemExit:
        pass
    call(admin, "POST", "/collections", json.dumps({"name": "native_load", "fields": [
        {"name": "ragdbeval_vector", "type": "float[]", "num_dim": dim}]}).encode())
    blobs = []
    with open(bodies, "rb") as f:
        while head := f.read(8):
            blobs.append(f.read(int.from_bytes(head, "little")))
    path = "/collections/native_load/documents/import?action=create"
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
                answer = call(c, "POST", path, blobs[i])
                if b'"success":false' in answer:
                    raise SystemExit(f"import refused documents: {answer[:300]!r}")
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
        raise SystemExit(f"typesense import: {errors[0]}")
    count = json.loads(call(admin, "GET", "/collections/native_load"))["num_documents"]
    if count != n:
        raise SystemExit(f"native load: {count} documents, not {n}")
    call(admin, "DELETE", "/collections/native_load")
    print(f"{elapsed:.3f}")

if sys.argv[1] == "encode":
    encode(sys.argv[2], sys.argv[3], int(sys.argv[4]))
else:
    load(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
PY
}

typesense_encode() { # base.fbin out-dir
  local n
  n=$("$py" -c 'import numpy as np, sys; print(np.fromfile(sys.argv[1], dtype="<i4", count=1)[0])' "$1")
  "$py" "$work/typesense_native.py" encode "$1" "$2/bodies.bin" "${BATCH:-$((n / STREAMS + 1))}"
}

typesense_native() { # N round
  local seconds
  seconds=$("$py" "$work/typesense_native.py" load "$url" "$work/native-$1/bodies.bin" "$STREAMS" "$1" "$D")
  record native "$1" "$2" "$seconds" 0
}
