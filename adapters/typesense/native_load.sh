# typesense's native bulk path for scripts/load_vs_native.sh, which sources this file, calls
# typesense_setup and runs native_load.py beside it (see the script's header).
#
# Pre-encoded `documents/import?action=create` bodies (JSON lines of `{"id", "ragdbeval_vector"}`,
# as Typesense's own clients send an import) of BATCH documents, STREAMS sent at once over
# keep-alive connections, into a collection with one cosine vector field; ragdbeval with
# `--batch-size` the same. Typesense indexes every document into its HNSW graph (M = 16,
# ef_construction = 200, fixed) inside the import call: the index build is part of the load.
BATCH=${BATCH:-}

typesense_setup() {
  DISTANCE=angular
  local state=${RAGDBEVAL_SERVER_DIR:-/tmp/ragdbeval-servers}/typesense
  [ -n "$started" ] && state="$work/servers/typesense"
  TYPESENSE_API_KEY=${TYPESENSE_API_KEY:-$(cat "$state/api_key")}
  export TYPESENSE_API_KEY
  bench_args=(--api-key-env TYPESENSE_API_KEY)
  echo "== typesense at $url; HNSW M = 16, ef_construction = 200 (fixed); $STREAMS connections;" \
    "batches of ${BATCH:-size / STREAMS + 1} documents"
}
