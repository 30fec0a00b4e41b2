#!/usr/bin/env bash
# `--db bm25` (tantivy) against Lucene's BM25 as Anserini runs it, on the same rows, queries
# and judgments: NDCG@10 of each, and how many of the top 10 each Anserini run shares with
# ours. Two Anserini runs:
#   matched   the same scoring as ours: k1 = 1.2, b = 0.75, no stemming, stopwords kept;
#   default   Anserini's own BM25 (Porter stemming, English stopwords, k1 = 0.9, b = 0.4),
#             the baseline of BEIR's tables.
# What is left between `matched` and ours is the analyzer (Lucene's StandardTokenizer splits
# by Unicode word rules, tantivy's default tokenizer at every non-alphanumeric character) and
# how each stores document lengths (Lucene and tantivy both keep one byte per document).
#
#   scripts/bm25_vs_anserini.sh [DATASET_DIR]
#
# DATASET_DIR is a dataset directory with texts/ and qrels.txt (what `ragdbeval embed --sparse
# bm25` writes); default datasets/cache/manpages/embedded, made with `ragdbeval dataset
# make-text manpages` when it is not there. Anserini comes from scripts/install/anserini.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
data="${1:-$root/datasets/cache/manpages/embedded}"
case "$data" in -h | --help)
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
  ;;
esac
export RAGDBEVAL_FEATURES="embed,bm25${RAGDBEVAL_FEATURES:+,$RAGDBEVAL_FEATURES}"
ragdbeval() { "$here/ragdbeval" "$@"; }
if [ ! -d "$data" ] && [ "$#" -eq 0 ]; then
  ragdbeval dataset make-text manpages --model "$("$here/install/minilm.sh")" >&2
fi
for f in texts/base.jsonl texts/queries.jsonl qrels.txt; do
  [ -f "$data/$f" ] || { echo "error: $data/$f is missing: the dataset needs texts and judgments (ragdbeval embed --sparse bm25)" >&2; exit 2; }
done
mapfile -t anserini < <("$here/install/anserini.sh")
java=${anserini[0]}
jar=${anserini[1]}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Anserini's JsonCollection: {"id", "contents"} per row, the id the row number as in our runs;
# topics as `qid TAB text`, the qid the query's index.
python3 - "$data" "$work" <<'PY'
import json, sys, os
data, work = sys.argv[1], sys.argv[2]
os.makedirs(f"{work}/rows")
with open(f"{data}/texts/base.jsonl") as f, open(f"{work}/rows/rows.jsonl", "w") as out:
    for line in f:
        row = json.loads(line)
        out.write(json.dumps({"id": row["_id"], "contents": row["text"]}) + "\n")
with open(f"{data}/texts/queries.jsonl") as f, open(f"{work}/topics.tsv", "w") as out:
    for line in f:
        q = json.loads(line)
        out.write(q["_id"] + "\t" + " ".join(q["text"].split()) + "\n")
PY

anserini_run() { # NAME INDEX-OPTIONS -- SEARCH-OPTIONS
  local name=$1
  shift
  local index_opts=() search_opts=()
  while [ "$1" != "--" ]; do index_opts+=("$1"); shift; done
  shift
  search_opts=("$@")
  "$java" -cp "$jar" io.anserini.index.IndexCollection -collection JsonCollection \
    -input "$work/rows" -index "$work/index-$name" -threads 2 "${index_opts[@]}" \
    >"$work/index-$name.log" 2>&1 || { tail -20 "$work/index-$name.log" >&2; exit 1; }
  "$java" -cp "$jar" io.anserini.search.SearchCollection -index "$work/index-$name" \
    -topics "$work/topics.tsv" -topicReader TsvString -hits 10 -threads 2 \
    -output "$work/$name.trec" "${search_opts[@]}" \
    >"$work/search-$name.log" 2>&1 || { tail -20 "$work/search-$name.log" >&2; exit 1; }
}
echo "anserini: matched (k1 1.2, b 0.75, no stemming, stopwords kept)" >&2
anserini_run matched -stemmer none -keepStopwords -- \
  -bm25 -bm25.k1 1.2 -bm25.b 0.75 -stemmer none -keepStopwords
echo "anserini: default (Porter, stopwords, k1 0.9, b 0.4)" >&2
anserini_run default -- -bm25

echo "ragdbeval: --db bm25" >&2
ragdbeval bench --db bm25 --retrieval sparse --dataset "$data" -k 10 --warmup 0 -q \
  --out "$work/results" --name bm25 --trec-run "$work/bm25.trec" >/dev/null

for run in bm25 matched default; do
  ragdbeval eval --qrels "$data/qrels.txt" --run "$work/$run.trec" -k 10 \
    --json "$work/$run.eval.json" --full-precision >/dev/null
done
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def top10(path):
    runs = {}
    for line in open(path):
        qid, _, doc, rank, score, _ = line.split()
        runs.setdefault(qid, []).append((int(rank), doc))
    return {q: [d for _, d in sorted(v)[:10]] for q, v in runs.items()}
def ndcg(name):
    return json.load(open(f"{work}/{name}.eval.json"))["aggregate"]["metrics"]["ndcg@10"]
ours = top10(f"{work}/bm25.trec")
print(f"{'run':<32} {'NDCG@10':>8} {'top-10 shared with --db bm25':>30} {'same top 1':>11}")
print(f"{'ragdbeval --db bm25 (tantivy)':<32} {ndcg('bm25'):>8.4f} {'':>30} {'':>11}")
for name, label in [("matched", "Anserini matched"), ("default", "Anserini default (BEIR)")]:
    theirs = top10(f"{work}/{name}.trec")
    queries = sorted(set(ours) | set(theirs))
    shared = [len(set(ours.get(q, [])) & set(theirs.get(q, []))) / max(len(ours.get(q, [])), len(theirs.get(q, [])), 1) for q in queries]
    first = [bool(ours.get(q)) and bool(theirs.get(q)) and ours[q][0] == theirs[q][0] for q in queries]
    print(f"{label:<32} {ndcg(name):>8.4f} {sum(shared)/len(shared):>30.4f} {sum(first)/len(first):>11.4f}")
print(f"{len(ours)} queries")
PY
