#!/usr/bin/env python3
"""No import goes up a layer: lists every `crate::X` reference in src/ and adapters/ whose
target module sits in a higher layer than the file's own module. Exit 1 if any.

Layers, top to bottom (a module may use its own layer and any layer below it):
  0 main                        the binary's entry point
  1 commands, cli, options      one module per subcommand, and the argument types they take
                                (cli only declares arguments: it imports nothing of the crate)
  2 runner                      phases, load, ground truth of runbook steps
  3 runbook                     resolved steps
  4 export, output              files and the terminal
  5 results, dataset, eval, embed   what is stored; what is measured on (embed: text made
                                into vectors); retrieval runs judged
  6 metrics, groundtruth, engine, adapters, resources, storage, synthetic, params
  7 types, rng, distance, vectors, atomic, filter, secret, sparse, text   primitives

Usage: scripts/check_layers.py [ROOT]
"""
import pathlib
import re
import sys

LAYERS = {
    "main": 0,
    "commands": 1, "cli": 1, "options": 1,
    "runner": 2,
    "runbook": 3,
    "export": 4, "output": 4,
    "results": 5, "dataset": 5, "eval": 5, "embed": 5,
    "metrics": 6, "groundtruth": 6, "engine": 6, "adapters": 6, "resources": 6,
    "storage": 6, "synthetic": 6, "params": 6,
    "engine_meta": 7, "filter": 7, "interrupt": 7, "secret": 7, "sparse": 7, "text": 7, "types": 7, "rng": 7, "distance": 7, "vectors": 7, "atomic": 7,
}


def module_of(root: pathlib.Path, path: pathlib.Path) -> str:
    rel = path.relative_to(root)
    if rel.parts[0] == "adapters":
        return "adapters"
    first = rel.parts[1]  # src/<first>
    return first[:-3] if first.endswith(".rs") else first


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    files = sorted(list((root / "src").rglob("*.rs")) + list((root / "adapters").rglob("*.rs")))
    bad = []
    for path in files:
        if path.name == "lib.rs":
            continue
        own = module_of(root, path)
        if own not in LAYERS:
            bad.append(f"{path.relative_to(root)}: module `{own}` has no layer")
            continue
        text = path.read_text()
        for n, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("//"):
                continue
            for target in re.findall(r"crate::(\w+)", line):
                if target not in LAYERS:
                    continue
                if LAYERS[target] < LAYERS[own]:
                    bad.append(f"{path.relative_to(root)}:{n}: {own} (layer {LAYERS[own]}) uses "
                               f"{target} (layer {LAYERS[target]}): {line.strip()}")
    for b in bad:
        print(b)
    print(f"{len(bad)} upward import(s) in {len(files)} files")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
