//! Known datasets, by name and by alias: the ann-benchmarks collection (one HDF5 file each,
//! the registry idea of ann-benchmarks' `datasets.py`) and VectorDBBench's public sets (a
//! directory of Parquet files each, as VectorDBBench downloads them).

use serde::Serialize;

use crate::distance::Distance;

/// One downloadable dataset.
#[derive(Debug, Clone, Serialize)]
pub struct KnownDataset {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub dim: usize,
    pub train: usize,
    /// Queries, where the publisher states how many (else known once the files are read).
    pub test: Option<usize>,
    pub distance: Distance,
    pub layout: Layout,
}

/// How a known dataset is published.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// One ann-benchmarks HDF5 file, `{base}/{name}.hdf5`. No checksum is published: the
    /// SHA-256 of what was downloaded is the dataset's identity in every result.
    AnnBenchmarks,
    /// VectorDBBench's directory `{base}/{name}/` (`train[-NN-of-M].parquet`, `test.parquet`,
    /// `neighbors.parquet`). The bucket's ETags are MD5 digests (single or multipart), which
    /// VectorDBBench itself checks; so does ragdbeval.
    VectorDbBench { train_shards: usize },
}

/// One file of a known dataset: where it is published and where the cache keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFile {
    pub url: String,
    /// Relative to the cache directory.
    pub local: std::path::PathBuf,
    /// The server's ETag is the file's (S3) MD5 digest and must match.
    pub etag_is_md5: bool,
}

impl KnownDataset {
    /// Where the publisher serves it; `RAGDBEVAL_DATASET_URL` replaces the base (a mirror,
    /// or a local server in tests).
    fn base(&self) -> String {
        let published = match self.layout {
            Layout::AnnBenchmarks => "https://ann-benchmarks.com",
            Layout::VectorDbBench { .. } => "https://assets.zilliz.com/benchmark",
        };
        let base = std::env::var("RAGDBEVAL_DATASET_URL").unwrap_or_else(|_| published.into());
        base.trim_end_matches('/').to_string()
    }

    /// What the cache holds for it: a file (HDF5) or a directory (VectorDBBench), relative to
    /// the cache directory.
    pub fn local(&self) -> std::path::PathBuf {
        match self.layout {
            Layout::AnnBenchmarks => format!("{}.hdf5", self.name).into(),
            Layout::VectorDbBench { .. } => self.name.into(),
        }
    }

    /// Every file to download, in order.
    pub fn files(&self) -> Vec<RemoteFile> {
        let base = self.base();
        match self.layout {
            Layout::AnnBenchmarks => vec![RemoteFile {
                url: format!("{base}/{}.hdf5", self.name),
                local: self.local(),
                etag_is_md5: false,
            }],
            Layout::VectorDbBench { train_shards } => {
                // VectorDBBench's `compose_train_files`, with the ordered (not shuffled)
                // files: `--limit` then reads a prefix.
                let mut names: Vec<String> = if train_shards > 1 {
                    (0..train_shards)
                        .map(|i| format!("train-{i:02}-of-{train_shards}.parquet"))
                        .collect()
                } else {
                    vec!["train.parquet".into()]
                };
                names.push("test.parquet".into());
                names.push("neighbors.parquet".into());
                names
                    .into_iter()
                    .map(|f| RemoteFile {
                        url: format!("{base}/{}/{f}", self.name),
                        local: std::path::Path::new(self.name).join(f),
                        etag_is_md5: true,
                    })
                    .collect()
            }
        }
    }
}

const fn entry(
    name: &'static str,
    aliases: &'static [&'static str],
    dim: usize,
    train: usize,
    test: usize,
    distance: Distance,
) -> KnownDataset {
    KnownDataset {
        name,
        aliases,
        dim,
        train,
        test: Some(test),
        distance,
        layout: Layout::AnnBenchmarks,
    }
}

/// A VectorDBBench set: its directory name (`{dataset}_{size label}_{count}`, as
/// VectorDBBench's `dir_name`), dimension, rows, metric and train shards (`dataset.py`).
const fn vdbbench(
    name: &'static str,
    aliases: &'static [&'static str],
    dim: usize,
    train: usize,
    distance: Distance,
    train_shards: usize,
) -> KnownDataset {
    KnownDataset {
        name,
        aliases,
        dim,
        train,
        test: None,
        distance,
        layout: Layout::VectorDbBench { train_shards },
    }
}

