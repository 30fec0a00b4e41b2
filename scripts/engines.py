#!/usr/bin/env python3
"""The engines, read from their folders: every adapters/<module>/config.toml with an [engine]
table (build/engines.rs reads the same tables for the build). The scripts ask this instead
of keeping lists of their own.

  scripts/engines.py names                 every engine, one per line
  scripts/engines.py servers               the server engines
  scripts/engines.py features              every engine's cargo feature, comma-separated
  scripts/engines.py feature NAME[,NAME…]  the features those engines need (may be empty;
                                           a name that is no engine is passed over: ragdbeval
                                           itself says so)
  scripts/engines.py get NAME KEY          a value of NAME's table: `distance`, `effort_sweep`,
                                           `search_params` (one per line), `feature`, `url_env`
"""
import pathlib
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def engines(root=ROOT):
    """Every engine's [engine] table, by registry name, sorted."""
    found = {}
    for config in sorted((root / "adapters").glob("*/config.toml")):
        with config.open("rb") as f:
            table = tomllib.load(f).get("engine")
        if table is not None:
            table["module"] = config.parent.name
            found[table["name"]] = table
    return dict(sorted(found.items()))


def value(table, key):
    """A key of the table or of its server or conformance table; lists one item per line."""
    for part in (table, table.get("server", {}), table.get("conformance", {})):
        if key in part:
            v = part[key]
            return "\n".join(v) if isinstance(v, list) else str(v)
    return ""


def main(args):
    all_engines = engines()
    if args == ["names"]:
        print("\n".join(all_engines))
    elif args == ["servers"]:
        print("\n".join(n for n, t in all_engines.items() if "server" in t))
    elif args == ["features"]:
        print(",".join(sorted({t["feature"] for t in all_engines.values() if "feature" in t})))
    elif len(args) in (1, 2) and args[0] == "feature":
        wanted = [n for n in (args[1:] or [""])[0].split(",") if n in all_engines]
        print(",".join(sorted({all_engines[n].get("feature", "") for n in wanted} - {""})))
    elif len(args) == 3 and args[0] == "get":
        if args[1] not in all_engines:
            return f"engines.py: no engine named {args[1]}"
        v = value(all_engines[args[1]], args[2])
        if v:
            print(v)
    else:
        return __doc__
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
