#!/usr/bin/env bash
# ragdbeval's build phase (vectors into the engine, then the index) against the engine's
# fastest native bulk path, on one server and the same data, the two sides alternating
# (A B B A ...). Prints every run's load and index-build seconds, then per size the ratio
# native time / ragdbeval time of the load and of the index build (1.0: as fast as native;
# the target is >= 0.95), and the server settings both sides ran with.
#
#   ./scripts/load_vs_native.sh pgvector
#   SIZES=100000 ROUNDS=2 ./scripts/load_vs_native.sh pgvector
#   PGVECTOR_URL=postgres://user@127.0.0.1:5432/db ./scripts/load_vs_native.sh pgvector
#   RAGDBEVAL_BIN=/path/to/ragdbeval ./scripts/load_vs_native.sh pgvector
#
# pgvector: the native path is what PostgreSQL's own client offers for a bulk load: psql's
# `\copy ... (FORMAT binary)` of files encoded beforehand (outside the timing), STREAMS
# sessions at once over equal id ranges, into `id bigint PRIMARY KEY, embedding vector(D)`;
# then one session runs `CREATE INDEX ... USING hnsw` (m = 16, ef_construction = 64,
# pgvector's defaults) and `ANALYZE` with maintenance_work_mem = MWM and
# max_parallel_maintenance_workers = WORKERS. ragdbeval runs `bench --db pgvector --runbook
# build-search` with the same streams (`--upload-parallel STREAMS`, one COPY per stream:
# `--batch-size N/STREAMS`) and build parameters; its load is the build step's `insert_s`
# (encoding included) and its index build `ready_wait_s` (CREATE INDEX, ANALYZE, the row
# count and the plan check). Settings: MWM (default 2GB) holds the 1M x 128 graph, so the
# build never spills; WORKERS (default 1) is one worker beside the leader on 2 cores.
#
# Without PGVECTOR_URL the server of scripts/servers/pgvector.sh runs for the script's
# length (state under a temporary directory).
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
case "$1" in
  -h | --help) usage ;;
  pgvector) ;;
  *)
    echo "load_vs_native.sh: unknown engine \`$1\` (pgvector)" >&2
    exit 2
    ;;
esac

