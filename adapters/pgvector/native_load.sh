# pgvector's native bulk path for scripts/load_vs_native.sh, which sources this file and calls
# pgvector_setup, pgvector_encode BASE.fbin OUT-DIR, pgvector_native N ROUND and, where defined,
# pgvector_warmup N (the names it defines are the script's to use; see its header).
#
# psql's `\copy ... (FORMAT binary)` of files, one per stream, into `id bigint
# PRIMARY KEY, embedding vector(D)`; then one session runs `CREATE INDEX ... USING hnsw`
# (m = 16, ef_construction = 64) and `ANALYZE` with maintenance_work_mem = MWM (default 2GB,
# the 1M x 128 graph never spills) and max_parallel_maintenance_workers = WORKERS (default 1:
# one worker beside the leader on 2 cores). One untimed native COPY and a CHECKPOINT come
# before the first round, so no round pays for creating the WAL segments. ragdbeval sends
# one COPY per stream (`--batch-size SIZE/STREAMS`); its index build is CREATE INDEX,
# ANALYZE, the row count and the plan check.
BATCH=${BATCH:-}

pgvector_setup() {
  DISTANCE=euclidean
  psql="$("$here/servers/pgvector.sh" bindir)/psql"
  settings="SET statement_timeout = 0; SET maintenance_work_mem = '$MWM'; SET max_parallel_maintenance_workers = $WORKERS;"
  bench_args=(--build-param m=16 --build-param ef_construction=64
    --build-param "maintenance_work_mem=$MWM" --build-param "parallel_workers=$WORKERS")
  echo "== pgvector at ${url%%@*}@…; HNSW m = 16, ef_construction = 64;" \
    "maintenance_work_mem = $MWM, max_parallel_maintenance_workers = $WORKERS"
  echo "server: $(sql -At -c "SELECT string_agg(name || '=' || setting || coalesce(unit, ''), ', ' ORDER BY name) FROM pg_settings WHERE name IN ('shared_buffers', 'max_wal_size', 'synchronous_commit', 'fsync', 'wal_level', 'max_worker_processes', 'max_parallel_workers')")"
}
sql() { PGOPTIONS="-c client_min_messages=warning" "$psql" "$url" -X -q -v ON_ERROR_STOP=1 "$@"; }

# PostgreSQL's binary COPY format of rows (id bigint, embedding vector): one file per stream.
pgvector_encode() { # base.fbin out-dir
  "$py" - "$1" "$2" "$STREAMS" <<'PY'
import sys
import numpy as np
base, out, streams = sys.argv[1], sys.argv[2], int(sys.argv[3])
n, d = np.fromfile(base, dtype="<i4", count=2)
x = np.fromfile(base, dtype="<f4", offset=8).reshape(n, d)
row = np.dtype([("fields", ">i2"), ("id_len", ">i4"), ("id", ">i8"), ("vec_len", ">i4"),
                ("dim", ">i2"), ("unused", ">i2"), ("values", ">f4", (d,))])
for s in range(streams):
    lo, hi = n * s // streams, n * (s + 1) // streams
    rows = np.zeros(hi - lo, dtype=row)
    rows["fields"], rows["id_len"], rows["vec_len"], rows["dim"] = 2, 8, 4 + 4 * d, d
    rows["id"] = np.arange(lo, hi)
    rows["values"] = x[lo:hi]
    with open(f"{out}/part-{s}.bin", "wb") as f:
        f.write(b"PGCOPY\n\xff\r\n\0" + b"\0" * 8)
        rows.tofile(f)
        f.write(b"\xff\xff")
PY
}

# One untimed COPY before the rounds: the first load after the server's start writes new WAL
# segments, the later ones recycle them; neither side should be the one that pays for it.
pgvector_warmup() { # N
  sql -c "CREATE TABLE native_warmup (id bigint PRIMARY KEY, embedding vector($D) NOT NULL)"
  for part in "$work/native-$1"/part-*.bin; do
    sql -c "\\copy native_warmup (id, embedding) FROM '$part' (FORMAT binary)" &
  done
  wait
  sql -c "DROP TABLE native_warmup; CHECKPOINT"
}

pgvector_native() { # N round
  local n=$1 t0 t1 t2 count
  sql -c "DROP TABLE IF EXISTS native_load; CREATE TABLE native_load (id bigint PRIMARY KEY, embedding vector($D) NOT NULL)"
  t0=$(now)
  for part in "$work/native-$n"/part-*.bin; do
    sql -c "\\copy native_load (id, embedding) FROM '$part' (FORMAT binary)" &
  done
  wait
  t1=$(now)
  sql -c "$settings CREATE INDEX native_load_idx ON native_load USING hnsw (embedding vector_l2_ops) WITH (m = 16, ef_construction = 64); ANALYZE native_load"
  t2=$(now)
  count=$(sql -At -c "SELECT count(*) FROM native_load")
  [ "$count" = "$n" ] || { echo "native load: $count rows, not $n" >&2; exit 1; }
  sql -c "DROP TABLE native_load"
  record native "$n" "$2" "$t1 - $t0" "$t2 - $t1"
}
