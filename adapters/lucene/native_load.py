"""Lucene's native bulk path (see native_load.sh): LuceneServer's WRITE frames of ids and
float32 vectors, then READY (the force merge to one segment and the commit)."""
import os
import socket
import struct
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../scripts"))
import native_load as lib  # noqa: E402

NAME = b"native_load"


def frame(op, payload):
    return struct.pack("<BI", op, len(payload)) + payload


def name():
    return struct.pack("<H", len(NAME)) + NAME


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        data += s.recv(n - len(data))
    return data


def call(s, data):
    s.sendall(data)
    status, n = struct.unpack("<BI", recv_exact(s, 5))
    answer = recv_exact(s, n)
    if status:
        raise SystemExit(f"lucene: {answer.decode()}")
    return answer


def body(x, lo, hi):
    rows = np.empty(hi - lo, dtype=[("id", "<u8"), ("v", "<f4", (x.shape[1],))])
    rows["id"] = np.arange(lo, hi)
    rows["v"] = x[lo:hi]
    return frame(3, name() + struct.pack("<BI", 0, hi - lo) + rows.tobytes())


def load(url, blobs, streams, n, dim):
    host, port = url.removeprefix("lucene://").rsplit(":", 1)
    connect = lambda: socket.create_connection((host, int(port)))  # noqa: E731
    admin = connect()
    # Euclidean, float vectors, m 16, ef_construction 100, RAM buffer 1024 MB, recreate.
    create = name() + struct.pack("<BBIIIIB", 0, 0, dim, 16, 100, 1024, 1) + struct.pack("<H", 0)
    call(admin, frame(2, create))
    loaded = lib.send_all(blobs, streams, connect, call, "lucene write")
    start = time.perf_counter()
    documents, _ = struct.unpack("<QI", call(admin, frame(5, name() + struct.pack("<I", 1))))
    ready = time.perf_counter() - start
    if documents != n:
        raise SystemExit(f"native load: {documents} documents, not {n}")
    call(admin, frame(8, name()))
    return f"{loaded:.3f} {ready:.3f}"


lib.main(body, load)
