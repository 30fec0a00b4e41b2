#!/usr/bin/env bash
# Times `ragdbeval eval` on a TREC run of Q queries × R results (default 20,000 × 100, about
# 60 MB) against graded qrels (J judgments per query, default 30), whole process, parsing
# included: the best of RUNS (default 3) wall-clock times. Target: under 1 s.
#
#   ./scripts/eval_timing.sh
#   Q=100000 ./scripts/eval_timing.sh
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
best=
for i in $(seq "$RUNS"); do
  start=$(date +%s.%N)
  "$bin" eval --qrels "$work/qrels.txt" --run "$work/run.trec" --json "$work/eval.json" > /dev/null
  end=$(date +%s.%N)
  t=$(python3 -c "print(f'{$end - $start:.3f}')")
  echo "run $i: $t s"
  best=$(python3 -c "print(min(float('$t'), float('${best:-inf}')))")
done
echo "best of $RUNS: $best s (ragdbeval eval, $Q queries × $R results, 2 threads: $(nproc) cores)"
