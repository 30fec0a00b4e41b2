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
