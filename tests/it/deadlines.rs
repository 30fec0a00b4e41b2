//! A server that accepts the connection and never answers must not hang a run (
//! class 3): every server engine, pointed at a listener that accepts and stays silent, fails
//! within its deadline with one error line naming the engine. These need no real server, so
//! they always run.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use crate::common::{files_in, ragdbeval, stderr};

/// A listener that accepts every connection and never writes a byte; connections are kept
/// open (dropping them would close the socket and give the client an answer).
fn silent_listener() -> (u16, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let handle = std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
            if held.len() > 64 {
                break;
            }
        }
    });
    (port, handle)
}

fn fails_within_deadline(engine: &str, url: &str) {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = ragdbeval(
        dir.path(),
        &[
            "bench",
            "--db",
            engine,
            "--url",
            url,
            "--timeout",
            "2",
            "-q",
            "--warmup",
            "0",
            "--runbook",
            "build-search",
            "--dataset",
            "gen:uniform:n=200,dim=8,queries=5",
        ],
    );
    let took = started.elapsed();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{engine}: {err}");
    assert!(
        took < Duration::from_secs(20),
        "{engine} took {took:?}: {err}"
    );
    assert!(err.starts_with("error: "), "{engine}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{engine}: one line: {err}"
    );
    assert!(err.contains(engine), "{engine} named: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("os error 11"), "say what EAGAIN means: {err}");
    assert!(
        files_in(&dir.path().join("results")).is_empty(),
        "{engine}: no result file"
    );
}

#[test]
fn pgvector_handshake_has_a_deadline() {
    let (port, _l) = silent_listener();
    fails_within_deadline(
        "pgvector",
        &format!("postgres://postgres@127.0.0.1:{port}/x"),
    );
}

#[test]
fn redis_has_a_deadline() {
    let (port, _l) = silent_listener();
    fails_within_deadline("redis", &format!("redis://127.0.0.1:{port}"));
}

#[test]
fn chroma_has_a_deadline() {
    let (port, _l) = silent_listener();
    fails_within_deadline("chroma", &format!("http://127.0.0.1:{port}"));
}

#[test]
fn qdrant_has_a_deadline() {
    let (port, _l) = silent_listener();
    fails_within_deadline("qdrant", &format!("http://127.0.0.1:{port}"));
}
