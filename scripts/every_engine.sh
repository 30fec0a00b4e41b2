# Sourced by the scripts that run one job on every engine `ragdbeval engines` lists (not run on
# its own). After `every_engine_start`:
#   bin      the ragdbeval binary (built by scripts/ragdbeval with every engine: the default
#            features, the server engines among them, and the in-process engines' features;
#            RAGDBEVAL_FEATURES overrides them, RAGDBEVAL_BIN names a binary instead)
#   work     a temporary directory, removed on exit with the servers started here
#   engines  the engines to run: the embedded ones, the servers this project's scripts start
#            (scripts/servers/<engine>.sh), and a server engine without a script when its
#            <ENGINE>_URL is set (qdrant: QDRANT_URL); the others are skipped, said on stderr
#   url      engine → server URL
# and `engine_args ENGINE` prints the arguments every run of ENGINE takes: --db, --url, and the
# conformance settings of its config.toml's [engine.conformance] (the highest value of its
# effort sweep, its extra search parameters), one per line.
every_engine_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
every_engine_root="$every_engine_here/.."
declare -A url
engines=()
started=()

every_engine_cleanup() {
  local s
  for s in "${started[@]}"; do "$every_engine_here/servers/$s.sh" stop >/dev/null 2>&1 || true; done
  rm -rf "$work"
}

every_engine_start() { # script name, for messages
  if [ -z "${RAGDBEVAL_BIN:-}" ]; then
    export RAGDBEVAL_FEATURES=${RAGDBEVAL_FEATURES:-$(python3 "$every_engine_here/engines.py" features)}
    local feature
    for feature in ${RAGDBEVAL_FEATURES//,/ }; do
      [ ! -x "$every_engine_here/install/$feature.sh" ] || "$every_engine_here/install/$feature.sh" >/dev/null
    done
  fi
  bin=${RAGDBEVAL_BIN:-$("$every_engine_here/ragdbeval" --version >/dev/null && echo "${CARGO_TARGET_DIR:-$HOME/.cache/ragdbeval/target}/release/ragdbeval")}
  work=$(mktemp -d)
  trap every_engine_cleanup EXIT
  local engine kind var
  while read -r engine kind _; do
    # The dense engines end at the blank line before the lexical list.
    [ -n "$engine" ] || break
    if [ "$kind" = "[server]" ]; then
      var=$(echo "${engine}_URL" | tr 'a-z-' 'A-Z_')
      if [ -n "${!var:-}" ]; then
        url[$engine]=${!var}
      elif [ -x "$every_engine_here/servers/$engine.sh" ]; then
        url[$engine]=$("$every_engine_here/servers/$engine.sh" start)
        started+=("$engine")
      else
        echo "$1: $engine skipped, $var is not set" >&2
        continue
      fi
    fi
    engines+=("$engine")
  done < <("$bin" engines | grep -v '^ ')
}

# A value of an engine's [engine] table (scripts/engines.py get).
every_engine_meta() { # engine, key
  python3 "$every_engine_here/engines.py" get "$1" "$2"
}

engine_args() { # engine
  local engine=$1 sweep extra
  printf '%s\n' --db "$engine"
  [ -z "${url[$engine]:-}" ] || printf '%s\n' --url "${url[$engine]}"
  sweep=$(every_engine_meta "$engine" effort_sweep)
  # The highest effort of the sweep: `hnsw_ef=8,32,128` gives hnsw_ef=128.
  [ -z "$sweep" ] || printf '%s\n' --search-param "${sweep%%=*}=${sweep##*,}"
  for extra in $(every_engine_meta "$engine" search_params); do
    printf '%s\n' --search-param "$extra"
  done
}
