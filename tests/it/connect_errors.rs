//! An unreachable server and a malformed URL, for every server engine: one line that names the
//! URL and the cause in words and says what to do, exit 2, no `Debug` dump of the client
//! library's errors, and no result file. No server is needed: the port is one nothing listens
//! on (bound, then released).

use std::path::Path;

use crate::common::{files_in, ragdbeval, stderr};

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Runs a tiny bench against `url` and returns its one error line.
fn connect_fails(dir: &Path, db: &str, url: &str) -> String {
    let out = ragdbeval(
        dir,
        &argv![
            "bench --db",
            db,
            "--url",
            url,
            "-q --dataset gen:uniform:n=100,dim=4,queries=5"
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{db} {url}: {err}");
    assert!(
        files_in(&dir.join("results")).is_empty(),
        "{db}: result left"
    );
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{db} {url}: one line expected, got: {err}");
    for dump in ["Os {", "ConnectError(", "Error(", "tonic::", "kind:"] {
        assert!(!err.contains(dump), "{db} {url}: a Debug dump in: {err}");
    }
    // The URL as given, or as the engine normalises it (pgvector names user, host and port).
    let host_port = url
        .split("://")
        .nth(1)
        .unwrap_or(url)
        .trim_end_matches("/db");
    assert!(
        err.contains(url) || err.contains(host_port),
        "{db}: the URL is not named in: {err}"
    );
    err
}

const SERVER_ENGINES: [(&str, &str); 4] = [
    ("qdrant", "http"),
    ("chroma", "http"),
    ("pgvector", "postgresql"),
    ("redis", "redis"),
];

#[test]
fn nothing_listening_is_connection_refused_with_the_url() {
    for (db, scheme) in SERVER_ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("{scheme}://127.0.0.1:{}", closed_port());
        let err = connect_fails(dir.path(), db, &url);
        assert!(err.contains("connection refused"), "{db}: {err}");
        // What to do next: start a server or fix --url.
        assert!(
            err.contains("--url") || err.contains("start"),
            "{db}: no advice in: {err}"
        );
    }
}

#[test]
fn a_malformed_url_is_named_with_its_cause() {
    for (db, url) in [
        ("qdrant", "http://127.0.0.1:99999"),
        ("chroma", "http://127.0.0.1:1:2"),
        ("pgvector", "postgresql://127.0.0.1:notaport/db"),
        ("redis", "redis://127.0.0.1:notaport"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let err = connect_fails(dir.path(), db, url);
        assert!(
            err.to_ascii_lowercase().contains("url"),
            "{db}: the cause does not say the URL is wrong: {err}"
        );
    }
}
