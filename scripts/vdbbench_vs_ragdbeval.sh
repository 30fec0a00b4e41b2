#!/usr/bin/env bash
# ragdbeval against VectorDBBench 2.x on one Milvus server: the same data, the same IVF_FLAT
# collection settings (nlist, nprobe, L2, k), 1 and 2 clients, the two tools never searching
# at the same time.
#
# Makes a clustered N × D float32 set with Q queries and its exact top-100 (ragdbeval
# `dataset convert --to vdbbench`: train/test/neighbors.parquet), which both tools read.
# VectorDBBench runs its PerformanceCustomDataset case on that directory with
# `milvusivfflat --lists NLIST --probes NPROBE`: its concurrent search (one process per
# client, DURATION seconds) gives the QPS, its serial search (every query once) the recall.
# ragdbeval runs `bench --db milvus --runbook build-search --concurrency C --duration
# DURATION` with nlist/nprobe set alike: the closed-loop level gives the QPS, the
# single-client pass over every query the recall. A round runs, per client count, one run
# of each tool, ragdbeval first in odd rounds and VectorDBBench first in even ones (A B,
# B A, ...: a machine that drifts slows both alike); ROUNDS rounds. Prints every run, then
# per client count the median QPS of each tool, both recalls, the ratio ragdbeval /
# VectorDBBench (median of the rounds' ratios and their spread) and the time a query takes
# per client (clients / QPS) for each tool.
#
#   ./scripts/vdbbench_vs_ragdbeval.sh                          # ~10 minutes
#   ROUNDS=2 DURATION=20 ./scripts/vdbbench_vs_ragdbeval.sh
#   MILVUS_URL=http://127.0.0.1:19530 ./scripts/vdbbench_vs_ragdbeval.sh
#   RAGDBEVAL_BIN=/path/to/ragdbeval ./scripts/vdbbench_vs_ragdbeval.sh
#
# Without MILVUS_URL the script starts the milvus-lite 2.5.1 server of
# scripts/servers/milvus.sh on 127.0.0.1 (state under a temporary directory) and stops it at
# the end. Each tool loads its own collection: ragdbeval builds, searches and drops its own
# in every run; VectorDBBench's (`vdbbench_ivf_flat`) is loaded once, before the rounds,
# and its runs skip the load (`--skip-drop-old --skip-load`).
#
# What milvus-lite needs from the VectorDBBench side, and why:
#   - its Milvus client indexes the scalar `id` field with STL_SORT, an index type
#     milvus-lite refuses, so the collection is created here with VectorDBBench's schema
#     (INT64 `pk`, INT64 `id`, FLOAT_VECTOR `vector`), its Session consistency, the same
#     IVF_FLAT vector index and without that scalar index, and loaded with 1,000-row inserts;
#   - milvus-lite leaves `primary_field_name` empty in its search results, so pymilvus keys
#     each hit `id` rather than `pk`, where VectorDBBench reads it: VectorDBBench runs
#     through a launcher that fills in `pk` before pymilvus parses a result (one string
#     assignment per search; spawned search processes run the launcher's module too).
# milvus-lite keeps a collection in one growing segment and answers through the server's
# interim index, whatever nlist and nprobe the collection and the search give (recall
# 0.9484 at nprobe 4 and 64 on the default data): the figures compare the two clients on
# one server-side search, not IVF settings. milvus-lite also runs one search at a time (a
# process-wide mutex around every collection operation), so a second client gains only the
# client's own share of a query's time: the leaner the client, the less it gains. The
# server's CPU time per query is the same for both tools (1.3-1.6 ms on the default data,
# from ragdbeval's `--server-pid` and /proc/PID/stat sampled beside VectorDBBench): what
# differs is the time each client adds between one answer and its next request.
set -euo pipefail
N=${N:-100000}
D=${D:-128}
Q=${Q:-1000}
CLUSTERS=${CLUSTERS:-2048}
K=${K:-10}
NLIST=${NLIST:-1024}
NPROBE=${NPROBE:-32}
DURATION=${DURATION:-30}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-1 2}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work=$(mktemp -d)
started_server=""
cleanup() {
  if [ -n "$started_server" ]; then
    RAGDBEVAL_SERVER_DIR="$work/servers" "$here/servers/milvus.sh" stop || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# VectorDBBench (and the pymilvus it brings) lives in its own virtualenv under the cache: the
# project's .venv holds milvus-lite, whose pymilvus must not change under it.
venv="${RAGDBEVAL_VDBBENCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ragdbeval/vdbbench-venv}"
VDBBENCH_VERSION=${VDBBENCH_VERSION:-2.0.0}
# (Imported from the work directory: importing vectordb_bench creates logs/ in the current one.)
if ! (cd "$work" && "$venv/bin/python" -c "import vectordb_bench, pymilvus, pyarrow") 2>/dev/null \
  || [ "$("$venv/bin/python" -m pip show vectordb-bench 2>/dev/null | awk '/^Version:/ {print $2}')" != "$VDBBENCH_VERSION" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "vectordb-bench==$VDBBENCH_VERSION"
fi
py="$venv/bin/python"
# RAGDBEVAL_BIN: time an already-built binary (e.g. a copy, while the shared target dir is rebuilt).
# The build with Milvus's cargo feature.
bin=${RAGDBEVAL_BIN:-$(RAGDBEVAL_FEATURES="milvus${RAGDBEVAL_FEATURES:+,$RAGDBEVAL_FEATURES}" "$here/ragdbeval" --version >/dev/null && echo "${CARGO_TARGET_DIR:-$HOME/.cache/ragdbeval/target}/release/ragdbeval")}

if [ -n "${MILVUS_URL:-}" ]; then
  url=$MILVUS_URL
else
  url=$(RAGDBEVAL_SERVER_DIR="$work/servers" "$here/servers/milvus.sh" start)
  started_server=1
fi
echo "== Milvus at $url; ragdbeval $("$bin" --version | awk '{print $2}'), vectordb-bench $VDBBENCH_VERSION"

data="$work/data"
"$bin" dataset convert --dataset "gen:clustered:n=$N,dim=$D,queries=$Q,clusters=$CLUSTERS,distance=euclidean" \
  --to vdbbench -k 100 --out "$data" -q

cat >"$work/load_vdbbench.py" <<'PY'
# VectorDBBench's Milvus collection as its client makes it, less the STL_SORT index on `id`.
import sys, time
import numpy as np, pyarrow.parquet as pq
from pymilvus import DataType, MilvusClient

uri, data, name, nlist = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
train = pq.read_table(f"{data}/train.parquet")
ids = train.column("id").to_numpy()
emb = np.stack(train.column("emb").to_numpy(zero_copy_only=False)).astype(np.float32)
client = MilvusClient(uri=uri, timeout=60)
if client.has_collection(name):
    client.drop_collection(name)
schema = MilvusClient.create_schema()
schema.add_field("pk", DataType.INT64, is_primary=True)
schema.add_field("id", DataType.INT64)
schema.add_field("vector", DataType.FLOAT_VECTOR, dim=emb.shape[1])
index = MilvusClient.prepare_index_params()
index.add_index(field_name="vector", index_name="vector_idx", index_type="IVF_FLAT",
                metric_type="L2", params={"nlist": nlist})
client.create_collection(collection_name=name, schema=schema, num_shards=1,
                         consistency_level="Session")
client.create_index(name, index)
client.load_collection(name)
start = time.perf_counter()
for i in range(0, len(ids), 1000):
    client.insert(name, [{"pk": int(a), "id": int(a), "vector": v}
                         for a, v in zip(ids[i:i + 1000], emb[i:i + 1000].tolist())])
client.flush(name)
print(f"VectorDBBench collection {name}: {len(ids)} x {emb.shape[1]} loaded in "
      f"{time.perf_counter() - start:.1f} s")
PY

cat >"$work/vdbbench_lite.py" <<'PY'
# vectordbbench's command line, with the primary key's name filled into search results that
# milvus-lite sends without it. At module level, so that the search processes VectorDBBench
# spawns (which import this file as their main module) have it too.
from pymilvus.client.search_result import SearchResult

_parse = SearchResult._parse_search_result_data


def _parse_with_pk_name(self, res, round_decimal):
    if not res.primary_field_name:
        res.primary_field_name = "pk"
    return _parse(self, res, round_decimal)


SearchResult._parse_search_result_data = _parse_with_pk_name

if __name__ == "__main__":
    import sys
    from vectordb_bench.cli.vectordbbench import cli
    sys.exit(cli())
PY

coll=vdbbench_ivf_flat
"$py" "$work/load_vdbbench.py" "$url" "$data" "$coll" "$NLIST"

rows="$work/rows.txt"
: >"$rows"
run_ragdbeval() {
  local round=$1 c=$2 out="$work/rag-$1-$2.json"
  # Session consistency, as VectorDBBench's collection has (milvus-lite searches at the
  # current time whatever the level).
  # Its warnings (milvus-lite reports no indexed row counts, so a full scan cannot be ruled
  # out) go to a file, shown only when the run fails.
  if ! "$bin" bench --db milvus --url "$url" --dataset "$data" --distance euclidean \
    --runbook build-search --build-param "nlist=$NLIST" --build-param consistency=session \
    --search-param "nprobe=$NPROBE" -k "$K" --concurrency "$c" --duration "${DURATION}s" \
    --recreate --no-sidecar --json >"$out" 2>"$out.err"; then
    cat "$out.err" >&2
    exit 1
  fi
  python3 - "$out" "$round" "$c" >>"$rows" <<'PY'
import json, sys
path, rnd, c = sys.argv[1], sys.argv[2], int(sys.argv[3])
doc = json.load(open(path))
step = [s for s in doc["configs"][0]["steps"] if s.get("phase") == "search"][-1]
level = [l for l in step["load"] if l["concurrency"] == c][0]
assert level["errors"] == 0, f"ragdbeval: {level['errors']} failed searches"
cpu_us = level["sender_cpu_ms"] * 1000 / level["completed"]
print(f"ragdbeval {c} {rnd} {level['qps']:.1f} {step['quality']['recall']:.4f} {cpu_us:.0f}")
PY
  tail -n 1 "$rows"
}
run_vdbbench() {
  local round=$1 c=$2 label="vdb-$1-$2"
  # From the work directory: VectorDBBench reads a `.env` of the current directory and
  # writes its log under it.
  (cd "$work" && RESULTS_LOCAL_DIR="$work/vdb-results" LOG_FILE="$work/vdb-logs/$label.log" \
    "$py" "$work/vdbbench_lite.py" milvusivfflat --uri "$url" --collection-name "$coll" \
    --case-type PerformanceCustomDataset --custom-case-name ragdbeval-data \
    --custom-dataset-name ragdbeval-data --custom-dataset-dir "$data" \
    --custom-dataset-size "$N" --custom-dataset-dim "$D" --custom-dataset-metric-type L2 \
    --custom-dataset-file-count 1 --custom-dataset-with-gt --skip-custom-dataset-use-shuffled \
    --lists "$NLIST" --probes "$NPROBE" --k "$K" \
    --num-concurrency "$c" --concurrency-duration "$DURATION" \
    --skip-drop-old --skip-load --db-label ragdbeval-peer --task-label "$label" \
    >"$work/$label.out" 2>&1)
  # A failed search is logged and skipped by VectorDBBench, not counted: none may occur.
  if grep -q "search_embedding error\|search error\|Traceback" "$work/$label.out"; then
    echo "VectorDBBench run $label had search errors:" >&2
    grep -m 5 "error\|Error" "$work/$label.out" >&2
    exit 1
  fi
  python3 - "$work/vdb-results" "$label" "$round" "$c" >>"$rows" <<'PY'
import glob, json, sys
results, label, rnd, c = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
(path,) = glob.glob(f"{results}/**/*_{label}_*.json", recursive=True)
m = json.load(open(path))["results"][0]["metrics"]
qps = dict(zip(m["conc_num_list"], m["conc_qps_list"]))[c]
assert qps > 0 and m["recall"] > 0, f"VectorDBBench {label}: no result"
print(f"VectorDBBench {c} {rnd} {qps:.1f} {m['recall']:.4f} -")
PY
  tail -n 1 "$rows"
}

echo "== $ROUNDS round(s); clustered $N × $D, $Q queries, L2, k = $K; IVF_FLAT nlist = $NLIST," \
  "nprobe = $NPROBE; ${DURATION} s per measurement"
echo "tool clients round QPS recall@$K client-CPU-µs/query"
for round in $(seq 1 "$ROUNDS"); do
  for c in $CLIENTS; do
    if [ $((round % 2)) -eq 1 ]; then
      run_ragdbeval "$round" "$c"
      run_vdbbench "$round" "$c"
    else
      run_vdbbench "$round" "$c"
      run_ragdbeval "$round" "$c"
    fi
  done
done

python3 - "$rows" "$K" <<'PY'
import statistics, sys
from collections import defaultdict
rows, k = sys.argv[1], sys.argv[2]
qps, recall = defaultdict(dict), defaultdict(list)
for line in open(rows):
    tool, c, rnd, q, r, _ = line.split()
    qps[(tool, int(c))][int(rnd)] = float(q)
    recall[(tool, int(c))].append(float(r))
print()
print(f"{'tool':14s} {'clients':>7s} {'QPS (median)':>12s} {'recall@' + k:>10s}   rounds")
for (tool, c), by_round in sorted(qps.items(), key=lambda x: (x[0][1], x[0][0] != "ragdbeval")):
    rec = recall[(tool, c)]
    rec_s = f"{min(rec):.4f}" if min(rec) == max(rec) else f"{min(rec):.4f}-{max(rec):.4f}"
    print(f"{tool:14s} {c:7d} {statistics.median(by_round.values()):12.1f} {rec_s:>10s}   "
          + ", ".join(f"{v:.1f}" for _, v in sorted(by_round.items())))
print()
for c in sorted({c for _, c in qps}):
    a, b = qps[("ragdbeval", c)], qps[("VectorDBBench", c)]
    ratios = [a[r] / b[r] for r in sorted(a) if r in b]
    m = statistics.median(ratios)
    spread = max(abs(x / m - 1) for x in ratios) * 100
    print(f"ratio ragdbeval / VectorDBBench, {c} client(s): {m:.3f} (rounds "
          + ", ".join(f"{x:.3f}" for x in ratios) + f"; spread ±{spread:.1f} %)")
    # Each client waits for one answer at a time: clients / QPS is the time a query takes
    # from one send to the next, client and server together.
    ta, tb = (c * 1000 / statistics.median(x.values()) for x in (a, b))
    print(f"  time per query and client: ragdbeval {ta:.3f} ms, VectorDBBench {tb:.3f} ms"
          f" (difference {tb - ta:+.3f} ms)")
PY
