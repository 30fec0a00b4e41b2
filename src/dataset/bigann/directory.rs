//! A big-ann dataset directory: its files found by role, and loaded as a [`Dataset`] (only
//! the rows `--limit` / `--max-queries` keep are read).

use std::path::{Path, PathBuf};

use super::{ElementType, VectorSource, bad, map_vectors, open, read_truth, read_vectors};
use crate::dataset::{Dataset, DatasetArrays, DatasetError, LoadOptions, assemble, file_stem};
use crate::distance::Distance;

/// The files of a big-ann dataset directory.
#[derive(Debug, Clone)]
pub struct BigannFiles {
    pub base: PathBuf,
    pub base_type: ElementType,
    pub query: PathBuf,
    pub query_type: ElementType,
    pub groundtruth: Option<PathBuf>,
}

impl BigannFiles {
    /// (role, path, element type or None for the ground truth), in load order.
    pub fn roles(&self) -> Vec<(&'static str, &Path, Option<ElementType>)> {
        let mut out = vec![
            ("base", self.base.as_path(), Some(self.base_type)),
            ("query", self.query.as_path(), Some(self.query_type)),
        ];
        if let Some(gt) = &self.groundtruth {
            out.push(("ground truth", gt.as_path(), None));
        }
        out
    }
}

/// Whether a file name is a ground-truth file: `*.ibin` (`GT.public.1B.ibin`,
/// `groundtruth.public.10K.ibin`), or a `gt*` / `*groundtruth*` file of another extension
/// (the subsets' `GT_10M/bigann-10M` must be renamed).
fn is_truth_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".ibin") || lower.starts_with("gt") || lower.contains("groundtruth")
}

/// Finds the big-ann files in `dir`: None if it holds no `.fbin`, `.u8bin` or `.i8bin` file
/// (then it may be a TEXMEX directory). The base file is the vector file whose name contains
/// `base`, the queries the one containing `query` (not `learn`: Text-to-Image's
/// `query.learn.50M.fbin` is training data, not the queries). Two candidates for one role are
/// an error listing them.
pub fn find_files(dir: &Path) -> Result<Option<BigannFiles>, DatasetError> {
    let entries = std::fs::read_dir(dir).map_err(|e| DatasetError::io(dir, e))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    let mut any_vectors = false;
    let mut base = Vec::new();
    let mut query = Vec::new();
    let mut gt = Vec::new();
    for path in paths {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        // Hidden files are temporaries (an interrupted convert); `.sha256` files are the hash
        // cache ragdbeval writes next to each file it hashes.
        if name.starts_with('.') || name.ends_with(".sha256") || !path.is_file() {
            continue;
        }
        match super::file_type(&path) {
            Some(elem) => {
                any_vectors = true;
                if name.contains("base") {
                    base.push((path, elem));
                } else if name.contains("query") && !name.contains("learn") {
                    query.push((path, elem));
                }
            }
            None if is_truth_name(&name) => gt.push(path),
            None => {}
        }
    }
    if !any_vectors {
        return Ok(None);
    }
    let one = |role: &str, found: Vec<PathBuf>| crate::dataset::one_per_role(dir, role, found);
    let typed = |role: &str, found: Vec<(PathBuf, ElementType)>| {
        let elem = found.first().map(|f| f.1);
        one(role, found.into_iter().map(|f| f.0).collect()).map(|p| p.zip(elem))
    };
    match (
        typed("base", base)?,
        typed("query", query)?,
        one("ground-truth", gt)?,
    ) {
        (Some((base, base_type)), Some((query, query_type)), groundtruth) => {
            Ok(Some(BigannFiles {
                base,
                base_type,
                query,
                query_type,
                groundtruth,
            }))
        }
        _ => Err(bad(
            dir,
            "a big-ann-benchmarks directory needs a *base*.fbin (or .u8bin, .i8bin) file and a \
             *query*.fbin (or .u8bin, .i8bin) file"
                .into(),
        )),
    }
}

/// Loads a big-ann directory: only the rows `--limit` and `--max-queries` keep are read. The
/// files carry no metric: `--distance`, else the `distance` of an `embed.json` beside them
/// (what `ragdbeval embed` computed the truth with), else euclidean; a stored truth is taken
/// to be for that metric (the spot check in [`assemble`] refuses one that is not).
pub(in crate::dataset) fn load(
    source: &str,
    dir: &Path,
    files: &BigannFiles,
    opts: &LoadOptions,
) -> Result<Dataset, DatasetError> {
    let paths: Vec<&Path> = files.roles().into_iter().map(|(_, p, _)| p).collect();
    let (sha256, digests) = crate::dataset::digest_files(&paths, opts.observer())?;
    let (reader, len) = open(&files.base)?;
    let base = VectorSource::open(reader, len, &files.base, files.base_type)?;
    let rows_in_file = base.header.rows;
    // Refused before a billion rows are read, with the figure `assemble` would give.
    if let Some(limit) = opts.limit
        && (limit == 0 || limit > rows_in_file)
    {
        return Err(DatasetError::BadLimit {
            limit,
            n: rows_in_file,
        });
    }
    // A float32 base is mapped, not read: it may be larger than memory.
    let train = match files.base_type {
        ElementType::Float32 => {
            drop(base);
            map_vectors(&files.base, opts.limit)?
        }
        // 8-bit rows are widened to f32: too many for memory, they go to a spill file.
        _ => base.read_or_spill(opts.spill_target(&sha256))?,
    };
    let max_queries = opts.max_queries.filter(|&q| q > 0);
    let test = read_vectors(&files.query, files.query_type, max_queries)?;
    // Stored neighbours refer to every base row: with fewer kept, they are recomputed.
    let gt = match &files.groundtruth {
        Some(path) if train.vectors.len() == train.rows_in_file => {
            let truth = read_truth(path, max_queries)?;
            if truth.rows_in_file != test.rows_in_file {
                return Err(bad(
                    path,
                    format!(
                        "{} rows of neighbours, but {} holds {} queries",
                        truth.rows_in_file,
                        files.query.display(),
                        test.rows_in_file
                    ),
                ));
            }
            Some((truth.k, truth.ids))
        }
        _ => None,
    };
    let mut ds = assemble(
        DatasetArrays {
            name: file_stem(dir),
            source,
            distance: opts
                .distance
                .or_else(|| embed_distance(dir))
                .unwrap_or(Distance::Euclidean),
            train: train.vectors,
            test: test.vectors,
            stored_gt: gt,
            sha256,
        },
        opts,
    )?;
    ds.files = digests;
    // The dataset keeps the files' type when base and queries agree; a mix (a uint8 base
    // searched with float32 queries) is float32, and says so.
    if files.base_type == files.query_type {
        ds.element_type = files.base_type;
    } else {
        ds.warnings.push(format!(
            "the base is {} but the queries are {}: the dataset is treated as float32",
            files.base_type.name(),
            files.query_type.name()
        ));
    }
    Ok(ds)
}

/// The metric `ragdbeval embed` recorded in the directory's `embed.json`, if it has one.
fn embed_distance(dir: &Path) -> Option<Distance> {
    let bytes = std::fs::read(dir.join("embed.json")).ok()?;
    let manifest: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    manifest.get("distance")?.as_str()?.parse().ok()
}
