#!/usr/bin/env python3
"""Runs every shell command in the README's and docs/*.md's `sh` code blocks, in order.

    scripts/run_doc_commands.py BINARY [--dry-run] [--only FILE]

BINARY is a built `ragdbeval`; a command's leading `ragdbeval` and `./scripts/ragdbeval` both
run it. The commands run from the checkout's root (use a clean clone: they write results/,
report/ and files such as run.trec there), one `bash -c` each, with a ten-minute limit;
servers the pages start are stopped at the end.
A command that cannot run on a machine without network or without a given server is skipped
with its reason: a download of a public dataset (sift1m, glove), BEIR data fetched
elsewhere, a Qdrant server (set QDRANT_URL to run those), an external tool that is not
installed (trec_eval), a `cargo build` and the test command itself. Exit status 1 if any command that ran failed.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def commands(path):
    """(line number, command) for each command of the file's sh blocks; continuations joined."""
    text = open(path, encoding="utf-8").read()
    for m in re.finditer(r"```(sh|bash)\n(.*?)```", text, re.S):
        first = text.count("\n", 0, m.start(2)) + 1
        pending, start = "", None
        for i, line in enumerate(m.group(2).splitlines()):
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            start = first + i if not pending else start
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            yield start, pending + line
            pending = ""


def skip_reason(cmd):
    if "scripts/test.sh" in cmd:
        return "the test command (run on its own)"
    if re.search(r"--db qdrant(\s|$)", cmd) or cmd.startswith("QDRANT_URL="):
        if not os.environ.get("QDRANT_URL"):
            return "needs a Qdrant server (QDRANT_URL)"
    if re.search(r"--dataset (sift1m|glove-[\w-]+)", cmd):
        return "downloads a public dataset"
    if "data/scifact" in cmd:
        return "needs BEIR's SciFact, downloaded elsewhere, and a build with `embed`"
    if cmd.startswith("cargo build"):
        return "a build (the pages' commands run the binary given)"
    if cmd.startswith("trec_eval") and not shutil.which("trec_eval"):
        return "trec_eval is not installed"
    return None


def for_shell(cmd, binary):
    cmd = re.sub(r"(^|\s|\()\./scripts/ragdbeval\s", lambda m: f"{m.group(1)}{binary} ", cmd)
    return re.sub(r"(^|\s|\(|;|&&)ragdbeval\s", lambda m: f"{m.group(1)}{binary} ", cmd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--only", help="one Markdown file")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    files = [args.only] if args.only else ["README.md"] + sorted(glob.glob("docs/*.md"))
    failed, ran, skipped = [], 0, 0
    for path in files:
        for line, cmd in commands(os.path.join(ROOT, path)):
            where = f"{path}:{line}"
            reason = skip_reason(cmd)
            if reason:
                skipped += 1
                print(f"skip  {where}  {cmd}\n      ({reason})", flush=True)
                continue
            shell = for_shell(cmd, binary)
            if args.dry_run:
                print(f"would {where}  {shell}")
                continue
            t = time.monotonic()
            try:
                done = subprocess.run(["bash", "-c", shell], cwd=ROOT, capture_output=True,
                                      text=True, timeout=600)
                rc, tail = done.returncode, (done.stderr or done.stdout).strip().splitlines()[-3:]
            except subprocess.TimeoutExpired:
                rc, tail = "timeout", []
            ran += 1
            # A run stopped by `timeout -s INT` ends `interrupted` (exit 130; timeout itself says 124).
            if rc in (124, 130) and cmd.startswith("timeout -s INT"):
                rc = 0
            status = "ok   " if rc == 0 else "FAIL "
            print(f"{status} {where}  ({time.monotonic() - t:.1f} s)  {cmd}", flush=True)
            if rc != 0:
                failed.append(where)
                for t_line in tail:
                    print(f"      | {t_line}")
    print(f"{ran} ran, {len(failed)} failed, {skipped} skipped")
    return 1 if failed else 0


def stop_servers():
    """The pages start servers and do not all stop them: stop what is still running."""
    for script in glob.glob(os.path.join(ROOT, "scripts/servers/*.sh")):
        if not script.endswith("common.sh"):
            subprocess.run([script, "stop"], cwd=ROOT, capture_output=True)


if __name__ == "__main__":
    try:
        status = main()
    finally:
        stop_servers()
    sys.exit(status)
