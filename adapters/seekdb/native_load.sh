# seekdb's native bulk path for scripts/load_vs_native.sh, which sources this file, calls
# seekdb_setup and runs native_load.py beside it (see the script's header).
#
# Pre-encoded multi-row `INSERT` statements of BATCH rows (default 500), the vectors in
# seekdb's text form, as a MySQL application sends a bulk load (a text `INSERT` of many rows
# was faster here than `LOAD DATA LOCAL INFILE`: 0.85 s against 1.44 s for 20,000 x 128),
# STREAMS sent at once through PyMySQL connections, into a plain table; then the same
# `CREATE VECTOR INDEX` as ragdbeval's default set (HNSW, l2, m = 16, ef_construction = 200)
# as the index build. ragdbeval with `--batch-size` the same BATCH.
BATCH=${BATCH:-500}

seekdb_setup() {
  DISTANCE=euclidean
  servers_venv PyMySQL
  bench_args=()
  echo "== seekdb at $url; HNSW l2, m = 16, ef_construction = 200, built after the load;" \
    "$STREAMS connections; INSERTs of $BATCH rows"
}
