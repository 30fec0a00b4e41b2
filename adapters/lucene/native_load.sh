# lucene's native bulk path for scripts/load_vs_native.sh, which sources this file, calls
# lucene_setup and runs native_load.py beside it (see the script's header).
#
# LuceneServer's WRITE requests (ids and float32 vectors, no attributes) of BATCH points framed
# before the clock starts, STREAMS connections at once, then READY: the force merge to one
# segment and the commit, as the `default` set's build ends. ragdbeval with `--batch-size` the
# same. Lucene builds each segment's HNSW graph (m = 16, ef_construction = 100) as documents
# are indexed, so most of the index build is in the load; the merge rebuilds one graph when
# the writer flushed several segments.
BATCH=${BATCH:-}

lucene_setup() {
  DISTANCE=euclidean
  bench_args=()
  echo "== lucene at $url; HNSW m = 16, ef_construction = 100, merged to one segment; $STREAMS" \
    "connections; batches of ${BATCH:-size / STREAMS + 1} points"
}
