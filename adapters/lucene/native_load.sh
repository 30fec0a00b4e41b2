# lucene's native bulk path for scripts/load_vs_native.sh, which sources this file and calls
# lucene_setup, lucene_encode BASE.fbin OUT-DIR and lucene_native N ROUND (the names it defines
# are the script's to use; see its header).
#
# LuceneServer's WRITE requests (ids and float32 vectors, no attributes) of BATCH points framed
# before the clock starts, STREAMS connections at once, then READY: the force merge to one
# segment and the commit, as the `default` set's build ends. ragdbeval with `--batch-size` the
# same. Lucene builds each segment's HNSW graph (m = 16, ef_construction = 100) as documents
# are indexed, so most of the index build is in the load; the merge rebuilds one graph when
# the writer flushed several segments.
BATCH=${BATCH:-}

lucene_setup() {
  DISTANCE=euclidean
  bench_args=()
  lucene_client
  echo "== lucene at $url; HNSW m = 16, ef_construction = 100, merged to one segment; $STREAMS" \
    "connections; batches of ${BATCH:-size / STREAMS + 1} points"
}

lucene_client() { # the native side's loop, shared by encode and load
  cat >"$work/lucene_native.py" <<'PY'
import socket, struct, sys, threading, time
import numpy as np

NAME = b"native_load"

def frame(op, payload):
    return struct.pack("<BI", op, len(payload)) + payload

def name():
    return struct.pack("<H", len(NAME)) + NAME

def call(s, data):
    s.sendall(data)
    head = b""
    while len(head) < 5:
        head += s.recv(5 - len(head))
    status, n = struct.unpack("<BI", head)
    body = b""
    while len(body) < n:
        body += s.recv(n - len(body))
    if status:
        raise SystemExit(f"lucene: {body.decode()}")
    return body

def encode(base, out, batch):
    n, d = np.fromfile(base, dtype="<i4", count=2)
    x = np.fromfile(base, dtype="<f4", offset=8).reshape(n, d)
    with open(out, "wb") as f:
        for lo in range(0, n, batch):
            hi = min(n, lo + batch)
            rows = np.empty(hi - lo, dtype=[("id", "<u8"), ("v", "<f4", (d,))])
            rows["id"] = np.arange(lo, hi)
            rows["v"] = x[lo:hi]
            blob = frame(3, name() + struct.pack("<BI", 0, hi - lo) + rows.tobytes())
            f.write(len(blob).to_bytes(8, "little") + blob)

def load(url, frames, streams, n, dim):
    host, port = url.removeprefix("lucene://").rsplit(":", 1)
    conn = lambda: socket.create_connection((host, int(port)))
    admin = conn()
    # Euclidean, float vectors, m 16, ef_construction 100, RAM buffer 1024 MB, recreate.
    create = name() + struct.pack("<BBIIIIB", 0, 0, dim, 16, 100, 1024, 1) + struct.pack("<H", 0)
    call(admin, frame(2, create))
    blobs = []
    with open(frames, "rb") as f:
        while head := f.read(8):
            blobs.append(f.read(int.from_bytes(head, "little")))
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
                call(c, blobs[i])
            except BaseException as e:
                errors.append(e)
    threads = [threading.Thread(target=worker) for _ in range(streams)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    loaded = time.perf_counter()
    if errors:
        raise SystemExit(f"lucene write: {errors[0]}")
    documents, _ = struct.unpack("<QI", call(admin, frame(5, name() + struct.pack("<I", 1))))
    ready = time.perf_counter()
    if documents != n:
        raise SystemExit(f"native load: {documents} documents, not {n}")
    call(admin, frame(8, name()))
    print(f"{loaded - start:.3f} {ready - loaded:.3f}")

if sys.argv[1] == "encode":
    encode(sys.argv[2], sys.argv[3], int(sys.argv[4]))
else:
    load(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
PY
}

lucene_encode() { # base.fbin out-dir
  local n
  n=$("$py" -c 'import numpy as np, sys; print(np.fromfile(sys.argv[1], dtype="<i4", count=1)[0])' "$1")
  "$py" "$work/lucene_native.py" encode "$1" "$2/frames.bin" "${BATCH:-$((n / STREAMS + 1))}"
}

lucene_native() { # N round
  local seconds
  seconds=$("$py" "$work/lucene_native.py" load "$url" "$work/native-$1/frames.bin" "$STREAMS" "$1" "$D")
  record native "$1" "$2" ${seconds% *} ${seconds#* }
}
