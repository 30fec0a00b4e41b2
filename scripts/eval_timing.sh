#!/usr/bin/env bash
# Times `ragdbeval eval` against pytrec_eval (trec_eval's C code behind Python, from PyPI into
# the project's .venv) on the same files: a TREC run of Q queries × R results (default
# 20,000 × 100, about 64 MB) and graded qrels (J judgments per query, default 30). Whole
# processes, parsing included on both sides: pytrec_eval reads the files with its own
# parse_qrel/parse_run, computes the measures `eval` prints by default (P, recall, NDCG and
# MAP cut at 1,3,5,10,20, success, reciprocal rank, R-precision) and writes the per-query
# values as JSON, as `eval --json` does. RUNS rounds (default 3), the two interleaved and in
# alternating order; each round prints its ratio. Target: ragdbeval / pytrec_eval ≤ 0.125.
#
#   ./scripts/eval_timing.sh
#   Q=100000 RUNS=5 ./scripts/eval_timing.sh
set -euo pipefail
Q=${Q:-20000}
R=${R:-100}
J=${J:-30}
RUNS=${RUNS:-3}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin=${RAGDBEVAL_BIN:-$("$here/ragdbeval" --version >/dev/null && echo "${CARGO_TARGET_DIR:-$HOME/.cache/ragdbeval/target}/release/ragdbeval")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work" "$Q" "$R" "$J" <<'PY'
import random, sys
work, q, r, j = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(1)
with open(f"{work}/qrels.txt", "w") as qrels, open(f"{work}/run.trec", "w") as run:
    for i in range(q):
        qid = f"q{i}"
        judged = rng.sample(range(1_000_000), j)
        qrels.writelines(f"{qid} 0 d{d} {rng.choice((0, 1, 2, 3))}\n" for d in judged)
        docs = rng.sample(judged, j // 2) + rng.sample(range(1_000_000), r - j // 2)
        docs = list(dict.fromkeys(docs))[:r]
        run.writelines(f"{qid} Q0 d{d} {k + 1} {1.0 - k / r:.6f} run\n"
                       for k, d in enumerate(docs))
PY
echo "run: $(du -m "$work/run.trec" | cut -f1) MB, $(wc -l < "$work/run.trec") lines; qrels: $(wc -l < "$work/qrels.txt") lines"
# The generated files written out before the first round: neither side's time should include
# the writeback of 80 MB it did not write (ragdbeval's fsync of its output would wait for it).
sync
source "$here/servers/common.sh"
servers_venv 'pytrec_eval-terrier>=0.5'
cat > "$work/pytrec.py" <<'PY'
import json, sys
import pytrec_eval
work = sys.argv[1]
with open(f"{work}/qrels.txt") as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(f"{work}/run.trec") as f:
    run = pytrec_eval.parse_run(f)
cut = "1,3,5,10,20"
measures = {f"{m}.{cut}" for m in ("P", "recall", "ndcg_cut", "map_cut", "success")}
evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures | {"recip_rank", "Rprec"})
with open(f"{work}/pytrec.json", "w") as f:
    json.dump(evaluator.evaluate(run), f)
PY

seconds() { # runs "$@", prints its wall time in seconds
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null
  end=$(date +%s.%N)
  python3 -c "print(f'{$end - $start:.3f}')"
}
ours() { "$bin" eval --qrels "$work/qrels.txt" --run "$work/run.trec" --json "$work/eval.json"; }
theirs() { "$RAGDBEVAL_VENV/bin/python" "$work/pytrec.py" "$work"; }
ratios=()
for i in $(seq "$RUNS"); do
  if [ $((i % 2)) -eq 1 ]; then a=$(seconds ours); b=$(seconds theirs)
  else b=$(seconds theirs); a=$(seconds ours); fi
  r=$(python3 -c "print(f'{$a / $b:.3f}')")
  ratios+=("$r")
  echo "round $i: ragdbeval $a s, pytrec_eval $b s: ragdbeval / pytrec_eval = $r"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}')
echo "median of $RUNS rounds: ragdbeval / pytrec_eval = $median ($Q queries × $R results, $(nproc) cores)"
