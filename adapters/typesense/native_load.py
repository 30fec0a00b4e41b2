"""Typesense's native bulk path (see native_load.sh): `documents/import?action=create` bodies,
JSON lines of `{"id", "ragdbeval_vector"}` as Typesense's own clients send an import."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../scripts"))
import native_load as lib  # noqa: E402

KEY = {"X-TYPESENSE-API-KEY": os.environ.get("TYPESENSE_API_KEY", "")}


def call(conn, method, path, body=None):
    return lib.http_call(conn, method, path, body, KEY, "typesense")


def body(x, lo, hi):
    # str() of a float32 is its shortest text, as ragdbeval writes it.
    return "\n".join('{"id":"%d","ragdbeval_vector":[%s]}' % (i, ",".join(str(v) for v in x[i]))
                     for i in range(lo, hi)).encode()


def send(conn, blob):
    answer = call(conn, "POST", "/collections/native_load/documents/import?action=create", blob)
    if b'"success":false' in answer:
        raise SystemExit(f"import refused documents: {answer[:300]!r}")


def load(url, blobs, streams, n, dim):
    connect = lib.http_connector(url, 3600)
    admin = connect()
    try:
        call(admin, "DELETE", "/collections/native_load")
    except SystemExit:
        pass
    call(admin, "POST", "/collections", json.dumps({"name": "native_load", "fields": [
        {"name": "ragdbeval_vector", "type": "float[]", "num_dim": dim}]}).encode())
    elapsed = lib.send_all(blobs, streams, connect, send, "typesense import")
    count = json.loads(call(admin, "GET", "/collections/native_load"))["num_documents"]
    if count != n:
        raise SystemExit(f"native load: {count} documents, not {n}")
    call(admin, "DELETE", "/collections/native_load")
    return f"{elapsed:.3f} 0"


lib.main(body, load)
