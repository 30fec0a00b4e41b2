//! A VectorDBBench directory: which of its Parquet files hold what, and the metric its name
//! implies (the files carry none).

use std::path::{Path, PathBuf};

use crate::dataset::DatasetError;
use crate::distance::Distance;

/// The files of one VectorDBBench dataset directory.
#[derive(Debug, Clone)]
pub struct VdbFiles {
    /// Train shards in shard order.
    pub train: Vec<PathBuf>,
    pub test: PathBuf,
    pub neighbors: Option<PathBuf>,
    pub scalar_labels: Option<PathBuf>,
}

impl VdbFiles {
    /// Every file, train first: what the dataset's identity hashes.
    pub fn all(&self) -> Vec<&Path> {
        let mut all: Vec<&Path> = self.train.iter().map(PathBuf::as_path).collect();
        all.push(&self.test);
        all.extend(self.neighbors.as_deref());
        all.extend(self.scalar_labels.as_deref());
        all
    }
}

/// The VectorDBBench files of `dir`, or `None` when it holds no `test.parquet` (not this
/// layout). An incomplete set of shards is an error that names the missing ones.
pub fn find_files(dir: &Path) -> Result<Option<VdbFiles>, DatasetError> {
    let test = dir.join("test.parquet");
    if !test.is_file() {
        return Ok(None);
    }
    let names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| DatasetError::io(dir, e))?
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| entry.file_name().to_str().map(str::to_string))
        .collect();
    // The ordered layout first: both hold the same rows, and the ordered one lets `--limit`
    // stop reading early.
    for prefix in ["train", "shuffle_train"] {
        if let Some(train) = train_files(dir, &names, prefix)? {
            let optional = |name: &str| {
                let p = dir.join(name);
                p.is_file().then_some(p)
            };
            return Ok(Some(VdbFiles {
                train,
                test,
                neighbors: optional("neighbors.parquet"),
                scalar_labels: optional("scalar_labels.parquet"),
            }));
        }
    }
    Err(DatasetError::Format {
        path: dir.to_path_buf(),
        message: "has test.parquet but no train vectors: expected train.parquet, \
                  train-00-of-N.parquet … or their shuffle_train variants (VectorDBBench's layout)"
            .into(),
    })
}

/// `PREFIX.parquet`, or the complete set `PREFIX-00-of-N.parquet` … `PREFIX-(N-1)-of-N`.
fn train_files(
    dir: &Path,
    names: &[String],
    prefix: &str,
) -> Result<Option<Vec<PathBuf>>, DatasetError> {
    let single = format!("{prefix}.parquet");
    if names.contains(&single) {
        return Ok(Some(vec![dir.join(single)]));
    }
    // Shards: `{prefix}-{i:02}-of-{n}.parquet`, as VectorDBBench's `compose_train_files`.
    let counts: Vec<usize> = names
        .iter()
        .filter_map(|name| {
            let rest = name.strip_prefix(prefix)?.strip_prefix('-')?;
            let rest = rest.strip_suffix(".parquet")?;
            let (_, count) = rest.split_once("-of-")?;
            count.parse().ok()
        })
        .collect();
    let Some(&count) = counts.first() else {
        return Ok(None);
    };
    if counts.iter().any(|c| *c != count) {
        return Err(DatasetError::Format {
            path: dir.to_path_buf(),
            message: format!("{prefix} shards of different counts (…-of-N with several N)"),
        });
    }
    let shards: Vec<String> = (0..count)
        .map(|i| format!("{prefix}-{i:02}-of-{count}.parquet"))
        .collect();
    let missing: Vec<&String> = shards.iter().filter(|s| !names.contains(s)).collect();
    if !missing.is_empty() {
        return Err(DatasetError::Format {
            path: dir.to_path_buf(),
            message: format!(
                "{} of {count} train shards missing: {}",
                missing.len(),
                missing
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    Ok(Some(shards.into_iter().map(|s| dir.join(s)).collect()))
}

/// The metric of a VectorDBBench directory, which its files do not carry: VectorDBBench's own
/// table (`dataset.py`) by the directory's name (`cohere_medium_1m`, `openai_small_50k`, …),
/// else euclidean. Returns it with the sentence a result records about where it came from.
pub fn metric_of(dir: &Path) -> (Distance, String) {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let known = [
        ("cohere", Distance::Angular),
        ("openai", Distance::Angular),
        ("bioasq", Distance::Angular),
        ("glove", Distance::Angular),
        ("sift", Distance::Euclidean),
        ("gist", Distance::Euclidean),
        ("laion", Distance::Euclidean),
    ];
    match known.iter().find(|(prefix, _)| name.starts_with(prefix)) {
        Some((prefix, d)) => (
            *d,
            format!(
                "metric {d}: VectorDBBench's metric for `{prefix}` datasets (its files carry \
                 none; --distance overrides)"
            ),
        ),
        None => (
            Distance::Euclidean,
            "metric euclidean assumed: VectorDBBench files carry none and the directory name \
             is not one of its datasets (pass --distance)"
                .to_string(),
        ),
    }
}
