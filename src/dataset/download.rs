//! Resumable download of registry datasets into the cache, with a progress bar.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::path::Path;

use super::DatasetError;
use super::registry::KnownDataset;
use crate::types::{Progress, ProgressUnit};

/// Downloads `known` to `dest`. A partial file `dest.part` from an earlier attempt is resumed
/// with an HTTP range request; the finished file is renamed into place.
pub fn download(
    known: &KnownDataset,
    dest: &Path,
    progress: &dyn Progress,
) -> Result<(), DatasetError> {
    let url = known.url();
    let part = dest.with_extension("hdf5.part");
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir).map_err(|e| DatasetError::io(dir, e))?;
    }
    let have = std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0);
    let fail = |message: String| DatasetError::Download {
        name: known.name.to_string(),
        url: url.clone(),
        message,
        dest: dest.to_path_buf(),
    };

    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(std::time::Duration::from_secs(20)))
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent.get(&url);
    if have > 0 {
        request = request.header("Range", &format!("bytes={have}-"));
    }
    let response = request.call().map_err(|e| fail(e.to_string()))?;
    let status = response.status().as_u16();
    let (resume, total) = match status {
        206 => {
            let rest = content_length(&response);
            (true, rest.map(|r| r + have))
        }
        200 => (false, content_length(&response)),
        416 if have > 0 => {
            // The partial file is already complete.
            std::fs::rename(&part, dest).map_err(|e| DatasetError::io(dest, e))?;
            return Ok(());
        }
        other => return Err(fail(format!("server answered HTTP {other}"))),
    };
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .append(resume)
        .truncate(!resume)
        .open(&part)
        .map_err(|e| DatasetError::io(&part, e))?;
    let start = if resume { have } else { 0 };
    let bar = progress.task(
        &format!("download {}", known.name),
        total,
        ProgressUnit::Bytes,
    );
    let mut done = start;
    bar.set(done);
    let mut body = response.into_body().into_reader();
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
        file.write_all(&buf[..n])
            .map_err(|e| DatasetError::io(&part, e))?;
        done += n as u64;
        bar.set(done);
    }
    file.sync_all().map_err(|e| DatasetError::io(&part, e))?;
    drop(bar);
    let got = std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0);
    if let Some(total) = total
        && got != total
    {
        return Err(fail(format!(
            "got {got} of {total} bytes (the partial download is kept; run again to resume)"
        )));
    }
    std::fs::rename(&part, dest).map_err(|e| DatasetError::io(dest, e))?;
    Ok(())
}

fn content_length(response: &ureq::http::Response<ureq::Body>) -> Option<u64> {
    response
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}
