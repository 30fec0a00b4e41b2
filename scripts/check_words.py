#!/usr/bin/env python3
"""The tree says what ragdbeval is, never how it was made.

Greps every file of the checkout that git tracks or would track (`git ls-files --cached
--others --exclude-standard`; binary files and Cargo.lock files skipped) for
words that describe the project's own making rather than the software:

  work sessions      an ordinal or "this/that/previous/next/earlier/later" before
                     "session", or "session" followed by a number
  issue numbers      the word "issue" followed by a number, with or without "#"
  seed documents     the word "seed" or "seeds" followed by a number (joined by a space or
                     a hyphen), or in the possessive, or "as the seed" specifies it; name
                     the format or the convention by what it is instead (RAG ground-truth
                     JSONL, SQuAD, trec_eval, BEIR, ...)
  run dates          an ISO date (2026-11-27) or month ("before 2026-11") in prose

The database sense of "session" (a PostgreSQL session, `session.rs`, the wire session,
a connection's session) is allowed: "this/that/... session" is dropped when its line also
names a database, a connection or a server, or when it is in adapters/pgvector/ or a
`session.rs`. An ordinal or a number with "session" is never allowed. ISO dates are allowed in data
(timestamps such as 2026-11-27T10:00:00Z, files under results/examples/ and fixtures).

With --binary PATH it also checks `PATH --help` and the help of every subcommand, found
recursively from the "Commands:" list of each help text.

Prints `path:line: text` for every hit and exits 1 if there is any; otherwise prints one
summary line and exits 0. Exit 2: the check could not run (not a git checkout, the binary
cannot be run).

Usage:
  python3 scripts/check_words.py                     # the whole tracked tree
  python3 scripts/check_words.py README.md docs      # only these paths (files or folders)
  python3 scripts/check_words.py --binary ~/.cache/ragdbeval/target/release/ragdbeval
  python3 scripts/check_words.py --binary PATH --no-tree   # only the help texts
  python3 scripts/check_words.py --by-dir            # hit counts per top-level folder
"""
import argparse
import collections
import pathlib
import re
import subprocess
import sys

ORDINALS = (
    "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
    "thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|"
    r"\d+(?:st|nd|rd|th)"
)
DEICTIC = "this|that|previous|next|earlier|later|last|same|current|work|working"

