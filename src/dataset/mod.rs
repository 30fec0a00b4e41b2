//! Datasets: loading, validation, ground truth and identity.
//!
//! Whatever the source (an ann-benchmarks HDF5 file, a TEXMEX directory, a registry name that
//! is downloaded on first use, or a seeded generator), a [`Dataset`] comes out validated:
//! equal dimensions, finite values, a non-empty query set, neighbour ids in range, and ground
//! truth whose distances follow ragdbeval's conventions (recomputed from the vectors, never
//! taken on trust from the file).

mod assemble;
pub mod bigann;
mod direct_write;
pub mod download;
pub mod hdf5;
pub mod judgments;
pub mod lexical;
mod load;
pub mod registry;
pub mod spill;
pub mod spmat;
pub mod texmex;
pub mod text_sets;
mod truth;
pub mod vdbbench;
pub mod wheel;

pub use assemble::{DatasetArrays, assemble};
use load::file_stem;
pub use load::load;
pub use truth::compute_ground_truth;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::distance::Distance;
use crate::groundtruth::GroundTruth;
use crate::types::{ElementType, Progress, ProgressHandle, ProgressUnit, Silent};
use crate::vectors::{Vectors, VectorsError};

/// Everything that can be wrong with a dataset, with the path and what to do.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("dataset file {0} does not exist")]
    NotFound(PathBuf),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Format { path: PathBuf, message: String },
    /// The spec names itself in its message: no path prefix.
    #[error(transparent)]
    Generated(#[from] crate::synthetic::SpecError),
    #[error(
        "{path}: missing `{field}`; expected the ann-benchmarks layout (train, test, neighbors, distances, attribute distance)"
    )]
    MissingField { path: PathBuf, field: String },
    #[error("dimension mismatch: train vectors have {train} dimensions, test vectors {test}")]
    DimMismatch { train: usize, test: usize },
    #[error("the {0} set is empty")]
    Empty(&'static str),
    #[error("{0}")]
    Vectors(#[from] VectorsError),
    #[error(
        "ground truth of query {query} names neighbour {id}, but the train set has only {n} vectors (ids 0..{n})"
    )]
    NeighborOutOfRange { query: usize, id: i64, n: usize },
    #[error("ground truth covers {gt} queries but the test set has {test}")]
    GroundTruthRows { gt: usize, test: usize },
    #[error("the stored ground truth of {dataset} cannot be used: {detail}")]
    BadGroundTruth { dataset: String, detail: String },
    #[error(
        "unknown dataset `{name}`: not a file or directory, not a `gen:` spec, and not a known name. Known: {known}. Run `ragdbeval dataset list`."
    )]
    Unknown { name: String, known: String },
    #[error(
        "could not download {name} from {url}: {message}.\n  Without network access, fetch that URL elsewhere and place the file at {dest}."
    )]
    Download {
        name: String,
        url: String,
        message: String,
        dest: PathBuf,
    },
    #[error(
        "dataset {name} is not in the cache and --offline forbids downloading it; drop --offline, or fetch these files elsewhere and place each at its path:{files}"
    )]
    Offline { name: String, files: String },
    #[error("--limit {limit} is larger than the train set ({n} vectors)")]
    BadLimit { limit: usize, n: usize },
    #[error("k = {k} needs at least one train vector and at most 1000 neighbours")]
    BadK { k: usize },
}

