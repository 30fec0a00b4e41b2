//! Dataset download against a local HTTP server: a cut-off transfer keeps its partial file,
//! the next attempt resumes it with a range request, and the result loads.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::{fixture, ragdbeval, stderr, stdout};

/// Serves `body` at any path. The first request is cut off after `cut` bytes (while promising
/// the whole length); later requests honour `Range: bytes=N-`. Returns the port and a counter
/// of range requests seen.
fn serve(body: Vec<u8>, cut: usize) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let ranges = Arc::new(AtomicUsize::new(0));
    let seen = ranges.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut from = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("range: bytes=") {
                    from = v.trim().trim_end_matches('-').parse().unwrap_or(0);
                    seen.fetch_add(1, Ordering::Relaxed);
                }
            }
            if n == 0 {
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body[..cut]);
            } else if from > 0 {
                let rest = &body[from..];
                let head = format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {}-{}/{}\r\nConnection: close\r\n\r\n",
                    rest.len(),
                    from,
                    body.len() - 1,
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(rest);
            } else {
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body);
            }
        }
    });
    (port, ranges)
}

#[test]
fn interrupted_download_resumes() {
    let body = std::fs::read(fixture("tiny-h5py-euclidean.hdf5")).unwrap();
    let (port, ranges) = serve(body.clone(), 5000);
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ragdbeval"))
            .args(args)
            .current_dir(dir.path())
            .env("RAGDBEVAL_DATA_DIR", dir.path().join("cache"))
            .env("RAGDBEVAL_DATASET_URL", format!("http://127.0.0.1:{port}"))
            .output()
            .unwrap()
    };
    let first = run(&["dataset", "download", "sift1m", "-q"]);
    assert!(!first.status.success());
    let err = stderr(&first);
    assert!(err.contains("partial download is kept"), "{err}");
    let part = dir.path().join("cache/sift-128-euclidean.hdf5.part");
    assert_eq!(std::fs::metadata(&part).unwrap().len(), 5000);

    let second = run(&["dataset", "download", "sift1m", "-q"]);
    assert!(second.status.success(), "{}", stderr(&second));
    assert_eq!(
        ranges.load(Ordering::Relaxed),
        1,
        "the second attempt must resume"
    );
    let done = dir.path().join("cache/sift-128-euclidean.hdf5");
    assert_eq!(std::fs::read(&done).unwrap(), body);
    assert!(!part.exists());

    // The cached file is now used by name, offline.
    let list = stdout(&ragdbeval(dir.path(), &["dataset", "list"]));
    assert!(
        list.lines()
            .any(|l| l.starts_with("sift-128-euclidean") && l.contains("yes")),
        "{list}"
    );
}
