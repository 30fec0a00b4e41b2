# milvus's native bulk path for scripts/load_vs_native.sh, which sources this file and calls
# milvus_setup, milvus_encode BASE.fbin OUT-DIR and milvus_native N ROUND; milvus_native runs
# native_load.py beside it with pymilvus (see the script's header).
#
# pymilvus (2.5, its own virtualenv under the cache) inserting pre-built column
# batches of BATCH (default 10000) rows from STREAMS threads into a collection created and
# loaded with ragdbeval's IVF_FLAT index (nlist = 4 x sqrt(SIZE), L2, strong consistency,
# 1 shard), then `flush` and the wait until the index has every row and the collection is
# loaded: the index build. ragdbeval with the same BATCH.
#
BATCH=${BATCH:-10000}

milvus_setup() {
  DISTANCE=euclidean
  # pymilvus in its own virtualenv: the project's .venv holds milvus-lite, whose Python
  # package set must not change under it; 2.5 is the client release of the 2.5 server.
  mvenv="${XDG_CACHE_HOME:-$HOME/.cache}/ragdbeval/pymilvus-venv"
  if ! "$mvenv/bin/python" -c "import pymilvus, numpy" 2>/dev/null; then
    python3 -m venv "$mvenv"
    "$mvenv/bin/pip" install -q --disable-pip-version-check 'pymilvus>=2.5,<2.6' numpy
  fi
  bench_args=(--build-param consistency=strong)
  echo "== milvus at $url; IVF_FLAT nlist = 4 x sqrt(n), L2, strong consistency, 1 shard;" \
    "$STREAMS streams of $BATCH-row inserts; pymilvus $("$mvenv/bin/python" -c 'import pymilvus; print(pymilvus.__version__)')"
}

milvus_encode() { cp "$1" "$2/base.fbin"; }

milvus_native() { # N round
  local times
  times=$("$mvenv/bin/python" "$native_py" "$url" "$work/native-$1/base.fbin" "$STREAMS" "$BATCH")
  record native "$1" "$2" "${times% *}" "${times#* }"
}
