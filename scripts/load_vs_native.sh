#!/usr/bin/env bash
# ragdbeval's build phase (vectors into the engine, then the index) against the engine's
# fastest native bulk path, on one server and the same data, the two sides alternating
# (A B B A ...). Prints every run's load and index-build seconds, then per size the ratio
# native time / ragdbeval time of the load and of the index build (1.0: as fast as native;
# the target is >= 0.95), and the server settings both sides ran with.
#
#   ./scripts/load_vs_native.sh pgvector|redis|chroma|milvus
#   SIZES=100000 ROUNDS=2 ./scripts/load_vs_native.sh redis
#   PGVECTOR_URL=postgres://user@127.0.0.1:5432/db ./scripts/load_vs_native.sh pgvector
#   RAGDBEVAL_BIN=/path/to/ragdbeval ./scripts/load_vs_native.sh chroma
#
# Both sides load a clustered SIZE x D float32 set (`ragdbeval dataset convert`), STREAMS
# connections at once over equal shares of the rows, with the build settings of the engine's
# `default` set; each side drops what it made when it is done (ragdbeval when it closes the
# engine). ragdbeval runs `bench --db ENGINE --runbook build-search --upload-parallel
# STREAMS`: its load is the build step's `insert_s` (encoding included), its index build
# `ready_wait_s`. The native side's requests are encoded before its clock starts.
#
# pgvector: psql's `\copy ... (FORMAT binary)` of files, one per stream, into `id bigint
#   PRIMARY KEY, embedding vector(D)`; then one session runs `CREATE INDEX ... USING hnsw`
#   (m = 16, ef_construction = 64) and `ANALYZE` with maintenance_work_mem = MWM (default 2GB,
#   the 1M x 128 graph never spills) and max_parallel_maintenance_workers = WORKERS (default 1:
#   one worker beside the leader on 2 cores). One untimed native COPY and a CHECKPOINT come
#   before the first round, so no round pays for creating the WAL segments. ragdbeval sends
#   one COPY per stream (`--batch-size SIZE/STREAMS`); its index build is CREATE INDEX,
#   ANALYZE, the row count and the plan check.
# redis: `redis-cli --pipe` (Debian's redis-tools, installed when missing), one per stream,
#   each sending a file of `VADD key FP32 <blob> <id> Q8 EF 200 M 16` in the Redis protocol
#   as fast as the server takes it; ragdbeval pipelines BATCH (default 1000) VADDs per round
#   trip on each connection. Vector sets build the graph inside VADD: the index build is part
#   of the load, and ragdbeval's index wait is its element count check. Angular data (vector
#   sets rank by cosine). Without CAS on both sides: VADD's CAS option, which moves the
#   neighbour search to a thread, took twice as long on 100k x 128 from 2 connections.
# chroma: pre-encoded `add` bodies (ids, base64 embeddings, as Chroma's own client sends
#   them) of the server's max_batch_size points, STREAMS sent at once over keep-alive
#   connections, into a collection with ragdbeval's HNSW configuration (m = 16,
#   ef_construction = 100, ef_search = 100); ragdbeval with `--batch-size` the same maximum.
#   Single-node Chroma adds to the graph inside `add`: the index build is part of the load.
# milvus: pymilvus (2.5, its own virtualenv under the cache) inserting pre-built column
#   batches of BATCH (default 10000) rows from STREAMS threads into a collection created and
#   loaded with ragdbeval's IVF_FLAT index (nlist = 4 x sqrt(SIZE), L2, strong consistency,
#   1 shard), then `flush` and the wait until the index has every row and the collection is
#   loaded: the index build. ragdbeval with the same BATCH.
#
# Without ENGINE_URL (PGVECTOR_URL, REDIS_URL, CHROMA_URL, MILVUS_URL) the server of
# scripts/servers/ENGINE.sh runs for the script's length (state under a temporary directory).
set -euo pipefail
SIZES=${SIZES:-100000 1000000}
D=${D:-128}
ROUNDS=${ROUNDS:-2}
STREAMS=${STREAMS:-2}
MWM=${MWM:-2GB}
WORKERS=${WORKERS:-1}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 2
}
[ $# -eq 1 ] || usage
engine=$1
case "$engine" in
  -h | --help) usage ;;
  pgvector) BATCH=${BATCH:-} ;;
  redis) BATCH=${BATCH:-1000} ;;
  chroma) BATCH=${BATCH:-} ;;
  milvus) BATCH=${BATCH:-10000} ;;
  *)
    echo "load_vs_native.sh: unknown engine \`$engine\` (pgvector, redis, chroma, milvus)" >&2
    exit 2
    ;;
