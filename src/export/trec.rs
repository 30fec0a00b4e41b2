//! TREC run and qrels files, so that ANN search results can be scored by `ragdbeval eval`,
//! trec_eval or any TREC tool, against the exact ground truth as relevance judgments.
//!
//! Conventions, shared by both files so that they meet:
//! - qid: the query's 0-based index in the dataset's test set (after `--max-queries`), in
//!   decimal; the sidecar's `query`.
//! - docid: the point id (a train row; the id the engine stores and returns), in decimal.
//! - Run lines `qid Q0 docid rank score tag`, one per returned result, in the engine's order;
//!   rank counts from 1. A query with no result has no line (the format cannot say "nothing
//!   returned": use `trec_eval -c` to average over every query of the qrels). An id the
//!   engine repeated within one answer is written once, at its first rank (a TREC run cannot
//!   list a document twice), and the ranks after it close up.
//! - score: the negated distance the harness recomputed for the result, so a nearer point
//!   scores higher, except where that would not be strictly below the score ranked above it
//!   (the engine ranked a farther point first, a distance tie, or a result without a
//!   distance: a point not live at that step, or one failing its filter): there the score is
//!   the largest single-precision float strictly below the previous one (trec_eval holds
//!   scores as C floats: a smaller step would be a tie there). Sorting by score descending,
//!   as trec_eval does, therefore gives back exactly the engine's order, whatever trec_eval
//!   does with ties (it has none to break). Each score is a float written exactly.
//! - tag: `ENGINE:BUILD:SEARCH`, the build and search parameters as `name=value` joined by
//!   `,` (`-` for none), then `:FILTER` under `--filter`; whitespace becomes `_`.
//! - Qrels lines `qid 0 docid 1`: the k exact nearest neighbours of each query, relevance 1.

use std::collections::HashSet;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::atomic::AtomicFile;
use crate::groundtruth::GroundTruth;
use crate::metrics::ranking::ranking_scores;
use crate::params::{ParamMap, ParamMapExt};
use crate::results::sidecar::{StoredQuery, read_queries};
use crate::results::{ResultFileError, RunResult};
use crate::types::PointId;

/// Why a TREC file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TrecError {
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
    #[error("{path} is a directory: give a file name")]
    IsDirectory { path: PathBuf },
    #[error(transparent)]
    Sidecar(#[from] ResultFileError),
    #[error("{0}")]
    Invalid(String),
}

/// A score as written: the float's exact value in the shortest decimal that reads back as
/// the same double (and so as the same float, with no double rounding), e.g. `-0.5`.
fn score_text(score: f32) -> String {
    format!("{:?}", f64::from(score))
}

/// Writes one query's results as run lines (module doc), skipping repeated ids.
pub fn write_run_query<W: Write>(
    out: &mut W,
    qid: usize,
    ids: &[PointId],
    distances: &[Option<f32>],
    tag: &str,
) -> io::Result<()> {
    let scores = ranking_scores(distances);
    let mut seen: HashSet<PointId> = HashSet::with_capacity(ids.len());
    let mut rank = 0usize;
    for (id, score) in ids.iter().zip(&scores) {
        if !seen.insert(*id) {
            continue;
        }
        rank += 1;
        writeln!(out, "{qid} Q0 {id} {rank} {} {tag}", score_text(*score))?;
    }
    Ok(())
}

/// Writes the qrels of `truth`: the first `k` true neighbours of every query, relevance 1.
/// Padding (id `PointId::MAX`, a base smaller than the depth) is no point and is left out.
/// Returns the number of lines.
pub fn write_qrels<W: Write>(out: &mut W, truth: &GroundTruth, k: usize) -> io::Result<usize> {
    let mut lines = 0;
    for q in 0..truth.queries() {
        for id in truth.ids_of(q).iter().take(k) {
            if *id == PointId::MAX {
                continue;
            }
            writeln!(out, "{q} 0 {id} 1")?;
            lines += 1;
        }
    }
    Ok(lines)
}

/// Replaces whitespace, which would split a TREC column, by `_`.
fn one_column(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect()
}

/// The run tag of one measurement (module doc).
pub fn run_tag(engine: &str, build: &ParamMap, search: &ParamMap, filter: Option<&str>) -> String {
    let params = |p: &ParamMap| p.label().replace(' ', ",");
    let mut tag = format!("{engine}:{}:{}", params(build), params(search));
    if let Some(f) = filter {
        tag.push(':');
        tag.push_str(f);
    }
    one_column(&tag)
}

