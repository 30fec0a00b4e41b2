#!/usr/bin/env python3
"""`ragdbeval embed` against sentence-transformers on the same texts and the same model folder.

Texts: 500 of varied length from this machine, in a fixed order: Debian package descriptions
(/var/lib/dpkg/status: the one-line summaries and the long descriptions) and the text of English
manual pages (/usr/share/man/man1, roff requests and font escapes removed), about a fifth of
them longer than the model's 256 tokens.

Checks: for every text, the cosine between ragdbeval's vector and sentence-transformers' one
must be at least 0.9999 (for a text longer than the model's window, ragdbeval's first window
against sentence-transformers' truncated text: both read the same first 254 text tokens), and
the same for the queries. Exit 1 otherwise.

Throughput: with --rounds N, N rounds of ragdbeval then sentence-transformers (A B A B), each
timing only the embedding of the documents (the model loaded, the files read), the same work on
both sides: ragdbeval with --truncate embeds each text's first window, as sentence-transformers'
encode does, at the same batch size. Prints documents/s and tokens/s (model tokens, special
tokens included, padding not) and the ratio ragdbeval / sentence-transformers per round.

Needs a Python with sentence-transformers (and torch): run it with that interpreter, e.g.
  ~/.cache/ragdbeval/st-venv/bin/python scripts/check_embed_st.py \\
      --bin $CARGO_TARGET_DIR/release/ragdbeval --model "$(scripts/install/minilm.sh)"
"""
import argparse
import glob
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def package_texts():
    """Short summaries and long descriptions of the installed Debian packages."""
    short, long = [], []
    with open("/var/lib/dpkg/status", encoding="utf-8", errors="replace") as f:
        desc = None
        for line in f:
            if line.startswith("Description:"):
                desc = [line[len("Description:"):].strip()]
                short.append(desc[0])
            elif desc is not None and line.startswith(" "):
                part = line.strip()
                desc.append("" if part == "." else part)
            else:
                if desc is not None and len(desc) > 1:
                    long.append(" ".join(p for p in desc[1:] if p))
                desc = None
    return short, long


