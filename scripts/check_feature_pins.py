#!/usr/bin/env python3
"""Every crate the build without server engines compiles is compiled the same way (same
features) by the full build, so switching between the two rebuilds no shared crate, and
qdrant-edge is compiled once. `scripts/ragdbeval` builds the first without the server engines
and the second when a command names one; Cargo.toml's feature pins keep the two aligned.
Exit 1, naming each crate and the features that differ, when a pin is missing.

Run from the repository root with the toolchain scripts/env.sh picks (scripts/test.sh does).
"""

import pathlib
import re
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import engines  # noqa: E402  (scripts/engines.py: the engines, read from their folders)

MINIMAL = ["--no-default-features", "--features", "qdrant-edge"]
# The server engines' features beside it, as scripts/ragdbeval builds them for `--db`.
SERVERS = sorted({t["feature"] for t in engines.engines().values() if "server" in t and "feature" in t})
FULL = ["--no-default-features", "--features", ",".join(["qdrant-edge", *SERVERS])]
LINE = re.compile(r"(\S+) (v\S+)(?: \(.*?\))? \[(.*)\]")


def units(extra):
    """(crate, version) -> set of feature lists, for the host target, build and normal deps."""
    host = subprocess.run(
        ["rustc", "-vV"], check=True, capture_output=True, text=True
    ).stdout
    triple = re.search(r"^host: (\S+)", host, re.M).group(1)
    tree = subprocess.run(
        ["cargo", "tree", "-e", "normal,build", "--target", triple,
         "--prefix", "none", "-f", "{p} [{f}]", *extra],
        capture_output=True, text=True,
    )
    if tree.returncode != 0:
        sys.exit(f"check_feature_pins: cargo tree {' '.join(extra)} failed: {tree.stderr.strip()}")
    out = tree.stdout
    found = {}
    for line in out.splitlines():
        m = LINE.match(line.replace(" (*)", "").strip())
        if m and m.group(1) != "ragdbeval":
            found.setdefault((m.group(1), m.group(2)), set()).add(m.group(3))
    return found


def main():
    minimal, full = units(MINIMAL), units(FULL)
    differ = [
        (name, version, sorted(feats - full[(name, version)]))
        for (name, version), feats in sorted(minimal.items())
        if (name, version) in full and not feats <= full[(name, version)]
    ]
    for name, version, feats in differ:
        print(
            f"check_feature_pins: {name} {version} is built with features {feats} without the "
            f"server engines but not with them: pin the full build's features in Cargo.toml",
            file=sys.stderr,
        )
    if not differ:
        print(f"check_feature_pins: {len(minimal)} crates built alike with and without the servers")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
