# chroma's native bulk path for scripts/load_vs_native.sh, which sources this file, calls
# chroma_setup and runs native_load.py beside it (see the script's header).
#
# pre-encoded `add` bodies (ids, base64 embeddings, as Chroma's own client sends
# them) of the server's max_batch_size points, STREAMS sent at once over keep-alive
# connections, into a collection with ragdbeval's HNSW configuration (m = 16,
# ef_construction = 100, ef_search = 100); ragdbeval with `--batch-size` the same maximum.
# Single-node Chroma adds to the graph inside `add`: the index build is part of the load.
BATCH=${BATCH:-}

chroma_setup() {
  DISTANCE=euclidean
  local max
  max=$(python3 -c 'import json, sys, urllib.request as u; print(json.load(u.urlopen(sys.argv[1] + "/api/v2/pre-flight-checks"))["max_batch_size"])' "$url")
  BATCH=${BATCH:-$max}
  bench_args=()
  echo "== chroma at $url; HNSW m = 16, ef_construction = 100, ef_search = 100;" \
    "$STREAMS connections; batches of $BATCH (the server's max_batch_size: $max)"
}
