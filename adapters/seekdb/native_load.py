"""seekdb's native bulk path (see native_load.sh): multi-row INSERT statements through PyMySQL
into a plain table, then the vector index built by CREATE VECTOR INDEX."""
import os
import sys
import time
from urllib.parse import parse_qs, unquote, urlparse

import pymysql

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../scripts"))
import native_load as lib  # noqa: E402

TABLE = "native_load"


def body(x, lo, hi):
    # str of a float32 is its shortest round-trip text, as ragdbeval writes it.
    values = ",".join(
        f"({i},'[" + ",".join(map(str, x[i])) + "]')" for i in range(lo, hi)
    )
    return f"INSERT INTO {TABLE} (id, embedding) VALUES {values}".encode()


def connector(url):
    """A function making connections to the server of a seekdb URL (socket or host:port)."""
    u = urlparse(url)
    socket = parse_qs(u.query).get("socket", [None])[0]
    args = {"user": unquote(u.username or "root"), "password": unquote(u.password or ""),
            "database": u.path.lstrip("/") or "ragdbeval", "autocommit": True}
    if socket:
        args["unix_socket"] = socket
    else:
        args.update(host=u.hostname, port=u.port)
    return lambda: pymysql.connect(**args)


def load(url, blobs, streams, n, dim):
    connect = connector(url)
    admin = connect()
    with admin.cursor() as c:
        c.execute(f"DROP TABLE IF EXISTS {TABLE}")
        c.execute(f"CREATE TABLE {TABLE} (id BIGINT PRIMARY KEY, embedding VECTOR({dim}))")

    def send(conn, blob):
        with conn.cursor() as c:
            c.execute(blob.decode())

    elapsed = lib.send_all(blobs, streams, connect, send, "seekdb insert")
    with admin.cursor() as c:
        start = time.perf_counter()
        c.execute(f"CREATE VECTOR INDEX embedding_vi ON {TABLE}(embedding) "
                  "WITH (distance=l2, type=hnsw, m=16, ef_construction=200)")
        build = time.perf_counter() - start
        c.execute(f"SELECT COUNT(*) FROM {TABLE}")
        (count,) = c.fetchone()
        if count != n:
            raise SystemExit(f"native load: {count} rows, not {n}")
        c.execute(f"DROP TABLE {TABLE}")
    return f"{elapsed:.3f} {build:.3f}"


lib.main(body, load)
