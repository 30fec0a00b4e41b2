#!/usr/bin/env bash
# ragdbeval's build phase (vectors into the engine, then the index) against the engine's
# fastest native bulk path, on one server and the same data, the two sides alternating
# (A B B A ...). Prints every run's load and index-build seconds, then per size the ratio
# native time / ragdbeval time of the load and of the index build (1.0: as fast as native;
# the target is >= 0.95), and the server settings both sides ran with.
#
#   ./scripts/load_vs_native.sh ENGINE      # an engine whose folder has native_load.sh
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
# The native side of each engine, what it sends and how its settings match ragdbeval's, is
# adapters/<module>/native_load.sh (its header says): this script sources it and calls
# ENGINE_setup, ENGINE_encode BASE.fbin OUT-DIR, ENGINE_native N ROUND and ENGINE_warmup N
# where it defines them. An engine with a native_load.py beside it (its requests encoded by
# scripts/native_load.py's `encode`, sent by its `load`) needs to define only ENGINE_setup.
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
case "$engine" in -h | --help) usage ;; esac
native="$here/../adapters/${engine//-/_}/native_load.sh"
if [ ! -f "$native" ]; then
  known=$(cd "$here/../adapters" && ls -d */native_load.sh 2>/dev/null | cut -d/ -f1 | tr _ - | paste -sd, -)
  echo "load_vs_native.sh: no native bulk path for \`$engine\` (adapters/*/native_load.sh: $known)" >&2
  exit 2
fi

source "$here/env.sh"
source "$here/servers/common.sh"
# The build with the engine's cargo feature.
bin=${RAGDBEVAL_BIN:-$(RAGDBEVAL_FEATURES=$(python3 "$here/engines.py" feature "$engine") "$here/ragdbeval" --version >/dev/null && echo "${CARGO_TARGET_DIR:-$HOME/.cache/ragdbeval/target}/release/ragdbeval")}
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

# The engine's native side: ${engine}_setup, _encode, _native and maybe _warmup; _encode and
# _native default to its native_load.py.
native_py="${native%.sh}.py"
py_encode() { # base.fbin out-dir
  "$py" "$native_py" encode "$1" "$2/requests.bin" "$STREAMS" ${BATCH:+"$BATCH"}
}
py_native() { # N round
  local seconds
  seconds=$("$py" "$native_py" load "$url" "$work/native-$1/requests.bin" "$STREAMS" "$1" "$D")
  record native "$1" "$2" "${seconds% *}" "${seconds#* }"
}
source "$native"
encode=${engine}_encode native_run=${engine}_native
declare -F "$encode" >/dev/null || encode=py_encode
declare -F "$native_run" >/dev/null || native_run=py_native

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
  "$encode" "$work/data-$n/base.fbin" "$work/native-$n"
  if declare -F "${engine}_warmup" >/dev/null; then "${engine}_warmup" "$n"; fi
  for round in $(seq 1 "$ROUNDS"); do
    if [ $((round % 2)) -eq 1 ]; then ragdbeval_side "$n" "$round"; "$native_run" "$n" "$round"
    else "$native_run" "$n" "$round"; ragdbeval_side "$n" "$round"; fi
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
