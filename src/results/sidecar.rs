//! Per-query results in a JSON Lines sidecar, so every metric can be recomputed later without
//! re-running the engine: one line per timed query with the ids and engine scores it returned,
//! the distances the harness recomputed, and its latency.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

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
///
/// Lines reach the disk at [`Sidecar::sync`], which the runner calls before saving the
/// result that keeps them, and count once [`Sidecar::keep`] records that the result was
/// saved. `finish` leaves exactly the kept lines: the result never names a line that is not
/// on disk, and the sidecar never holds a line of a step the result does not keep. A process
/// killed at any moment leaves the temporary file with every kept line in it, for
/// `bench --resume`.
pub struct Sidecar {
    out: BufWriter<File>,
    file: AtomicFile,
    path: PathBuf,
    /// Bytes handed to `out`.
    written: u64,
    /// Bytes flushed and synced by the last [`Sidecar::sync`].
    synced: u64,
    /// Bytes of the lines the saved result keeps.
    kept: u64,
}

impl Sidecar {
    pub fn create(path: &Path) -> Result<Sidecar, ResultFileError> {
        let werr = |e| ResultFileError::Write {
            path: path.to_path_buf(),
            source: e,
        };
        let mut file = AtomicFile::create(path).map_err(werr)?;
        let handle = file.file().try_clone().map_err(werr)?;
        // The temporary file's name must outlive a power loss, as its lines will.
        crate::atomic::sync_parent(path).map_err(werr)?;
        Ok(Sidecar {
            out: BufWriter::with_capacity(1 << 20, handle),
            file,
            path: path.to_path_buf(),
            written: 0,
            synced: 0,
            kept: 0,
        })
    }

    /// A sidecar for a resumed run: starts with the lines of `source` (the earlier attempt's
    /// sidecar, see [`recover`](super::run_files::recover)) for which `keep(config, step)`
    /// holds, i.e. the steps the result kept. The earlier files stay until this one is
    /// finished in their place.
    pub fn resume(
        path: &Path,
        source: Option<&Path>,
        keep: impl Fn(usize, usize) -> bool,
    ) -> Result<Sidecar, ResultFileError> {
        let mut sidecar = Sidecar::create(path)?;
        if let Some(source) = source {
            let file = File::open(source).map_err(|e| ResultFileError::Read {
                path: source.to_path_buf(),
                source: e,
            })?;
            for line in std::io::BufRead::split(std::io::BufReader::new(file), b'\n') {
                let line = line.map_err(|e| ResultFileError::Read {
                    path: source.to_path_buf(),
                    source: e,
                })?;
                // A line cut off by a kill, or damaged, is dropped (its step is measured
                // again: see `recover`).
                if serde_json::from_slice::<Key>(&line).is_ok_and(|k| keep(k.config, k.step)) {
                    sidecar.write_line(&line)?;
                }
            }
        }
        sidecar.sync()?;
        sidecar.keep();
        Ok(sidecar)
    }

    pub fn write(&mut self, record: &QueryRecord<'_>) -> Result<(), ResultFileError> {
        let line = serde_json::to_vec(record).map_err(|e| self.werr(std::io::Error::other(e)))?;
        self.write_line(&line)
    }

    fn write_line(&mut self, line: &[u8]) -> Result<(), ResultFileError> {
        let written = self
            .out
            .write_all(line)
            .and_then(|()| self.out.write_all(b"\n"));
        written.map_err(|e| self.werr(e))?;
        self.written += line.len() as u64 + 1;
        Ok(())
    }

    /// Puts every line written so far on disk (flushed and synced).
    pub fn sync(&mut self) -> Result<(), ResultFileError> {
        if self.synced == self.written {
            return Ok(());
        }
        let synced = self
            .out
            .flush()
            .and_then(|()| self.out.get_ref().sync_data());
        synced.map_err(|e| self.werr(e))?;
        self.synced = self.written;
        Ok(())
    }

    /// Records that the result keeping every line synced so far was saved.
    pub fn keep(&mut self) {
        self.kept = self.synced;
    }

    /// Moves the file into place holding the kept lines (also after a failed run: what was
    /// measured stays); lines of a step the result does not keep are dropped. If that fails,
    /// the temporary file stays, with the kept lines, for `bench --resume`.
    pub fn finish(self) -> Result<(), ResultFileError> {
        let Sidecar {
            out,
            file,
            path,
            kept,
            ..
        } = self;
        let werr = |source| ResultFileError::Write {
            path: path.clone(),
            source,
        };
        // The buffer holds only lines after the last sync: never kept.
        let (handle, _unkept) = out.into_parts();
        if let Err(e) = handle.set_len(kept) {
            let left = file.leave();
            return Err(werr(with_leftover(e, left.as_deref())));
        }
        file.commit_or_leave()
            .map_err(|(e, left)| werr(with_leftover(e, left.as_deref())))?;
        // What killed attempts left is superseded now.
        for tmp in crate::atomic::leftover_temps(&path) {
            let _ = std::fs::remove_file(tmp);
        }
        Ok(())
    }

    fn werr(&self, source: std::io::Error) -> ResultFileError {
        ResultFileError::Write {
            path: self.path.clone(),
            source,
        }
    }
}

/// An I/O error that says where the lines written so far stay.
fn with_leftover(e: std::io::Error, left: Option<&Path>) -> std::io::Error {
    match left {
        Some(tmp) => std::io::Error::new(
            e.kind(),
            format!(
                "{e}; the lines kept so far are in {}, where `bench --resume` finds them",
                tmp.display()
            ),
        ),
        None => e,
    }
}

/// The measurement a sidecar line belongs to.
#[derive(serde::Deserialize)]
struct Key {
    config: usize,
    step: usize,
}

/// What a sidecar on disk holds: its lines per (config, step), and how many of its lines
/// could not be read (cut off by a kill, or damaged).
#[derive(Debug, Clone)]
pub struct SidecarSurvey {
    pub path: PathBuf,
    pub lines: HashMap<(usize, usize), usize>,
    pub unreadable: usize,
}

/// Counts the lines of the sidecar at `path` per measurement.
pub fn survey(path: &Path) -> Result<SidecarSurvey, ResultFileError> {
    let read = |e| ResultFileError::Read {
        path: path.to_path_buf(),
        source: e,
    };
    let file = File::open(path).map_err(read)?;
    let mut out = SidecarSurvey {
        path: path.to_path_buf(),
        lines: HashMap::new(),
        unreadable: 0,
    };
    for line in std::io::BufRead::split(std::io::BufReader::new(file), b'\n') {
        let line = line.map_err(read)?;
        match serde_json::from_slice::<Key>(&line) {
            Ok(k) => *out.lines.entry((k.config, k.step)).or_default() += 1,
            Err(_) => out.unreadable += 1,
        }
    }
    Ok(out)
}

/// The sidecars earlier attempts may have left for `path`, newest first: the finished file,
/// and the temporary files of runs that were killed or could not finish.
pub fn earlier_files(path: &Path) -> Vec<PathBuf> {
    let mut files = crate::atomic::leftover_temps(path);
    if path.is_file() {
        files.push(path.to_path_buf());
    }
    let modified = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    files.sort_by_key(|p| std::cmp::Reverse(modified(p)));
    files
}