/// The file of the `n`-th (1-based) search measurement of a run written to `base`: `base`
/// itself for a run of one measurement, else `base` with `.n` before its extension
/// (`run.trec` → `run.2.trec`; `run` → `run.2`).
pub fn run_path(base: &Path, n: usize, numbered: bool) -> PathBuf {
    if !numbered {
        return base.to_path_buf();
    }
    let stem = base
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match base.extension() {
        Some(ext) => format!("{stem}.{n}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{n}"),
    };
    base.with_file_name(name)
}

/// Fails now, before any work, if `path` cannot be written: it names a directory, or its
/// directory cannot be created or written to. Leaves no file behind (only the directory).
pub fn check_writable(path: &Path) -> Result<(), TrecError> {
    if path.is_dir() {
        return Err(TrecError::IsDirectory {
            path: path.to_path_buf(),
        });
    }
    AtomicFile::create(path).map_err(|source| TrecError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(())
}

/// One TREC file being written: its destination and a buffered writer on its temporary file.
struct Pending {
    path: PathBuf,
    file: AtomicFile,
    out: BufWriter<std::fs::File>,
}

impl Pending {
    fn create(path: PathBuf) -> Result<Pending, TrecError> {
        let werr = |source| TrecError::Write {
            path: path.clone(),
            source,
        };
        let mut file = AtomicFile::create(&path).map_err(werr)?;
        let handle = file.file().try_clone().map_err(werr)?;
        Ok(Pending {
            out: BufWriter::with_capacity(1 << 20, handle),
            file,
            path,
        })
    }

    fn commit(mut self) -> Result<PathBuf, TrecError> {
        let werr = |source| TrecError::Write {
            path: self.path.clone(),
            source,
        };
        self.out.flush().map_err(werr)?;
        self.file.commit().map_err(werr)?;
        Ok(self.path)
    }
}

/// Writes the TREC run files of every search measurement of `result` from its sidecar at
/// `sidecar`: the `n`-th search step (1-based, configurations in order, then their search
/// steps in order: the numbering of `report` and `compare --pair`) goes to
/// [`run_path`]`(base, n, numbered)`. Each file is written atomically. Returns the paths.
pub fn write_runs(
    result: &RunResult,
    sidecar: &Path,
    base: &Path,
    numbered: bool,
) -> Result<Vec<PathBuf>, TrecError> {
    // (config, sidecar step) → (file index, tag), in measurement order.
    let mut keys: Vec<((usize, usize), String)> = Vec::new();
    for (ci, config) in result.configs.iter().enumerate() {
        for step in config.searches() {
            let filter = step.filter.as_ref().map(|f| f.name.as_str());
            keys.push((
                (ci, step.sidecar_step),
                run_tag(
                    &result.engine.name,
                    &config.build_params,
                    &step.search_params,
                    filter,
                ),
            ));
        }
    }
    if keys.len() > 1 && !numbered {
        return Err(TrecError::Invalid(format!(
            "{} search measurements for one TREC run file",
            keys.len()
        )));
    }
    let mut pending: Vec<Pending> = keys
        .iter()
        .enumerate()
        .map(|(i, _)| Pending::create(run_path(base, i + 1, numbered)))
        .collect::<Result<_, _>>()?;
    read_queries(sidecar, |record: StoredQuery| {
        let Some(i) = keys
            .iter()
            .position(|(key, _)| *key == (record.config, record.step))
        else {
            // A line of a measurement the result does not keep (an interrupted step).
            return Ok(());
        };
        let file = &mut pending[i];
        write_run_query(
            &mut file.out,
            record.query,
            &record.ids,
            &record.distances,
            &keys[i].1,
        )
        .map_err(|source| ResultFileError::Write {
            path: file.path.clone(),
            source,
        })
    })?;
    pending.into_iter().map(Pending::commit).collect()
}

/// Writes the qrels of `truth` at depth `k` to `path`, atomically. Returns the line count.
pub fn write_qrels_file(path: &Path, truth: &GroundTruth, k: usize) -> Result<usize, TrecError> {
    let mut file = Pending::create(path.to_path_buf())?;
    let lines = write_qrels(&mut file.out, truth, k).map_err(|source| TrecError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    file.commit()?;
    Ok(lines)
}

#[cfg(test)]
mod tests;
