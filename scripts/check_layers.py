#!/usr/bin/env python3
"""No import goes up a layer: lists every `crate::X` reference in src/ and adapters/ whose
target module sits in a higher layer than the file's own module. Exit 1 if any.

Layers, top to bottom (a module may use its own layer and any layer below it):
  0 main                        the binary's entry point
  1 commands, cli, options      one module per subcommand, and the argument types they take
                                (cli only declares arguments: it imports nothing of the crate)
  2 export, output              files and the terminal, made from finished results: the
                                runner hands its answers to the command, never to them
  3 runner                      phases, load, ground truth of runbook steps
  4 results, dataset, eval, embed, runbook   what is stored; what is measured on (embed: text
                                made into vectors); retrieval runs judged; the steps a run
                                makes (the result records them)
  5 metrics, groundtruth, engine, adapters, resources, storage, synthetic, params
  6 types, rng, distance, vectors, atomic, filter, secret, sparse, text   primitives

Usage: scripts/check_layers.py [ROOT]
"""
import pathlib
import re
import sys

LAYERS = {
    "main": 0,
    "commands": 1, "cli": 1, "options": 1,
    "export": 2, "output": 2,
    "runner": 3,
    "results": 4, "dataset": 4, "eval": 4, "embed": 4, "runbook": 4,
    "metrics": 5, "groundtruth": 5, "engine": 5, "adapters": 5, "resources": 5,
    "storage": 5, "synthetic": 5, "params": 5,
    "engine_meta": 6, "filter": 6, "interrupt": 6, "secret": 6, "sparse": 6, "text": 6, "types": 6, "rng": 6, "distance": 6, "vectors": 6, "atomic": 6,
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
