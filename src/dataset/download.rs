//! Resumable download of registry datasets into the cache, with a progress bar and, where the
//! publisher's server states one, a checksum.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use md5::{Digest, Md5};

use super::DatasetError;
use super::registry::{Crop, KnownDataset, RemoteFile};
use crate::types::{Progress, ProgressUnit};

/// The files of `known` not yet in `cache_dir`, with their full local paths.
pub fn missing(known: &KnownDataset, cache_dir: &Path) -> Vec<(RemoteFile, PathBuf)> {
    known
        .files()
        .into_iter()
        .map(|f| {
            let dest = cache_dir.join(&f.local);
            (f, dest)
        })
        .filter(|(_, dest)| !dest.is_file())
        .collect()
}

/// Downloads every file of `known` that `cache_dir` lacks.
pub fn download(
    known: &KnownDataset,
    cache_dir: &Path,
    progress: &dyn Progress,
) -> Result<(), DatasetError> {
    for (file, dest) in missing(known, cache_dir) {
        fetch(known.name, &file, &dest, progress)?;
    }
    Ok(())
}

/// Downloads one file to `dest`. A partial file `dest.part` from an earlier attempt is resumed
/// with an HTTP range request; the finished file is checked (its S3 ETag, where the registry
/// says the server's ETag is the file's MD5) and renamed into place. A file that fails the
/// check is deleted: resuming it would only extend a wrong file.
///
/// A cropped file ([`Crop`]) asks for its prefix only (`Range: bytes=have-(end-1)`), stops
/// reading at its end even if the server sends the whole file, and has its header checked
/// against the published one and its row count rewritten before it is renamed into place.
pub fn fetch(
    name: &str,
    file: &RemoteFile,
    dest: &Path,
    progress: &dyn Progress,
) -> Result<(), DatasetError> {
    let url = &file.url;
    let mut part_name = dest.as_os_str().to_os_string();
    part_name.push(".part");
    let part = PathBuf::from(part_name);
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir).map_err(|e| DatasetError::io(dir, e))?;
    }
    let mut have = std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0);
    let fail = |message: String| DatasetError::Download {
        name: name.to_string(),
        url: url.clone(),
        message: match file.crop {
            Some(c) => format!(
                "{message} (only bytes 0-{} of it are used, with the row count in its header \
                 set to {})",
                c.bytes - 1,
                c.rows
            ),
            None => message,
        },
        dest: dest.to_path_buf(),
    };
    if let Some(crop) = file.crop {
        if have > crop.bytes {
            // Longer than the crop: not ours to trust, start again.
            std::fs::remove_file(&part).map_err(|e| DatasetError::io(&part, e))?;
            have = 0;
        } else if have == crop.bytes {
            return finish(file, None, &part, dest, &fail);
        }
    }

    let response = request(file, have).map_err(|e| fail(e.to_string()))?;
    let etag = etag_of(&response);
    let status = response.status().as_u16();
    let (resume, total) = match status {
        206 => {
            if let Some(start) = range_start(&response)
                && start != have
            {
                return Err(fail(format!(
                    "asked for the bytes from {have} on, the server sent them from {start}"
                )));
            }
            let rest = content_length(&response);
            (true, file.crop.map(|c| c.bytes).or(rest.map(|r| r + have)))
        }
        // A server that ignores the range sends the whole file: a crop keeps its prefix.
        200 => (
            false,
            file.crop.map(|c| c.bytes).or(content_length(&response)),
        ),
        416 if have > 0 && file.crop.is_none() => {
            // The partial file is already complete.
            return finish(file, etag.as_deref(), &part, dest, &fail);
        }
        other => return Err(fail(format!("server answered HTTP {other}"))),
    };
    let into = PartFile {
        file,
        part: &part,
        fail: &fail,
    };
    receive(&into, response, resume.then_some(have), total, progress)?;
    // An ETag names the whole file, never a crop of it.
    let etag = if file.crop.is_some() { None } else { etag };
    finish(file, etag.as_deref(), &part, dest, &fail)
}

/// Asks for `file`'s bytes from `have` on (up to a crop's end).
fn request(file: &RemoteFile, have: u64) -> Result<ureq::http::Response<ureq::Body>, ureq::Error> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(std::time::Duration::from_secs(20)))
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent.get(&file.url);
    match file.crop {
        Some(crop) => {
            request = request.header("Range", &format!("bytes={have}-{}", crop.bytes - 1));
        }
        None if have > 0 => {
            request = request.header("Range", &format!("bytes={have}-"));
        }
        None => {}
    }
    request.call()
}

/// The partial file a download writes into, and how its failures are told.
struct PartFile<'a> {
    file: &'a RemoteFile,
    part: &'a Path,
    fail: &'a dyn Fn(String) -> DatasetError,
}