def man_texts(limit):
    """The text of English section-1 manual pages, roff removed, longest pages first cut."""
    texts = []
    for path in sorted(glob.glob("/usr/share/man/man1/*.gz")):
        try:
            raw = gzip.open(path, "rt", encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        lines = []
        for line in raw.splitlines():
            if line.startswith((".", "'")):
                line = re.sub(r"^\.(B|I|BR|IR|RB|RI|BI|IB|SH|SS)\s+", "", line)
                if line.startswith((".", "'")):
                    continue
            line = re.sub(r"\\f[BIRP]|\\f\(..|\\[-e&|^]|\\\*\(..|\\\(..", "", line)
            lines.append(line.replace('"', "").strip())
        text = " ".join(l for l in lines if l)
        words = text.split()
        if len(words) > 40:
            texts.append(" ".join(words[:400]))
        if len(texts) >= limit:
            break
    return texts


def texts_500():
    short, long = package_texts()
    man = man_texts(100)
    texts = short[:200] + long[:200] + man
    texts = [t for t in texts if t.strip()]
    if len(texts) < 500:
        texts += long[200 : 200 + 500 - len(texts)]
    return texts[:500]


def read_fbin(path):
    with open(path, "rb") as f:
        n, d = np.frombuffer(f.read(8), dtype="<u4")
        return np.frombuffer(f.read(), dtype="<f4").reshape(int(n), int(d))


def first_windows(out):
    """Row of each document's first window, in document order."""
    rows = []
    with open(os.path.join(out, "chunks.tsv"), encoding="utf-8") as f:
        next(f)
        for line in f:
            vector, _doc, chunk, _s, _e = line.rstrip("\n").split("\t")
            if chunk == "0":
                rows.append(int(vector))
    return rows


def run_ragdbeval(args, work, tag, truncate=False):
    out = os.path.join(work, f"out-{tag}")
    cmd = [args.bin, "embed", "--corpus", os.path.join(work, "corpus.jsonl"),
           "--queries", os.path.join(work, "queries.jsonl"), "--model", args.model,
           "--out", out, "--batch-size", str(args.batch_size), "-k", "10", "--quiet"]
    if truncate:
        cmd.append("--truncate")
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "embed.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    return out, manifest


def st_tokens(model, texts):
    tok = model.tokenizer
    limit = model.max_seq_length
    return sum(min(len(tok(t, add_special_tokens=True)["input_ids"]), limit) for t in texts)


def cosines(a, b):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="the ragdbeval binary (feature embed)")
    ap.add_argument("--model", required=True, help="sentence-transformers folder")
    ap.add_argument("--rounds", type=int, default=0, help="A B rounds of throughput")
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args()
    from sentence_transformers import SentenceTransformer

    texts = texts_500()
    queries = [t.split(".")[0][:120] for t in texts[:20]]
    work = tempfile.mkdtemp(prefix="check-embed-st.")
    with open(os.path.join(work, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"_id": f"d{i}", "text": t}) + "\n")
    with open(os.path.join(work, "queries.jsonl"), "w", encoding="utf-8") as f:
        for i, t in enumerate(queries):
            f.write(json.dumps({"_id": f"q{i}", "text": t}) + "\n")

    model = SentenceTransformer(args.model, device="cpu")
    out, manifest = run_ragdbeval(args, work, "check")
    base = read_fbin(os.path.join(out, "base.fbin"))
    ours = base[first_windows(out)]
    theirs = model.encode(texts, batch_size=args.batch_size, convert_to_numpy=True)
    cos = cosines(ours, theirs)
    qcos = cosines(read_fbin(os.path.join(out, "query.fbin")),
                   model.encode(queries, batch_size=args.batch_size, convert_to_numpy=True))
    tokens = [len(model.tokenizer(t)["input_ids"]) for t in texts]
    longer = sum(1 for n in tokens if n > model.max_seq_length)
    worst = int(np.argmin(cos))
    print(f"{len(texts)} texts ({longer} longer than {model.max_seq_length} tokens, "
          f"{manifest['vectors']} windows): min cosine {cos.min():.7f} (text {worst}, "
          f"{tokens[worst]} tokens), mean {cos.mean():.7f}; queries: min {qcos.min():.7f}")
    ok = cos.min() >= 0.9999 and qcos.min() >= 0.9999

    if args.rounds:
        st_tok = st_tokens(model, texts)
        rates = {"ragdbeval": [], "sentence-transformers": []}
        ratios = []
        for r in range(args.rounds):
            _, m = run_ragdbeval(args, work, f"r{r}", truncate=True)
            if m["document_tokens"] != st_tok:
                print(f"note: ragdbeval read {m['document_tokens']} tokens, "
                      f"sentence-transformers {st_tok}")
            rates["ragdbeval"].append((len(texts) / m["document_seconds"],
                                       m["document_tokens"] / m["document_seconds"]))
            t0 = time.perf_counter()
            model.encode(texts, batch_size=args.batch_size, convert_to_numpy=True)
            dt = time.perf_counter() - t0
            rates["sentence-transformers"].append((len(texts) / dt, st_tok / dt))
            ratios.append(rates["ragdbeval"][-1][0] / rates["sentence-transformers"][-1][0])
            print(f"round {r + 1}: ragdbeval {rates['ragdbeval'][-1][0]:.1f} docs/s "
                  f"{rates['ragdbeval'][-1][1]:.0f} tokens/s; sentence-transformers "
                  f"{rates['sentence-transformers'][-1][0]:.1f} docs/s "
                  f"{rates['sentence-transformers'][-1][1]:.0f} tokens/s; "
                  f"ratio {ratios[-1]:.3f}")
        for name, vals in rates.items():
            docs = [v[0] for v in vals]
            toks = [v[1] for v in vals]
            print(f"{name}: median {statistics.median(docs):.1f} docs/s "
                  f"(range {min(docs):.1f}-{max(docs):.1f}), median "
                  f"{statistics.median(toks):.0f} tokens/s")
        print(f"ragdbeval / sentence-transformers, documents/s: median {statistics.median(ratios):.3f} "
              f"(rounds {', '.join(f'{x:.3f}' for x in ratios)})")
    print("OK" if ok else "FAIL: a cosine is below 0.9999")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
