#!/usr/bin/env bash
# Recall against hnsw_ef for the embedded Qdrant engine on a generated clustered dataset
# (default 100k × 128, 1000 queries), plus `exact=true`, which must equal the `exact` engine
# (1.000). Prints the table and checks that recall does not fall as hnsw_ef grows (within
# 0.005 of noise).
#
#   ./scripts/qdrant_edge_ef_sweep.sh
#   DATASET=gen:clustered:n=200000,dim=128,queries=1000,seed=3 ./scripts/qdrant_edge_ef_sweep.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DATASET=${DATASET:-gen:clustered:n=100000,dim=128,queries=1000,seed=3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$here/ragdbeval" bench --db qdrant-edge --dataset "$DATASET" --runbook build-search \
  --set ef-sweep --out "$out" --name sweep -q
"$here/ragdbeval" bench --db qdrant-edge --dataset "$DATASET" --runbook build-search \
  --set exact --out "$out" --name exact -q --warmup 0

python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
sweep = json.load(open(f"{out}/sweep.json"))
exact = json.load(open(f"{out}/exact.json"))
rows = [s for s in sweep["configs"][0]["steps"] if s["phase"] == "search"]
build = sweep["configs"][0]["steps"][0]
print(f"dataset {sweep['dataset']['name']}: {sweep['dataset']['train']} x {sweep['dataset']['dim']}, "
      f"{sweep['dataset']['queries']} queries; build {build['total_s']:.1f} s, "
      f"indexed {build['index']['indexed_vectors']}/{build['index']['points']}, "
      f"may_full_scan={build['index']['may_full_scan']}")
print(f"{'hnsw_ef':>8} {'recall@10':>10} {'QPS':>8} {'p99 ms':>8}")
prev, ok = -1.0, True
for s in rows:
    r = s["quality"]["recall"]
    print(f"{s['search_params']['hnsw_ef']:>8} {r:>10.4f} {s['qps']:>8.0f} {s['latency']['p99_ms']:>8.3f}")
    if r + 0.005 < prev:
        ok = False
    prev = max(prev, r)
e = [s for s in exact["configs"][0]["steps"] if s["phase"] == "search"][0]
print(f"{'exact':>8} {e['quality']['recall']:>10.4f} {e['qps']:>8.0f} {e['latency']['p99_ms']:>8.3f}")
for c in sweep.get("curves", []):
    print("QPS at recall >=", ", ".join(f"{t}: {q:.0f}" if q else f"{t}: -" for t, q in c["qps_at_recall"]))
if not ok:
    sys.exit("FAIL: recall fell as hnsw_ef grew")
if e["quality"]["recall"] != 1.0:
    sys.exit("FAIL: exact=true did not give recall 1.000")
print("PASS")
PY