/// Writes the answer's body into the partial file, appended to its first `resume_from` bytes
/// when the server resumes (else from scratch), and checks it ends up `total` bytes long when
/// that is known.
fn receive(
    into: &PartFile<'_>,
    response: ureq::http::Response<ureq::Body>,
    resume_from: Option<u64>,
    total: Option<u64>,
    progress: &dyn Progress,
) -> Result<(), DatasetError> {
    let PartFile { file, part, fail } = *into;
    let resume = resume_from.is_some();
    let start = resume_from.unwrap_or(0);
    let mut out = OpenOptions::new()
        .create(true)
        .write(true)
        .append(resume)
        .truncate(!resume)
        .open(part)
        .map_err(|e| DatasetError::io(part, e))?;
    let bar = progress.task(
        &format!("download {}", file.local.display()),
        total,
        ProgressUnit::Bytes,
    );
    let mut done = start;
    bar.set(done);
    // A crop never takes more than its bytes, whatever the server sends.
    let limit = file.crop.map_or(u64::MAX, |c| c.bytes - start);
    let mut body = response.into_body().into_reader().take(limit);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = body.read(&mut buf).map_err(|e| {
            fail(format!(
                "{e} (the partial download is kept; run the same command again to resume)"
            ))
        })?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])
            .map_err(|e| DatasetError::io(part, e))?;
        done += n as u64;
        bar.set(done);
    }
    out.sync_all().map_err(|e| DatasetError::io(part, e))?;
    drop(bar);
    let got = std::fs::metadata(part).map(|m| m.len()).unwrap_or(0);
    if let Some(total) = total
        && got != total
    {
        return Err(fail(format!(
            "got {got} of {total} bytes (the partial download is kept; run again to resume)"
        )));
    }
    Ok(())
}

/// Checks the finished `part` against the server's ETag (when it is an MD5) or, for a crop,
/// its header against the published file's, rewrites a crop's row count, and renames it to
/// `dest`; a mismatch deletes it.
fn finish(
    file: &RemoteFile,
    etag: Option<&str>,
    part: &Path,
    dest: &Path,
    fail: &dyn Fn(String) -> DatasetError,
) -> Result<(), DatasetError> {
    if file.etag_is_md5
        && let Some(expected) = etag
        && !s3_etag_matches(part, expected).map_err(|e| DatasetError::io(part, e))?
    {
        let _ = std::fs::remove_file(part);
        return Err(fail(format!(
            "checksum mismatch: the server's ETag (the file's MD5) is {expected}, the \
             downloaded bytes differ; the partial file {} was deleted, run again to download \
             it afresh",
            part.display()
        )));
    }
    if let Some(crop) = file.crop {
        rewrite_crop_header(part, crop).map_err(|message| {
            let _ = std::fs::remove_file(part);
            fail(format!(
                "{message}; the partial file {} was deleted",
                part.display()
            ))
        })?;
    }
    if let Some(expected) = file.sha256 {
        // Hashed with the cached digest beside it (`.part.sha256`), which moves with the
        // file: loading it then reads the digest instead of hashing again.
        let actual = super::file_sha256(part, &crate::types::Silent)?;
        let sidecar = |p: &Path| {
            let mut name = p.as_os_str().to_os_string();
            name.push(".sha256");
            PathBuf::from(name)
        };
        if actual.eq_ignore_ascii_case(expected) {
            let _ = std::fs::rename(sidecar(part), sidecar(dest));
        } else {
            let _ = std::fs::remove_file(sidecar(part));
            let _ = std::fs::remove_file(part);
            return Err(fail(format!(
                "checksum mismatch: the published SHA-256 is {expected}, the downloaded bytes' \
                 is {actual}; the partial file {} was deleted, run again to download it afresh",
                part.display()
            )));
        }
    }
    std::fs::rename(part, dest).map_err(|e| DatasetError::io(dest, e))
}

/// Checks that a crop starts with the published header (`n` = the published rows, `d` = the
/// dimension; or `n` already rewritten, after an interruption between rewrite and rename) and
/// sets `n` to the crop's rows, as big-ann's `prepare` does.
fn rewrite_crop_header(part: &Path, crop: Crop) -> Result<(), String> {
    use std::io::{Seek, SeekFrom};
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(part)
        .map_err(|e| e.to_string())?;
    let len = f.metadata().map_err(|e| e.to_string())?.len();
    if len != crop.bytes {
        return Err(format!("the crop has {len} bytes, not {}", crop.bytes));
    }
    let mut header = [0u8; 8];
    f.read_exact(&mut header).map_err(|e| e.to_string())?;
    let n = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    let d = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if d != crop.dim || (n != crop.published_rows && n != crop.rows) {
        return Err(format!(
            "the file's header says {n} × {d}, the published file has {} × {}: not the \
             expected file",
            crop.published_rows, crop.dim
        ));
    }
    f.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
    f.write_all(&crop.rows.to_le_bytes())
        .map_err(|e| e.to_string())?;
    f.sync_all().map_err(|e| e.to_string())
}