# (kind, pattern). Every pattern is matched case-insensitively against one line.
PATTERNS = [
    ("work session", rf"\b(?:{ORDINALS})(?:'s)?\s+sessions?\b"),
    ("work session", r"\bsessions?\s+#?\d+\b"),
    ("work session", r"\bthe day's\s+(?:\w+\s+)?sessions?\b"),
    ("session", rf"\b(?:{DEICTIC})(?:'s)?\s+sessions?\b"),
    ("issue", r"\bissues?\s+#?\d+\b"),
    ("issue", r"\bissue-\d+\b"),
    ("seed", r"\bseeds?[ -]?\d{3}\b"),
    ("seed", r"\bseed's\b"),
    ("seed", r"\bthe seeds'"),
    ("seed", r"\bthe seeds?\s+(?:documents?|specif\w*|asks?|define\w*|differs?|sketch\w*)\b"),
    ("seed", r"\bseed documents?\b"),
    ("date", r"\b20\d\d-[01]\d-[0-3]\d\b(?![T ]\d\d:)"),
    ("date", r"\b(?:before|after|since|until|from|in|on)\s+20\d\d-[01]\d\b"),
]
COMPILED = [(kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in PATTERNS]

# A "session" hit on a line that also says any of these is the database sense.
DATABASE_SESSION = re.compile(
    r"session\.rs|\bwire session|\b(?:postgres\w*|pgvector|pg_\w+|sql|libpq|database|db|"
    r"connection|connections|socket|backend|statement_timeout|plan_cache_mode|search_path|"
    r"server|client|redis|tls|http)\b|\bSET\s+\w+",
    re.IGNORECASE,
)

# Files in which "session" is always the database's.
DATABASE_SESSION_PATHS = re.compile(r"^adapters/pgvector/|(?:^|/)session\.rs$")

# Paths whose dates are data, not prose (timestamps of stored example results, fixtures).
DATE_DATA_PATHS = re.compile(r"^(?:results/examples/|datasets/fixtures/|fuzz/corpus/)")
# A pinned toolchain names a date that is a version, not a run date.
TOOLCHAIN_DATE = re.compile(r"nightly-20\d\d-\d\d-\d\d", re.IGNORECASE)

SKIPPED_NAMES = {"Cargo.lock"}
SELF = "scripts/check_words.py"


def allowed(kind, line, path):
    if kind == "session":
        in_database_code = path is not None and DATABASE_SESSION_PATHS.search(path)
        return bool(in_database_code or DATABASE_SESSION.search(line))
    if kind == "date":
        if path is not None and DATE_DATA_PATHS.search(path):
            return True
        return bool(TOOLCHAIN_DATE.search(line))
    return False


def hits_in_text(text, path):
    """(line number, line) of every line with a hit that no allow rule excuses."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for kind, pattern in COMPILED:
            if pattern.search(line) and not allowed(kind, line, path):
                found.append((number, line.strip()))
                break
    return found


def tracked_files(root, selected):
    # Tracked files and new ones not yet added (ignored files stay out), so that a check
    # before a commit sees what the commit will hold.
    command = ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
               "--exclude-standard", "--"] + selected
    listing = subprocess.run(command, capture_output=True, check=False)
    if listing.returncode != 0:
        message = listing.stderr.decode(errors="replace").strip()
        raise SystemExit(f"error: git ls-files in {root} failed: {message}")
    names = [name for name in listing.stdout.decode().split("\0") if name]
    return [name for name in names if pathlib.PurePosixPath(name).name not in SKIPPED_NAMES
            and name != SELF]


def read_text(path):
    """The file's text, or None for a binary or unreadable file."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def check_tree(root, selected):
    hits, checked = [], 0
    for name in tracked_files(root, selected):
        text = read_text(root / name)
        if text is None:
            continue
        checked += 1
        hits.extend((name, number, line) for number, line in hits_in_text(text, name))
    return hits, checked


def help_text(binary, words):
    try:
        run = subprocess.run([binary, *words, "--help"], capture_output=True, text=True,
                             timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SystemExit(f"error: cannot run {binary} {' '.join(words)} --help: {error}")
    if run.returncode != 0:
        first = (run.stderr.strip().splitlines() or ["no message"])[0]
        raise SystemExit(f"error: {binary} {' '.join(words)} --help exited "
                         f"{run.returncode}: {first}")
    return run.stdout


def subcommands(text):
    """The names under a clap help text's "Commands:" heading, `help` left out."""
    names, inside = [], False
    for line in text.splitlines():
        if re.match(r"^\S.*:$", line):
            inside = line.strip() == "Commands:"
            continue
        match = re.match(r"^\s{2}(\S+)", line) if inside else None
        if match and match.group(1) != "help":
            names.append(match.group(1).rstrip(","))
    return names


def check_binary(binary):
    hits, checked, pending = [], 0, [[]]
    program = pathlib.Path(binary).name
    while pending:
        words = pending.pop(0)
        text = help_text(binary, words)
        checked += 1
        label = " ".join([program, *words, "--help"])
        hits.extend((label, number, line) for number, line in hits_in_text(text, None))
        pending.extend(words + [name] for name in subcommands(text))
    return hits, checked


def repository_root():
    here = pathlib.Path.cwd()
    run = subprocess.run(["git", "-C", str(here), "rev-parse", "--show-toplevel"],
                         capture_output=True, text=True, check=False)
    if run.returncode == 0:
        return pathlib.Path(run.stdout.strip())
    return pathlib.Path(__file__).resolve().parent.parent


def main():
    parser = argparse.ArgumentParser(
        description="Fail on words about how the project was made (work sessions, issue "
                    "numbers, seed documents, run dates) in the tracked tree and in --help.")
    parser.add_argument("paths", nargs="*", help="limit the tree check to these paths")
    parser.add_argument("--binary", metavar="PATH",
                        help="also check PATH --help and every subcommand's --help")
    parser.add_argument("--no-tree", action="store_true",
                        help="skip the tracked files (with --binary: help texts only)")
    parser.add_argument("--by-dir", action="store_true",
                        help="after the hits, print their count per top-level folder")
    args = parser.parse_args()
    if args.no_tree and not args.binary:
        parser.error("--no-tree needs --binary")

    root = repository_root()
    hits, files, helps = [], 0, 0
    if not args.no_tree:
        selected = [str(pathlib.Path(p).resolve().relative_to(root)) if pathlib.Path(p).exists()
                    else p for p in args.paths]
        hits, files = check_tree(root, selected)
    if args.binary:
        help_hits, helps = check_binary(args.binary)
        hits.extend(help_hits)

    for where, number, line in hits:
        print(f"{where}:{number}: {line}")
    scope = f"{files} files" + (f" and {helps} help texts" if args.binary else "")
    if args.by_dir and hits:
        counts = collections.Counter(
            where.split("/", 1)[0] if "/" in where and " " not in where else
            ("--help" if where.endswith("--help") else where) for where, _, _ in hits)
        for folder, count in sorted(counts.items()):
            print(f"  {folder}: {count}", file=sys.stderr)
    if hits:
        lines = "line" if len(hits) == 1 else "lines"
        print(f"check_words: {len(hits)} {lines} about how the project was made, in {scope}",
              file=sys.stderr)
        return 1
    print(f"check_words: no words about how the project was made in {scope}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
