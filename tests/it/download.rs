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

/// Serves several files by path, each with an `ETag` (its MD5, or `wrong_etag` for the file so
/// named), honouring `Range: bytes=N-`. The first request for `cut.0` is cut off after
/// `cut.1` bytes.
fn serve_files(
    files: Vec<(String, Vec<u8>)>,
    wrong_etag: Option<&'static str>,
    cut: (&'static str, usize),
) -> u16 {
    use md5::{Digest, Md5};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut cut_done = false;
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut path, mut from) = (String::new(), 0usize);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(rest) = line.strip_prefix("GET ") {
                    path = rest.split(' ').next().unwrap_or("").to_string();
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("range: bytes=") {
                    from = v.trim().trim_end_matches('-').parse().unwrap_or(0);
                }
            }
            let Some((name, body)) = files.iter().find(|(n, _)| path.ends_with(n.as_str())) else {
                let _ = stream.write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                continue;
            };
            let etag = match wrong_etag {
                Some(w) if name.ends_with(w) => "0123456789abcdef0123456789abcdef".to_string(),
                _ => Md5::digest(body)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect(),
            };
            let rest = &body[from.min(body.len())..];
            let status = if from > 0 {
                "206 Partial Content"
            } else {
                "200 OK"
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nETag: \"{etag}\"\r\nConnection: close\r\n\r\n",
                rest.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let send = if !cut_done && name.ends_with(cut.0) && from == 0 {
                cut_done = true;
                &rest[..cut.1.min(rest.len())]
            } else {
                rest
            };
            let _ = stream.write_all(send);
        }
    });
    port
}

/// The bytes of a small VectorDBBench directory (train, test, neighbours).
fn vectordbbench_files() -> Vec<(String, Vec<u8>)> {
    let tmp = tempfile::tempdir().unwrap();
    let ds = ragdbeval::dataset::load(
        "gen:uniform:n=2000,dim=8,queries=9,seed=2,distance=angular",
        &ragdbeval::dataset::LoadOptions {
            gt_k: 10,
            ..Default::default()
        },
    )
    .unwrap();
    let ids: Vec<i64> = ds.ground_truth.ids.iter().map(|&i| i as i64).collect();
    ragdbeval::dataset::vdbbench::write_dir(tmp.path(), &ds.train, &ds.test, Some((10, &ids)))
        .unwrap();
    ["train.parquet", "test.parquet", "neighbors.parquet"]
        .iter()
        .map(|f| {
            let name = format!("openai_small_50k/{f}");
            (name, std::fs::read(tmp.path().join(f)).unwrap())
        })
        .collect()
}

#[test]
fn vectordbbench_entries_download_resume_and_check_etags() {
    let files = vectordbbench_files();
    let run = |port: u16, dir: &std::path::Path, args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ragdbeval"))
            .args(args)
            .current_dir(dir)
            .env("RAGDBEVAL_DATA_DIR", dir.join("cache"))
            .env("RAGDBEVAL_DATASET_URL", format!("http://127.0.0.1:{port}"))
            .output()
            .unwrap()
    };

    // Offline: the error lists every file with the URL to fetch it from and where it goes.
    let dir = tempfile::tempdir().unwrap();
    let offline = run(
        1,
        dir.path(),
        &["bench", "--dataset", "openai50k", "--offline"],
    );
    assert_eq!(offline.status.code(), Some(2));
    let err = stderr(&offline);
    for f in ["train.parquet", "test.parquet", "neighbors.parquet"] {
        assert!(
            err.contains(&format!("/openai_small_50k/{f} -> "))
                && err.contains(&format!("cache/openai_small_50k/{f}")),
            "{err}"
        );
    }

    // A cut-off train file is resumed; every file's ETag is checked; the set loads and runs.
    let port = serve_files(files.clone(), None, ("train.parquet", 3000));
    let first = run(
        port,
        dir.path(),
        &["dataset", "download", "openai50k", "-q"],
    );
    assert!(!first.status.success());
    assert!(
        stderr(&first).contains("partial download is kept"),
        "{}",
        stderr(&first)
    );
    let second = run(
        port,
        dir.path(),
        &["dataset", "download", "openai50k", "-q"],
    );
    assert!(second.status.success(), "{}", stderr(&second));
    for (name, body) in &files {
        assert_eq!(
            &std::fs::read(dir.path().join("cache").join(name)).unwrap(),
            body
        );
    }
    let bench = run(
        port,
        dir.path(),
        &[
            "bench",
            "--db",
            "exact",
            "--dataset",
            "openai50k",
            "-k",
            "10",
            "--name",
            "o",
            "-q",
        ],
    );
    assert!(bench.status.success(), "{}", stderr(&bench));
    let result = std::fs::read_to_string(dir.path().join("results/o.json")).unwrap();
    assert!(result.contains("\"recall\": 1.0"), "{result}");

    // A file whose bytes do not match the server's ETag is deleted, and the error says so.
    let dir = tempfile::tempdir().unwrap();
    let port = serve_files(files, Some("test.parquet"), ("none", 0));
    let bad = run(
        port,
        dir.path(),
        &["dataset", "download", "openai50k", "-q"],
    );
    assert_eq!(bad.status.code(), Some(2));
    let err = stderr(&bad);
    assert!(
        err.contains("checksum mismatch") && err.contains("was deleted"),
        "{err}"
    );
    let cache = dir.path().join("cache/openai_small_50k");
    assert!(
        cache.join("train.parquet").is_file(),
        "finished files are kept"
    );
    assert!(!cache.join("test.parquet").exists());
    assert!(!cache.join("test.parquet.part").exists());
}
