#!/usr/bin/env python3
"""An engine is one folder: adapters/<module>/ with mod.rs and a config.toml whose [engine]
table declares it. Nothing outside the engine folders may list engines by hand; the build
(build.rs, build/engines.rs) and the scripts (scripts/engines.py) read the folders.

  scripts/check_engine_folder.py           the cheap checks (scripts/test.sh runs them)
  scripts/check_engine_folder.py --build   also builds a copy of the tree with a throw-away
                                           engine folder added and runs it (a few minutes)

The cheap checks:
  1. No line of a tracked file outside adapters/, docs/ and the README names four or more
     engines: such a line is a hand-kept list of engines, which the folders replace.
  2. A throw-away engine folder added to a copy of adapters/ is seen by scripts/engines.py:
     in `names`, and its feature in `features` and `feature NAME`.
The unit tests `adapters::tests::a_new_engine_folder_is_registered` (the generated registry,
lexical list and declarations) and the integration tests `registry::*` (the built registry
and the scripts against the folders) hold the rest.

--build copies the tracked tree to a temporary directory, adds `adapters/zz_probe/` (an
engine whose `open` is the exact engine's), builds that copy (its default features) in
its own target directory (~/.cache/ragdbeval/probe-target, first seeded with the main
build's dependencies), and checks that `ragdbeval
engines` lists zz-probe and that `ragdbeval bench --db zz-probe` completes with recall 1.
Exit 1 naming what failed.
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import engines  # noqa: E402

PROBE_CONFIG = """[engine]
name = "zz-probe"
summary = "a throw-away engine: the exact engine under another name"
feature = "qdrant-edge"

[engine.conformance]
distance = "euclidean"
min_recall = 1.0

[sets.default]
description = "brute force"
"""
PROBE_MOD = """//! A throw-away engine: the exact engine under another name.
use crate::engine::{ConnectOptions, EngineResult, VectorEngine};

/// Opens the exact engine.
pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    crate::adapters::exact::open(opts)
}
"""
# Files that describe engines to people, or hold recorded results.
NOT_LISTS = ("adapters/", "docs/", "results/", "README.md", "Cargo.lock", "fuzz/Cargo.lock")


def tracked_files():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True)
    return [f for f in out.stdout.decode().split("\0") if f]


def hand_lists(names):
    """Lines outside the engine folders that name four or more engines."""
    pattern = re.compile(
        r"(?<![\w-])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")(?![\w-])"
    )
    found = []
    for name in tracked_files():
        path = ROOT / name
        if name.startswith(NOT_LISTS) or not path.is_file():
            continue
        try:
            lines = path.read_text().splitlines()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(lines, 1):
            named = {m.group(1) for m in pattern.finditer(line)}
            if len(named) >= 4:
                found.append(f"{name}:{number}: names {', '.join(sorted(named))}")
    return found


def names_written_in_adapters(names):
    """An adapter's name written as a string constant of its own: the registry name comes from
    its config.toml, through `crate::adapters::meta::<module>::NAME`."""
    pattern = re.compile(r'^\s*(?:pub(?:\([^)]*\))?\s+)?const\s+\w+\s*:\s*&(?:\'static\s+)?str\s*=\s*"([^"]+)"')
    found = []
    for name in tracked_files():
        if not (name.startswith("adapters/") and name.endswith(".rs")):
            continue
        for number, line in enumerate((ROOT / name).read_text().splitlines(), 1):
            m = pattern.match(line)
            if m and m.group(1) in names:
                found.append(f"{name}:{number}: the engine name {m.group(1)!r} written by hand "
                             "(use crate::adapters::meta::<module>::NAME)")
    return found


def add_probe(adapters):
    probe = adapters / "zz_probe"
    probe.mkdir()
    (probe / "config.toml").write_text(PROBE_CONFIG)
    (probe / "mod.rs").write_text(PROBE_MOD)


def scripts_see_probe():
    """engines.py on a copy of adapters/ with the probe folder added."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp)
        shutil.copytree(ROOT / "adapters", copy / "adapters")
        add_probe(copy / "adapters")
        seen = engines.engines(copy)
        problems = []
        if "zz-probe" not in seen:
            problems.append("scripts/engines.py does not list an added engine folder")
        elif seen["zz-probe"].get("feature") != "qdrant-edge":
            problems.append("scripts/engines.py does not read an added folder's feature")
        if len(seen) != len(engines.engines()) + 1:
            problems.append("scripts/engines.py lists other engines in the copy")
        return problems


def build_probe():
    """Builds a copy of the tree with the probe folder and runs the probe engine."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp) / "ragdbeval"
        for name in tracked_files():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
        add_probe(copy / "adapters")
        target = pathlib.Path.home() / ".cache/ragdbeval/probe-target"
        shared = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", pathlib.Path.home() / ".cache/ragdbeval/target"))
        if not target.exists() and (shared / "release").is_dir():
            # The dependencies are the same crates built the same way: start from the main
            # build's, so only ragdbeval itself is compiled (the copy is another package path).
            shutil.copytree(shared / "release", target / "release", symlinks=True)
        env = {**os.environ, "CARGO_TARGET_DIR": str(target)}
        subprocess.run(["cargo", "build", "--release", "--locked", "--bin", "ragdbeval"],
                       cwd=copy, env=env, check=True)
        binary = target / "release/ragdbeval"
        listed = subprocess.run([binary, "engines"], capture_output=True, text=True, check=True)
        if not re.search(r"^zz-probe\s", listed.stdout, re.M):
            return ["`ragdbeval engines` of the copy does not list zz-probe"]
        work = pathlib.Path(tmp) / "work"
        work.mkdir()
        run = subprocess.run(
            [binary, "bench", "--db", "zz-probe", "-q", "--name", "probe", "--json",
             "--dataset", "gen:clustered:n=2000,dim=16,queries=50,seed=3"],
            cwd=work, capture_output=True, text=True,
        )
        if run.returncode != 0:
            return [f"`bench --db zz-probe` failed: {run.stderr.strip()}"]
        result = json.loads((work / "results/probe.json").read_text())
        recalls = [
            s["quality"]["recall"]
            for c in result["configs"]
            for s in c["steps"]
            if s.get("phase") == "search"
        ]
        if not recalls or min(recalls) < 1.0:
            return [f"`bench --db zz-probe` recall {recalls}, not 1"]
        print(f"check_engine_folder: the copy with zz-probe built and ran it (recall {recalls})")
        return []


def main(args):
    if args not in ([], ["--build"]):
        return __doc__
    names = list(engines.engines())
    problems = [f"{line}: a hand-kept list of engines (read scripts/engines.py instead)"
                for line in hand_lists(names)]
    problems += names_written_in_adapters(names)
    problems += scripts_see_probe()
    if args == ["--build"] and not problems:
        problems += build_probe()
    for p in problems:
        print(f"check_engine_folder: {p}", file=sys.stderr)
    if not problems:
        print(f"check_engine_folder: {len(names)} engines, each one folder; no hand-kept list")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