esac

source "$here/env.sh"
source "$here/servers/common.sh"
# The full build: the server engines are cargo features scripts/ragdbeval adds for `--db`.
bin=${RAGDBEVAL_BIN:-$(RAGDBEVAL_FEATURES="default${RAGDBEVAL_FEATURES:+,$RAGDBEVAL_FEATURES}" "$here/ragdbeval" --version >/dev/null && echo "${CARGO_TARGET_DIR:-$HOME/.cache/ragdbeval/target}/release/ragdbeval")}
work=$(mktemp -d)
started=""
cleanup() {
  if [ -n "$started" ]; then
    RAGDBEVAL_SERVER_DIR="$work/servers" "$here/servers/$engine.sh" stop >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

url_var="${engine^^}_URL"
if [ -n "${!url_var:-}" ]; then
  url=${!url_var}
else
  url=$(RAGDBEVAL_SERVER_DIR="$work/servers" "$here/servers/$engine.sh" start)
  started=1
fi
servers_venv numpy
py="$RAGDBEVAL_VENV/bin/python"
now() { date +%s.%N; }
rows="$work/rows.txt"
: >"$rows"
# One measured run: "side size round load-s index-s".
record() { python3 -c "print(f'$1 $2 $3 {$4:.3f} {$5:.3f}')" | tee -a "$rows"; }

# ---- pgvector ------------------------------------------------------------------------------
pgvector_setup() {
  DISTANCE=euclidean
  psql="$("$here/servers/pgvector.sh" bindir)/psql"
  settings="SET statement_timeout = 0; SET maintenance_work_mem = '$MWM'; SET max_parallel_maintenance_workers = $WORKERS;"
  bench_args=(--build-param m=16 --build-param ef_construction=64
    --build-param "maintenance_work_mem=$MWM" --build-param "parallel_workers=$WORKERS")
  echo "== pgvector at ${url%%@*}@…; HNSW m = 16, ef_construction = 64;" \
    "maintenance_work_mem = $MWM, max_parallel_maintenance_workers = $WORKERS"
  echo "server: $(sql -At -c "SELECT string_agg(name || '=' || setting || coalesce(unit, ''), ', ' ORDER BY name) FROM pg_settings WHERE name IN ('shared_buffers', 'max_wal_size', 'synchronous_commit', 'fsync', 'wal_level', 'max_worker_processes', 'max_parallel_workers')")"
}
sql() { PGOPTIONS="-c client_min_messages=warning" "$psql" "$url" -X -q -v ON_ERROR_STOP=1 "$@"; }

# PostgreSQL's binary COPY format of rows (id bigint, embedding vector): one file per stream.
pgvector_encode() { # base.fbin out-dir
  "$py" - "$1" "$2" "$STREAMS" <<'PY'
import sys
import numpy as np
base, out, streams = sys.argv[1], sys.argv[2], int(sys.argv[3])
n, d = np.fromfile(base, dtype="<i4", count=2)
x = np.fromfile(base, dtype="<f4", offset=8).reshape(n, d)
row = np.dtype([("fields", ">i2"), ("id_len", ">i4"), ("id", ">i8"), ("vec_len", ">i4"),
                ("dim", ">i2"), ("unused", ">i2"), ("values", ">f4", (d,))])
for s in range(streams):
    lo, hi = n * s // streams, n * (s + 1) // streams
    rows = np.zeros(hi - lo, dtype=row)
    rows["fields"], rows["id_len"], rows["vec_len"], rows["dim"] = 2, 8, 4 + 4 * d, d
    rows["id"] = np.arange(lo, hi)
    rows["values"] = x[lo:hi]
    with open(f"{out}/part-{s}.bin", "wb") as f:
        f.write(b"PGCOPY\n\xff\r\n\0" + b"\0" * 8)
        rows.tofile(f)
        f.write(b"\xff\xff")
PY
}

# One untimed COPY before the rounds: the first load after the server's start writes new WAL
# segments, the later ones recycle them; neither side should be the one that pays for it.
pgvector_warmup() { # N
  sql -c "CREATE TABLE native_warmup (id bigint PRIMARY KEY, embedding vector($D) NOT NULL)"
  for part in "$work/native-$1"/part-*.bin; do
    sql -c "\\copy native_warmup (id, embedding) FROM '$part' (FORMAT binary)" &
  done
  wait
  sql -c "DROP TABLE native_warmup; CHECKPOINT"
}

pgvector_native() { # N round
  local n=$1 t0 t1 t2 count
  sql -c "DROP TABLE IF EXISTS native_load; CREATE TABLE native_load (id bigint PRIMARY KEY, embedding vector($D) NOT NULL)"
  t0=$(now)
  for part in "$work/native-$n"/part-*.bin; do
    sql -c "\\copy native_load (id, embedding) FROM '$part' (FORMAT binary)" &
  done
  wait
  t1=$(now)
  sql -c "$settings CREATE INDEX native_load_idx ON native_load USING hnsw (embedding vector_l2_ops) WITH (m = 16, ef_construction = 64); ANALYZE native_load"
  t2=$(now)
  count=$(sql -At -c "SELECT count(*) FROM native_load")
  [ "$count" = "$n" ] || { echo "native load: $count rows, not $n" >&2; exit 1; }
  sql -c "DROP TABLE native_load"
  record native "$n" "$2" "$t1 - $t0" "$t2 - $t1"
}

# ---- redis ---------------------------------------------------------------------------------
redis_setup() {
  DISTANCE=angular
  command -v redis-cli >/dev/null || {
    echo "load_vs_native.sh: installing redis-tools (redis-cli) with apt-get" >&2
    apt-get install -y -qq redis-tools >&2
  }
  bench_args=()
  echo "== redis at $url; vector set Q8, M 16, EF 200; $STREAMS connections; redis-cli $(redis-cli --version | awk '{print $2}')"
}
rcli() { redis-cli -u "$url" "$@"; }

# One file per stream of `VADD native_load FP32 <blob> <id> Q8 EF 200 M 16` in RESP.
redis_encode() { # base.fbin out-dir
  "$py" - "$1" "$2" "$STREAMS" <<'PY'
import sys
import numpy as np
base, out, streams = sys.argv[1], sys.argv[2], int(sys.argv[3])
n, d = np.fromfile(base, dtype="<i4", count=2)
x = np.fromfile(base, dtype="<f4", offset=8).reshape(n, d)
def bulk(b):
    return b"$%d\r\n%s\r\n" % (len(b), b)
head = b"*10\r\n" + bulk(b"VADD") + bulk(b"native_load") + bulk(b"FP32")
tail = b"".join(bulk(a) for a in (b"Q8", b"EF", b"200", b"M", b"16"))
for s in range(streams):
    lo, hi = n * s // streams, n * (s + 1) // streams
    with open(f"{out}/part-{s}.resp", "wb") as f:
        f.writelines(head + bulk(x[i].tobytes()) + bulk(str(i).encode()) + tail
                     for i in range(lo, hi))
PY
}

redis_native() { # N round
  local n=$1 t0 t1 count out
  rcli DEL native_load >/dev/null
  t0=$(now)
  for part in "$work/native-$n"/part-*.resp; do
    rcli --pipe <"$part" >"$part.out" 2>&1 &
  done
  wait
  t1=$(now)
  for out in "$work/native-$n"/part-*.resp.out; do
    grep -q "errors: 0," "$out" || { echo "redis-cli --pipe:" >&2; cat "$out" >&2; exit 1; }
  done
  count=$(rcli VCARD native_load)
  [ "$count" = "$n" ] || { echo "native load: $count elements, not $n" >&2; exit 1; }
  rcli DEL native_load >/dev/null
  record native "$n" "$2" "$t1 - $t0" 0
}

# ---- chroma --------------------------------------------------------------------------------
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

# ---- milvus --------------------------------------------------------------------------------
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

# ---- ragdbeval and the rounds --------------------------------------------------------------
ragdbeval_side() { # N round
  local n=$1 round=$2 out="$work/rag-$1-$2.json" batch=${BATCH:-$(($1 / STREAMS + 1))}
  if ! "$bin" bench --db "$engine" --url "$url" --dataset "$(spec "$n")" --runbook build-search \
    "${bench_args[@]}" --upload-parallel "$STREAMS" --batch-size "$batch" \
    --recreate --no-sidecar -q --json >"$out" 2>"$out.err"; then
    cat "$out.err" >&2
    exit 1
  fi
  python3 - "$out" "$n" "$round" <<'PY' | tee -a "$rows"
import json, sys
path, n, rnd = sys.argv[1], int(sys.argv[2]), sys.argv[3]
build = [s for s in json.load(open(path))["configs"][0]["steps"] if s["phase"] == "build"][0]
assert build["points"] == n, f"ragdbeval built {build['points']} points, not {n}"
print(f"ragdbeval {n} {rnd} {build['insert_s']:.3f} {build['ready_wait_s']:.3f}")
PY
}

spec() { echo "gen:clustered:n=$1,dim=$D,queries=100,distance=$DISTANCE"; }

"${engine}_setup"
echo "ragdbeval $("$bin" --version | awk '{print $2}'); side size round load-s index-s"
for n in $SIZES; do
  "$bin" dataset convert --dataset "$(spec "$n")" --to fbin --out "$work/data-$n" -q
  mkdir "$work/native-$n"
  "${engine}_encode" "$work/data-$n/base.fbin" "$work/native-$n"
  if declare -F "${engine}_warmup" >/dev/null; then "${engine}_warmup" "$n"; fi
  for round in $(seq 1 "$ROUNDS"); do
    if [ $((round % 2)) -eq 1 ]; then ragdbeval_side "$n" "$round"; "${engine}_native" "$n" "$round"
    else "${engine}_native" "$n" "$round"; ragdbeval_side "$n" "$round"; fi
  done
  rm -rf "$work/native-$n" "$work/data-$n"
done

python3 - "$rows" <<'PY'
import statistics, sys
from collections import defaultdict
runs = defaultdict(dict)
for line in open(sys.argv[1]):
    side, n, rnd, load, index = line.split()
    runs[(side, int(n))][int(rnd)] = (float(load), float(index))
print()
for n in sorted({n for _, n in runs}):
    ours, theirs = runs[("ragdbeval", n)], runs[("native", n)]
    for what, i in (("load", 0), ("index build", 1)):
        if all(v[i] == 0 for v in theirs.values()):
            print(f"{n} x {what}: none apart from the load (built inside each insert); "
                  f"ragdbeval's wait {statistics.median(v[i] for v in ours.values()):.3f} s")
            continue
        ratios = [theirs[r][i] / ours[r][i] for r in sorted(ours) if r in theirs]
        print(f"{n} x {what}: native / ragdbeval = {statistics.median(ratios):.3f} (rounds "
              + ", ".join(f"{x:.3f}" for x in ratios) + "); median s: ragdbeval "
              f"{statistics.median(v[i] for v in ours.values()):.3f}, native "
              f"{statistics.median(v[i] for v in theirs.values()):.3f}")
PY
