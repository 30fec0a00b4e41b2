//! Per-query results in a JSON Lines sidecar, so every metric can be recomputed later without
//! re-running the engine: one line per timed query with the ids and engine scores it returned,
//! the distances the harness recomputed, and its latency.

use std::io::{BufWriter, Write};
use std::path::Path;

use serde::Serialize;

use super::ResultFileError;
use crate::atomic::AtomicFile;
use crate::types::PointId;

/// One line of the sidecar.
#[derive(Serialize)]
pub struct QueryRecord<'a> {
    pub config: usize,
    pub step: usize,
    pub query: usize,
    /// Latency in microseconds, fractional (nanosecond resolution); `null` in batch mode,
    /// where one call answers every query and no per-query latency exists.
    pub latency_us: Option<f64>,
    pub ids: &'a [PointId],
    pub scores: &'a [f32],
    pub distances: &'a [f32],
    /// This query's recall@K, NDCG@K and reciprocal rank, as the step's means average them;
    /// `null` for a query whose truth is empty (nothing to find: out of the means).
    pub recall: Option<f64>,
    pub ndcg: Option<f64>,
    pub rr: Option<f64>,
    /// Positions (0-based) in `ids` of the results counted as relevant.
    pub relevant: &'a [u32],
    /// The query's relative contrast and local intrinsic dimensionality at K against the
    /// whole dataset ([`crate::groundtruth::difficulty`]); `null` where undefined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rc: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lid: Option<f64>,
}

/// One line of a sidecar read back: which measurement and query, and what the engine
/// returned, best first, with the distances the harness recomputed (`None` where it had none:
/// a point not live at that step, or one that failed its query's filter).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct StoredQuery {
    pub config: usize,
    pub step: usize,
    pub query: usize,
    pub ids: Vec<PointId>,
    pub distances: Vec<Option<f32>>,
}

/// Reads a sidecar line by line, handing each to `each` in file order (a measurement's lines
/// are consecutive and in query order). A line that is not a sidecar record is an error.
pub fn read_queries(
    path: &Path,
    mut each: impl FnMut(StoredQuery) -> Result<(), ResultFileError>,
) -> Result<(), ResultFileError> {
    let file = crate::text::open(path).map_err(|e| ResultFileError::Read {
        path: path.to_path_buf(),
        source: e,
    })?;
    for (n, line) in std::io::BufRead::lines(file).enumerate() {
        let line = line.map_err(|e| ResultFileError::Read {
            path: path.to_path_buf(),
            source: e,
        })?;
        let record: StoredQuery =
            serde_json::from_str(&line).map_err(|e| ResultFileError::Parse {
                path: path.to_path_buf(),
                message: format!("line {}: {e}", n + 1),
            })?;
        each(record)?;
    }
    Ok(())
}

/// Appends records to a temporary file that is renamed into place by [`Sidecar::finish`].
pub struct Sidecar {
    out: Option<BufWriter<std::fs::File>>,
    file: AtomicFile,
    path: std::path::PathBuf,
}

impl Sidecar {
    pub fn create(path: &Path) -> Result<Sidecar, ResultFileError> {
        let werr = |e| ResultFileError::Write {
            path: path.to_path_buf(),
            source: e,
        };
        let mut file = AtomicFile::create(path).map_err(werr)?;
        let handle = file.file().try_clone().map_err(werr)?;
        Ok(Sidecar {
            out: Some(BufWriter::with_capacity(1 << 20, handle)),
            file,
            path: path.to_path_buf(),
        })
    }

    /// A sidecar for a resumed run: starts with the lines of the earlier attempt's sidecar
    /// (the finished file, or the temporary one a killed process left, which is removed)
    /// for which `keep(config, step)` holds, i.e. the steps the result kept.
    pub fn resume(
        path: &Path,
        keep: impl Fn(usize, usize) -> bool,
    ) -> Result<Sidecar, ResultFileError> {
        let werr = |e| ResultFileError::Write {
            path: path.to_path_buf(),
            source: e,
        };
        let leftover = leftover_temp(path);
        let earlier = if path.exists() {
            Some(path.to_path_buf())
        } else {
            leftover.clone()
        };
        let mut sidecar = Sidecar::create(path)?;
        if let (Some(earlier), Some(out)) = (earlier, sidecar.out.as_mut()) {
            #[derive(serde::Deserialize)]
            struct Key {
                config: usize,
                step: usize,
            }
            let file = std::fs::File::open(&earlier).map_err(|e| ResultFileError::Read {
                path: earlier.clone(),
                source: e,
            })?;
            for line in std::io::BufRead::lines(std::io::BufReader::new(file)) {
                let line = line.map_err(|e| ResultFileError::Read {
                    path: earlier.clone(),
                    source: e,
                })?;
                // A line cut off by the kill, or not ours, is dropped with its step.
                if serde_json::from_str::<Key>(&line).is_ok_and(|k| keep(k.config, k.step)) {
                    out.write_all(line.as_bytes()).map_err(werr)?;
                    out.write_all(b"\n").map_err(werr)?;
                }
            }
        }
        if let Some(tmp) = leftover {
            let _ = std::fs::remove_file(tmp);
        }
        Ok(sidecar)
    }

    pub fn write(&mut self, record: &QueryRecord<'_>) -> Result<(), ResultFileError> {
        let path = &self.path;
        let werr = |e| ResultFileError::Write {
            path: path.clone(),
            source: e,
        };
        if let Some(out) = self.out.as_mut() {
            serde_json::to_writer(&mut *out, record).map_err(|e| werr(std::io::Error::other(e)))?;
            out.write_all(b"\n").map_err(werr)?;
        }
        Ok(())
    }

    /// Flushes and moves the file into place (also after a failed run: what was measured stays).
    pub fn finish(mut self) -> Result<(), ResultFileError> {
        let werr = |e| ResultFileError::Write {
            path: self.path.clone(),
            source: e,
        };
        if let Some(mut out) = self.out.take() {
            out.flush().map_err(werr)?;
        }
        self.file.commit().map_err(werr)
    }
}

/// The temporary file a killed process left for `path` ([`AtomicFile`] names it
/// `.<name>.<random>.tmp`), the newest if there are several.
fn leftover_temp(path: &Path) -> Option<std::path::PathBuf> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty())?;
    let prefix = format!(".{}.", path.file_name()?.to_string_lossy());
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(&prefix) && name.ends_with(".tmp")
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .map(|e| e.path())
}