source "$here/env.sh"
source "$here/servers/common.sh"
bin=${RAGDBEVAL_BIN:-$("$here/ragdbeval" --version >/dev/null && echo "${CARGO_TARGET_DIR:-$HOME/.cache/ragdbeval/target}/release/ragdbeval")}
work=$(mktemp -d)
started=""
cleanup() {
  if [ -n "$started" ]; then
    RAGDBEVAL_SERVER_DIR="$work/servers" "$here/servers/pgvector.sh" stop >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${PGVECTOR_URL:-}" ]; then
  url=$PGVECTOR_URL
else
  url=$(RAGDBEVAL_SERVER_DIR="$work/servers" "$here/servers/pgvector.sh" start)
  started=1
fi
psql="$("$here/servers/pgvector.sh" bindir)/psql"
sql() { "$psql" "$url" -X -q -v ON_ERROR_STOP=1 "$@"; }
servers_venv numpy
py="$RAGDBEVAL_VENV/bin/python"
now() { date +%s.%N; }

# PostgreSQL's binary COPY format of rows (id bigint, embedding vector): one file per stream,
# each over an equal contiguous range of ids, as ragdbeval splits its COPY.
cat >"$work/encode.py" <<'PY'
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

settings="SET statement_timeout = 0; SET maintenance_work_mem = '$MWM'; SET max_parallel_maintenance_workers = $WORKERS;"
rows="$work/rows.txt"
: >"$rows"

native() { # N round
  local n=$1 round=$2 t0 t1 t2
  sql -c "DROP TABLE IF EXISTS native_load; CREATE TABLE native_load (id bigint PRIMARY KEY, embedding vector($D) NOT NULL)"
  t0=$(now)
  for part in "$work/copy-$n"/part-*.bin; do
    sql -c "\\copy native_load (id, embedding) FROM '$part' (FORMAT binary)" &
  done
  wait
  t1=$(now)
  sql -c "$settings CREATE INDEX native_load_idx ON native_load USING hnsw (embedding vector_l2_ops) WITH (m = 16, ef_construction = 64); ANALYZE native_load"
  t2=$(now)
  local count
  count=$(sql -At -c "SELECT count(*) FROM native_load")
  [ "$count" = "$n" ] || { echo "native load: $count rows, not $n" >&2; exit 1; }
  sql -c "DROP TABLE native_load"
  python3 -c "print(f'native $n $round {$t1 - $t0:.3f} {$t2 - $t1:.3f} -')" | tee -a "$rows"
}

ragdbeval() { # N round
  local n=$1 round=$2 out="$work/rag-$1-$2.json"
  if ! "$bin" bench --db pgvector --url "$url" --dataset "$(spec "$n")" --runbook build-search \
    --build-param m=16 --build-param ef_construction=64 --build-param "maintenance_work_mem=$MWM" \
    --build-param "parallel_workers=$WORKERS" --upload-parallel "$STREAMS" \
    --batch-size $((n / STREAMS + 1)) --recreate --no-sidecar -q --json >"$out" 2>"$out.err"; then
    cat "$out.err" >&2
    exit 1
  fi
  python3 - "$out" "$n" "$round" <<'PY' | tee -a "$rows"
import json, sys
path, n, rnd = sys.argv[1], int(sys.argv[2]), sys.argv[3]
build = [s for s in json.load(open(path))["configs"][0]["steps"] if s["phase"] == "build"][0]
assert build["points"] == n, f"ragdbeval built {build['points']} points, not {n}"
details = build["index"]["details"]
print(f"ragdbeval {n} {rnd} {build['insert_s']:.3f} {build['ready_wait_s']:.3f} "
      f"{details.get('index_build_s', float('nan')):.3f}")
PY
}

spec() { echo "gen:clustered:n=$1,dim=$D,queries=100,distance=euclidean"; }

echo "== pgvector at ${url%%@*}@…; ragdbeval $("$bin" --version | awk '{print $2}'); $STREAMS streams;" \
  "HNSW m = 16, ef_construction = 64; maintenance_work_mem = $MWM, max_parallel_maintenance_workers = $WORKERS"
echo "server: $(sql -At -c "SELECT string_agg(name || '=' || setting || coalesce(unit, ''), ', ' ORDER BY name) FROM pg_settings WHERE name IN ('shared_buffers', 'max_wal_size', 'synchronous_commit', 'fsync', 'wal_level', 'max_worker_processes', 'max_parallel_workers')")"
for n in $SIZES; do
  "$bin" dataset convert --dataset "$(spec "$n")" --to fbin --out "$work/data-$n" -q
  mkdir "$work/copy-$n"
  "$py" "$work/encode.py" "$work/data-$n/base.fbin" "$work/copy-$n" "$STREAMS"
  echo "== $n × $D: side size load-s index-s (ragdbeval: CREATE INDEX alone)"
  for round in $(seq 1 "$ROUNDS"); do
    if [ $((round % 2)) -eq 1 ]; then ragdbeval "$n" "$round"; native "$n" "$round"
    else native "$n" "$round"; ragdbeval "$n" "$round"; fi
  done
  rm -rf "$work/copy-$n" "$work/data-$n"
done

python3 - "$rows" <<'PY'
import statistics, sys
from collections import defaultdict
runs = defaultdict(dict)
for line in open(sys.argv[1]):
    side, n, rnd, load, index, _ = line.split()
    runs[(side, int(n))][int(rnd)] = (float(load), float(index))
print()
for n in sorted({n for _, n in runs}):
    ours, theirs = runs[("ragdbeval", n)], runs[("native", n)]
    for what, i in (("load", 0), ("index build", 1)):
        ratios = [theirs[r][i] / ours[r][i] for r in sorted(ours) if r in theirs]
        print(f"{n} x {what}: native / ragdbeval = {statistics.median(ratios):.3f} (rounds "
              + ", ".join(f"{x:.3f}" for x in ratios) + "); median s: ragdbeval "
              f"{statistics.median(v[i] for v in ours.values()):.2f}, native "
              f"{statistics.median(v[i] for v in theirs.values()):.2f}")
PY