impl DatasetError {
    pub fn io(path: &Path, source: std::io::Error) -> DatasetError {
        DatasetError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Where the ground truth came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroundTruthSource {
    /// Stored in the file; distances recomputed by ragdbeval.
    File,
    /// Computed by ragdbeval's exact kernel.
    Computed,
    /// Not loaded and not computed (`LoadOptions::compute_missing_gt` was off).
    Missing,
}

/// A loaded, validated dataset. Held once and borrowed by every phase.
#[derive(Debug)]
pub struct Dataset {
    /// Short name (registry name, file stem or generated spec name).
    pub name: String,
    /// What the user gave (path, registry name or `gen:` spec).
    pub source: String,
    pub distance: Distance,
    /// Shared, never copied: in-process engines may keep references to it.
    pub train: Arc<Vectors>,
    pub test: Vectors,
    pub ground_truth: GroundTruth,
    pub ground_truth_source: GroundTruthSource,
    /// SHA-256 of the source file, or for several files the SHA-256 of their lower-case hex
    /// SHA-256 digests concatenated in the order of `files`; of the generated vectors for a
    /// `gen:` spec.
    pub sha256: String,
    /// Each source file with its size and SHA-256, in the order `sha256` hashes them (empty
    /// for a generated dataset).
    pub files: Vec<FileDigest>,
    /// Train vectors kept by `--limit`, if any.
    pub limit: Option<usize>,
    /// What loading changed or doubted that a result must carry (e.g. integer components
    /// rounded to f32).
    pub warnings: Vec<String>,
    /// Point attributes the source carries (an HDF5 file's `attributes` group), one row per
    /// kept train vector.
    pub attributes: Option<crate::filter::Attributes>,
    /// What the source's components are (`uint8` for a `.u8bin` file, ...). The vectors are
    /// held as `f32` whatever it is; every 8-bit integer is exact there.
    pub element_type: ElementType,
    /// Relevance judgments of the retrieval task (a directory's `qrels.txt`), if it has them.
    pub judgments: Option<judgments::TaskJudgments>,
    /// Sparse vectors (and texts) beside the dense ones, for sparse and hybrid runs (a
    /// directory's `sparse/` and `texts/`).
    pub lexical: Option<lexical::LexicalSet>,
}

/// How to find and prepare a dataset.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Download cache directory.
    pub cache_dir: PathBuf,
    /// Never touch the network.
    pub offline: bool,
    /// Keep only the first N train vectors and recompute the ground truth.
    pub limit: Option<usize>,
    /// Keep only the first Q test vectors.
    pub max_queries: Option<usize>,
    /// Ground-truth depth to compute when it must be computed.
    pub gt_k: usize,
    /// Override the distance (TEXMEX directories carry none; they default to euclidean).
    pub distance: Option<Distance>,
    /// Compute ground truth when the source has none (off for `dataset gt`, which computes
    /// and times it itself).
    pub compute_missing_gt: bool,
    /// No progress at all, whatever `progress` is.
    pub quiet: bool,
    /// Where downloads, hashing and ground truth report progress (silent by default).
    pub progress: ProgressHandle,
    /// Decoded train bytes above which the rows are written to a memory-mapped spill file
    /// instead of memory ([`spill`]); `None`: [`spill::threshold`].
    pub spill_above: Option<u64>,
    /// Read a TEXMEX `.fvecs` train set in place from its mapped file instead of copying it
    /// (see [`texmex::read_vectors_in_place`]): for a caller that reads the rows one at a
    /// time or through `Vectors::strided` (`dataset gt`). Off by default: anything that asks
    /// for the rows as one slice would make the copy later, perhaps inside a timed phase.
    pub train_in_place: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            cache_dir: default_cache_dir(),
            offline: false,
            limit: None,
            max_queries: None,
            gt_k: 100,
            distance: None,
            compute_missing_gt: true,
            quiet: true,
            progress: ProgressHandle::silent(),
            spill_above: None,
            train_in_place: false,
        }
    }
}