/// The first byte a 206 answer holds, from its `Content-Range: bytes START-END/TOTAL`.
fn range_start(response: &ureq::http::Response<ureq::Body>) -> Option<u64> {
    let raw = response.headers().get("content-range")?.to_str().ok()?;
    let rest = raw.trim().strip_prefix("bytes")?.trim();
    rest.split('-').next()?.trim().parse().ok()
}

fn etag_of(response: &ureq::http::Response<ureq::Body>) -> Option<String> {
    let raw = response.headers().get("etag")?.to_str().ok()?;
    // A weak ETag (`W/"…"`) promises no byte equality: nothing to check.
    if raw.starts_with("W/") {
        return None;
    }
    Some(raw.trim_matches('"').to_ascii_lowercase())
}

/// Whether `path` has the S3 ETag `expected`: the hex MD5 of the file (single-part upload),
/// or `MD5(MD5(part 1) ‖ … ‖ MD5(part n))-n` for a multipart upload, whose part size is not
/// stated: the sizes VectorDBBench's own check tries (8 MiB, 15 MiB, and the file size over n
/// rounded up to a MiB) are tried in turn. An ETag of any other form cannot be checked and
/// counts as matching.
pub fn s3_etag_matches(path: &Path, expected: &str) -> std::io::Result<bool> {
    let size = std::fs::metadata(path)?.len();
    let hex = |d: &[u8]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let is_md5 = |s: &str| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit());
    match expected.split_once('-') {
        None if is_md5(expected) => Ok(hex(&md5_parts(path, u64::MAX)?[0]) == expected),
        Some((digest, parts)) if is_md5(digest) => {
            let Ok(parts) = parts.parse::<u64>() else {
                return Ok(true);
            };
            if parts == 0 {
                return Ok(true);
            }
            const MIB: u64 = 1 << 20;
            let even = (size / parts).div_ceil(MIB).max(1) * MIB;
            for part_size in [8 * MIB, 15 * MIB, even] {
                if part_size >= size || size.div_ceil(part_size) != parts {
                    continue;
                }
                let digests = md5_parts(path, part_size)?;
                let whole: Vec<u8> = digests.concat();
                if hex(&Md5::digest(&whole)) == digest {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        _ => Ok(true),
    }
}

/// The MD5 of each `part_size` bytes of the file, in order (one digest for `u64::MAX`).
fn md5_parts(path: &Path, part_size: u64) -> std::io::Result<Vec<Vec<u8>>> {
    let mut file = std::fs::File::open(path)?;
    let mut digests = Vec::new();
    let mut hasher = Md5::new();
    let mut in_part = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let want = buf
            .len()
            .min(usize::try_from(part_size - in_part).unwrap_or(usize::MAX));
        let n = file.read(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        in_part += n as u64;
        if in_part == part_size {
            digests.push(hasher.finalize_reset().to_vec());
            in_part = 0;
        }
    }
    if in_part > 0 || digests.is_empty() {
        digests.push(hasher.finalize().to_vec());
    }
    Ok(digests)
}

fn content_length(response: &ureq::http::Response<ureq::Body>) -> Option<u64> {
    response
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 17 MiB + 3 bytes of `i % 251`; digests from Python's hashlib.
    fn sample(dir: &Path) -> PathBuf {
        let path = dir.join("sample.bin");
        let data: Vec<u8> = (0..17 * (1 << 20) + 3).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, data).unwrap();
        path
    }

    #[test]
    fn s3_etags_are_checked_single_and_multipart() {
        let dir = tempfile::tempdir().unwrap();
        let path = sample(dir.path());
        // hashlib.md5(data).hexdigest()
        assert!(s3_etag_matches(&path, "a7f7f66c32fce7fab72affa46af3b2a8").unwrap());
        // md5 of the three 8 MiB parts' digests, "-3" (an upload in 8 MiB parts).
        assert!(s3_etag_matches(&path, "46b5aa5987523198a09f64ca7b8e14c7-3").unwrap());
        // One changed hex digit, or the right digest with the wrong part count, fails.
        assert!(!s3_etag_matches(&path, "a7f7f66c32fce7fab72affa46af3b2a9").unwrap());
        assert!(!s3_etag_matches(&path, "46b5aa5987523198a09f64ca7b8e14c7-4").unwrap());
        // ETags of other forms say nothing about the bytes.
        assert!(s3_etag_matches(&path, "5f3a-1b2c").unwrap());
        assert!(s3_etag_matches(&path, "abc").unwrap());
    }
}
