"""The parts every engine's native bulk path shares (adapters/<engine>/native_load.py, run by
scripts/load_vs_native.sh): reading the base set, the requests encoded before the clock
starts, and the loop that sends them over several connections at once.

An engine's file defines `body(x, lo, hi) -> bytes` (one request of rows lo..hi) and
`load(url, blobs, streams, n, dim) -> str` (the seconds it prints), then calls `main`:

    native_load.py encode BASE.fbin OUT STREAMS [BATCH]   # BATCH default: n / STREAMS + 1
    native_load.py load URL BLOBS STREAMS N DIM
"""
import http.client
import sys
import threading
import time
from urllib.parse import urlparse

import numpy as np


def read_base(path):
    """The rows of a big-ann `.fbin` file (two int32 counts, then float32 rows)."""
    n, d = np.fromfile(path, dtype="<i4", count=2)
    return np.fromfile(path, dtype="<f4", offset=8).reshape(n, d)


def batch_size(n, streams, batch=""):
    """The rows a request holds: BATCH when given, else an equal share a stream."""
    return int(batch) if batch else n // streams + 1


def encode(body, base, out, streams, batch=""):
    """Writes every request of `base` to `out`, each one length-prefixed."""
    x = read_base(base)
    step = batch_size(len(x), streams, batch)
    with open(out, "wb") as f:
        for lo in range(0, len(x), step):
            blob = body(x, lo, min(len(x), lo + step))
            f.write(len(blob).to_bytes(8, "little") + blob)


def read_blobs(path):
    """The requests `encode` wrote, in order."""
    blobs = []
    with open(path, "rb") as f:
        while head := f.read(8):
            blobs.append(f.read(int.from_bytes(head, "little")))
    return blobs


def send_all(items, streams, connect, send, what):
    """Sends every item, `streams` threads at once, each over its own connection from
    `connect()`; returns the wall seconds. The first error stops every thread and exits."""
    cursor = iter(items)
    lock = threading.Lock()
    errors = []

    def worker():
        conn = connect()
        while not errors:
            with lock:
                item = next(cursor, None)
            if item is None:
                return
            try:
                send(conn, item)
            except BaseException as e:
                errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(streams)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise SystemExit(f"{what}: {errors[0]}")
    return elapsed


def http_connector(url, timeout):
    """A function making keep-alive HTTP connections to `url`'s host and port."""
    u = urlparse(url)
    return lambda: http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)


def http_call(conn, method, path, body=None, headers=None, what="http"):
    """One request; the body of a 2xx answer, else an exit naming the call and the answer."""
    conn.request(method, path, body=body,
                 headers={"Content-Type": "application/json", **(headers or {})})
    r = conn.getresponse()
    data = r.read()
    if r.status >= 300:
        raise SystemExit(f"{what} {method} {path}: {r.status} {data[:300]!r}")
    return data


def main(body, load):
    if sys.argv[1] == "encode":
        encode(body, sys.argv[2], sys.argv[3], int(sys.argv[4]), *sys.argv[5:6])
    else:
        url, blobs, streams, n, dim = sys.argv[2:7]
        print(load(url, read_blobs(blobs), int(streams), int(n), int(dim)))
