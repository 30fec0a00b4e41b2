#!/usr/bin/env python3
"""The longest functions in src/ and adapters/, tests left out.

    scripts/longest_functions.py            # the ten longest, longest first
    scripts/longest_functions.py --max 120  # also fail (exit 1) if one is longer than 120 lines
    scripts/longest_functions.py --top 30 src/runner
    scripts/longest_functions.py --max 120 --max-file-lines 600   # as the test command runs it

A function's length is its lines from `fn` to its closing brace. Test code is left out:
files named `tests.rs` or `it.rs` (an engine folder's integration tests) or under a
`tests/` folder, and `#[cfg(test)]` modules. The scan
strips comments, strings and character literals before matching braces, so a brace inside
one does not count. A file's length for --max-file-lines is its lines outside test modules.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")
CFG_TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{")


def blank_out(text):
    """The text with comments, strings and char literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)

    def keep_newlines(s):
        return "".join("\n" if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(keep_newlines(text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 20]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append(keep_newlines(text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(keep_newlines(text[i:j + 1]))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:i + 12])
            if m:  # a char literal; otherwise a lifetime
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(text, open_at):
    depth = 0
    for j in range(open_at, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


def test_spans(code):
    spans = []
    for m in CFG_TEST_MOD.finditer(code):
        spans.append((m.start(), matching_brace(code, m.end() - 1)))
    return spans


def code_lines(path):
    """A file's lines outside its `#[cfg(test)]` modules."""
    with open(path, encoding="utf-8") as f:
        code = blank_out(f.read())
    tests = sum(code.count("\n", a, b) for a, b in test_spans(code))
    return code.count("\n") - tests


def functions(path):
    with open(path, encoding="utf-8") as f:
        code = blank_out(f.read())
    skip = test_spans(code)
    for m in FN.finditer(code):
        if any(a <= m.start() <= b for a, b in skip):
            continue
        # The body starts at the first `{` after the signature, unless a `;` comes first
        # (a trait method without a body).
        brace, semi = code.find("{", m.end()), code.find(";", m.end())
        if brace < 0 or (0 <= semi < brace):
            continue
        end = matching_brace(code, brace)
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, end) + 1
        yield m.group(1), first, last - first + 1


def rust_files(roots):
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, root)):
            dirnames[:] = [d for d in dirnames if d != "tests"]
            for name in filenames:
                # An engine folder's `it.rs` is its integration tests.
                if name.endswith(".rs") and name not in ("tests.rs", "it.rs"):
                    yield os.path.join(dirpath, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("roots", nargs="*", default=["src", "adapters"])
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--max", type=int, help="exit 1 if a function is longer than this")
    ap.add_argument("--max-file-lines", type=int,
                    help="exit 1 if a file holds more lines than this outside its tests")
    args = ap.parse_args()
    found = []
    for path in rust_files(args.roots):
        rel = os.path.relpath(path, ROOT)
        found += [(lines, f"{rel}:{line}", name) for name, line, lines in functions(path)]
    found.sort(key=lambda t: (-t[0], t[1]))
    for lines, where, name in found[: args.top]:
        print(f"{lines:5d}  {name}  {where}")
    status = 0
    if args.max is not None:
        over = [f for f in found if f[0] > args.max]
        if over:
            print(f"{len(over)} function(s) longer than {args.max} lines", file=sys.stderr)
            status = 1
    if args.max_file_lines is not None:
        for path in rust_files(args.roots):
            lines = code_lines(path)
            if lines > args.max_file_lines:
                rel = os.path.relpath(path, ROOT)
                print(f"{rel}: {lines} lines outside tests, more than {args.max_file_lines}",
                      file=sys.stderr)
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