/// The registry, in the order `dataset list` prints it.
pub const KNOWN: &[KnownDataset] = &[
    entry(
        "sift-128-euclidean",
        &["sift1m", "sift"],
        128,
        1_000_000,
        10_000,
        Distance::Euclidean,
    ),
    entry(
        "gist-960-euclidean",
        &["gist1m", "gist"],
        960,
        1_000_000,
        1_000,
        Distance::Euclidean,
    ),
    entry(
        "glove-25-angular",
        &["glove-25"],
        25,
        1_183_514,
        10_000,
        Distance::Angular,
    ),
    entry(
        "glove-50-angular",
        &["glove-50"],
        50,
        1_183_514,
        10_000,
        Distance::Angular,
    ),
    entry(
        "glove-100-angular",
        &["glove-100", "glove"],
        100,
        1_183_514,
        10_000,
        Distance::Angular,
    ),
    entry(
        "glove-200-angular",
        &["glove-200"],
        200,
        1_183_514,
        10_000,
        Distance::Angular,
    ),
    entry(
        "fashion-mnist-784-euclidean",
        &["fashion-mnist"],
        784,
        60_000,
        10_000,
        Distance::Euclidean,
    ),
    entry(
        "mnist-784-euclidean",
        &["mnist"],
        784,
        60_000,
        10_000,
        Distance::Euclidean,
    ),
    entry(
        "nytimes-256-angular",
        &["nytimes"],
        256,
        290_000,
        10_000,
        Distance::Angular,
    ),
    entry(
        "deep-image-96-angular",
        &["deep10m", "deep-image"],
        96,
        9_990_000,
        10_000,
        Distance::Angular,
    ),
    // Published with 65 dimensions (the dot-product transform adds one); the file's own
    // attributes win when it is loaded.
    entry(
        "lastfm-64-dot",
        &["lastfm"],
        65,
        292_385,
        50_000,
        Distance::Dot,
    ),
    // VectorDBBench (zilliztech/VectorDBBench, `vectordb_bench/backend/dataset.py`): Cohere
    // and OpenAI text embeddings under cosine, LAION image embeddings under L2.
    vdbbench(
        "cohere_small_100k",
        &["cohere100k", "cohere-100k"],
        768,
        100_000,
        Distance::Angular,
        1,
    ),
    vdbbench(
        "cohere_medium_1m",
        &["cohere1m", "cohere-1m"],
        768,
        1_000_000,
        Distance::Angular,
        1,
    ),
    vdbbench(
        "cohere_large_10m",
        &["cohere10m", "cohere-10m"],
        768,
        10_000_000,
        Distance::Angular,
        10,
    ),
    vdbbench(
        "openai_small_50k",
        &["openai50k", "openai-50k"],
        1536,
        50_000,
        Distance::Angular,
        1,
    ),
    vdbbench(
        "openai_medium_500k",
        &["openai500k", "openai-500k"],
        1536,
        500_000,
        Distance::Angular,
        1,
    ),
    vdbbench(
        "openai_large_5m",
        &["openai5m", "openai-5m"],
        1536,
        5_000_000,
        Distance::Angular,
        10,
    ),
    vdbbench(
        "laion_large_100m",
        &["laion100m", "laion-100m"],
        768,
        100_000_000,
        Distance::Euclidean,
        100,
    ),
];

/// Looks a dataset up by name or alias (case-insensitive).
pub fn find(name: &str) -> Option<&'static KnownDataset> {
    let name = name.trim().to_ascii_lowercase();
    let name = name.strip_suffix(".hdf5").unwrap_or(&name);
    KNOWN
        .iter()
        .find(|d| d.name == name || d.aliases.contains(&name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_resolve() {
        assert_eq!(find("sift1m").unwrap().name, "sift-128-euclidean");
        assert_eq!(find("GIST1M").unwrap().dim, 960);
        assert_eq!(
            find("glove-100-angular.hdf5").unwrap().distance,
            Distance::Angular
        );
        assert!(find("nope").is_none());
        assert_eq!(
            find("sift1m").unwrap().files()[0].url,
            "https://ann-benchmarks.com/sift-128-euclidean.hdf5"
        );
    }

    #[test]
    fn vectordbbench_entries_name_their_files_as_vectordbbench_does() {
        let files = find("cohere10m").unwrap().files();
        let urls: Vec<&str> = files.iter().map(|f| f.url.as_str()).collect();
        assert_eq!(urls.len(), 12);
        assert_eq!(
            urls[0],
            "https://assets.zilliz.com/benchmark/cohere_large_10m/train-00-of-10.parquet"
        );
        assert_eq!(
            urls[9],
            "https://assets.zilliz.com/benchmark/cohere_large_10m/train-09-of-10.parquet"
        );
        assert!(urls[10].ends_with("/cohere_large_10m/test.parquet"));
        assert!(urls[11].ends_with("/cohere_large_10m/neighbors.parquet"));
        assert!(files.iter().all(|f| f.etag_is_md5));
        let one = find("openai_small_50k").unwrap().files();
        assert_eq!(
            one[0].local,
            std::path::Path::new("openai_small_50k/train.parquet")
        );
    }
}