/// `$RAGDBEVAL_DATA_DIR`, else `datasets/cache` under the current directory.
pub fn default_cache_dir() -> PathBuf {
    std::env::var_os("RAGDBEVAL_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("datasets").join("cache"))
}

impl LoadOptions {
    /// Where the train rows of the dataset with this identity spill to.
    pub fn spill_target<'a>(&'a self, identity: &'a str) -> spill::SpillTarget<'a> {
        spill::SpillTarget {
            cache_dir: &self.cache_dir,
            identity,
            limit: self.limit,
            above: self.spill_above.unwrap_or_else(spill::threshold),
            progress: self.observer(),
        }
    }

    /// The observer to report to: none when `quiet`.
    fn observer(&self) -> &dyn Progress {
        if self.quiet { &Silent } else { &*self.progress }
    }
}

/// Name of the embedded default dataset.
pub const DEMO: &str = "demo";

/// One source file of a dataset, as the result records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct FileDigest {
    /// The path as loaded.
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// The identity of a dataset made of `paths` (in this order): the file's SHA-256 for one
/// file, else the SHA-256 of the files' lower-case hex digests concatenated; with each file's
/// digest.
pub fn digest_files<P: AsRef<Path>>(
    paths: &[P],
    progress: &dyn Progress,
) -> Result<(String, Vec<FileDigest>), DatasetError> {
    let mut digests = Vec::with_capacity(paths.len());
    for p in paths {
        let p = p.as_ref();
        let sha256 = file_sha256(p, progress)?;
        let bytes = std::fs::metadata(p)
            .map_err(|e| DatasetError::io(p, e))?
            .len();
        digests.push(FileDigest {
            path: p.display().to_string(),
            bytes,
            sha256,
        });
    }
    let identity = match digests.as_slice() {
        [one] => one.sha256.clone(),
        many => {
            let mut hasher = Sha256::new();
            for d in many {
                hasher.update(d.sha256.as_bytes());
            }
            hex(&hasher.finalize())
        }
    };
    Ok((identity, digests))
}

/// The one file of a directory dataset found for `role`, if any. Two candidates are an error
/// naming both: sort order would otherwise settle it, silently benchmarking a set the user
/// may not have meant.
pub(super) fn one_per_role(
    dir: &Path,
    role: &str,
    found: Vec<PathBuf>,
) -> Result<Option<PathBuf>, DatasetError> {
    if found.len() > 1 {
        let list: Vec<String> = found.iter().map(|p| p.display().to_string()).collect();
        return Err(DatasetError::Format {
            path: dir.to_path_buf(),
            message: format!(
                "more than one {role} file: {}; keep one per directory",
                list.join(", ")
            ),
        });
    }
    Ok(found.into_iter().next())
}

/// SHA-256 of a file, cached next to it (`<file>.sha256`, keyed by size and mtime) because
/// hashing a multi-GB dataset on every run would cost seconds.
pub fn file_sha256(path: &Path, progress: &dyn Progress) -> Result<String, DatasetError> {
    let meta = std::fs::metadata(path).map_err(|e| DatasetError::io(path, e))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let key = format!("{} {}", meta.len(), mtime);
    let mut cache_name = path.as_os_str().to_os_string();
    cache_name.push(".sha256");
    let cache = PathBuf::from(cache_name);
    if let Ok(text) = std::fs::read_to_string(&cache)
        && let Some((k, hash)) = text.trim().rsplit_once(' ')
        && k == key
    {
        return Ok(hash.to_string());
    }
    let mut file = std::fs::File::open(path).map_err(|e| DatasetError::io(path, e))?;
    // Small files hash in well under a second: no bar for them.
    let bar = if meta.len() < 64 << 20 {
        Silent.task("sha256", None, ProgressUnit::Bytes)
    } else {
        progress.task("sha256", Some(meta.len()), ProgressUnit::Bytes)
    };
    let mut done = 0u64;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| DatasetError::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        done += n as u64;
        bar.set(done);
    }
    drop(bar);
    let hash = hex(&hasher.finalize());
    // A read-only dataset directory is fine: the cache is an optimisation only.
    let _ = crate::atomic::write_atomic(&cache, format!("{key} {hash}\n").as_bytes());
    Ok(hash)
}

/// `path` mapped read-only into memory.
pub(super) fn map_file(path: &Path) -> Result<memmap2::Mmap, DatasetError> {
    let file = std::fs::File::open(path).map_err(|e| DatasetError::io(path, e))?;
    // SAFETY: the map is read-only and private to this process; like every input of a
    // benchmark, the file must not be changed while it runs (a truncated file would make
    // reading it fault, as with any mapped file).
    unsafe { memmap2::Mmap::map(&file) }.map_err(|e| DatasetError::io(path, e))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests;
