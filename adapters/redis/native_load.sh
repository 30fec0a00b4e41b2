# redis's native bulk path for scripts/load_vs_native.sh, which sources this file and calls
# redis_setup, redis_encode BASE.fbin OUT-DIR, redis_native N ROUND and, where defined,
# redis_warmup N (the names it defines are the script's to use; see its header).
#
# `redis-cli --pipe` (Debian's redis-tools, installed when missing), one per stream,
# each sending a file of `VADD key FP32 <blob> <id> Q8 EF 200 M 16` in the Redis protocol
# as fast as the server takes it; ragdbeval pipelines BATCH (default 1000) VADDs per round
# trip on each connection. Vector sets build the graph inside VADD: the index build is part
# of the load, and ragdbeval's index wait is its element count check. Angular data (vector
# sets rank by cosine). Without CAS on both sides: VADD's CAS option, which moves the
# neighbour search to a thread, took twice as long on 100k x 128 from 2 connections.
BATCH=${BATCH:-1000}

redis_setup() {
  DISTANCE=angular
  command -v redis-cli >/dev/null || {
    echo "load_vs_native.sh: installing redis-tools (redis-cli) with apt-get" >&2
    apt-get install -y -qq redis-tools >&2
  }
  bench_args=()
  echo "== redis at $url; vector set Q8, M 16, EF 200; $STREAMS connections; redis-cli $(redis-cli --version | awk '{print $2}')"
}
rcli() { redis-cli -u "$url" "$@"; }

# One file per stream of `VADD native_load FP32 <blob> <id> Q8 EF 200 M 16` in RESP.
redis_encode() { # base.fbin out-dir
  "$py" - "$1" "$2" "$STREAMS" <<'PY'
import sys
import numpy as np
base, out, streams = sys.argv[1], sys.argv[2], int(sys.argv[3])
n, d = np.fromfile(base, dtype="<i4", count=2)
x = np.fromfile(base, dtype="<f4", offset=8).reshape(n, d)
def bulk(b):
    return b"$%d\r\n%s\r\n" % (len(b), b)
head = b"*10\r\n" + bulk(b"VADD") + bulk(b"native_load") + bulk(b"FP32")
tail = b"".join(bulk(a) for a in (b"Q8", b"EF", b"200", b"M", b"16"))
for s in range(streams):
    lo, hi = n * s // streams, n * (s + 1) // streams
    with open(f"{out}/part-{s}.resp", "wb") as f:
        f.writelines(head + bulk(x[i].tobytes()) + bulk(str(i).encode()) + tail
                     for i in range(lo, hi))
PY
}

redis_native() { # N round
  local n=$1 t0 t1 count out
  rcli DEL native_load >/dev/null
  t0=$(now)
  for part in "$work/native-$n"/part-*.resp; do
    rcli --pipe <"$part" >"$part.out" 2>&1 &
  done
  wait
  t1=$(now)
  for out in "$work/native-$n"/part-*.resp.out; do
    grep -q "errors: 0," "$out" || { echo "redis-cli --pipe:" >&2; cat "$out" >&2; exit 1; }
  done
  count=$(rcli VCARD native_load)
  [ "$count" = "$n" ] || { echo "native load: $count elements, not $n" >&2; exit 1; }
  rcli DEL native_load >/dev/null
  record native "$n" "$2" "$t1 - $t0" 0
}
