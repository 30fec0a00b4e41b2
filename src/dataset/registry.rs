//! Known datasets, by name and by alias: the ann-benchmarks collection (one HDF5 file each,
//! the registry idea of ann-benchmarks' `datasets.py`), VectorDBBench's public sets (a
//! directory of Parquet files each, as VectorDBBench downloads them), big-ann-benchmarks'
//! binary sets (`benchmark/datasets.py`: base, query and truth files, the 1M/10M/100M sets
//! cropped from the 1B file) and VIBE's embedding sets (HDF5, `vibe/datasets.py`).

use serde::Serialize;

use super::bigann::ElementType;
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
        }
    }

    /// The format of its files.
    pub fn format(&self) -> &'static str {
        match self {
            Layout::AnnBenchmarks | Layout::Vibe => "hdf5",
            Layout::VectorDbBench { .. } => "parquet dir",
            Layout::BigAnn(_) => "big-ann bin",
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
            Layout::BigAnn(_) => "",
        };
        let base = std::env::var("RAGDBEVAL_DATASET_URL").unwrap_or_else(|_| published.into());
        base.trim_end_matches('/').to_string()
    }

    /// What the cache holds for it: a file (HDF5) or a directory (VectorDBBench, big-ann),
    /// relative to the cache directory.
    pub fn local(&self) -> std::path::PathBuf {
        match self.layout {
            Layout::AnnBenchmarks | Layout::Vibe => format!("{}.hdf5", self.name).into(),
            Layout::VectorDbBench { .. } | Layout::BigAnn(_) => self.name.into(),
        }
    }

    /// Where the publisher serves it (the page or directory a user would look at).
    pub fn source(&self) -> String {
        match self.layout {
            Layout::AnnBenchmarks | Layout::Vibe => format!("{}/{}.hdf5", self.base(), self.name),
            Layout::VectorDbBench { .. } => format!("{}/{}/", self.base(), self.name),
            Layout::BigAnn(b) => mirrored(b.base),
        }
    }

    /// Every file to download, in order: the order the dataset's SHA-256 hashes them in.
    pub fn files(&self) -> Vec<RemoteFile> {
        let base = self.base();
        let plain = |url: String, local: std::path::PathBuf, role: &'static str| RemoteFile {
            url,
            local,
            etag_is_md5: false,
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
                            crop: None,
                            role,
                        }
                    })
                    .collect()
            }
            Layout::BigAnn(b) => {
                let dir = std::path::Path::new(self.name);
                let ext = self.elem.extension();
                let crop = (self.train < b.base_rows).then(|| Crop {
                    bytes: 8 + (self.train * self.dim * self.elem.size()) as u64,
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
        elem: ElementType::F32,
        layout: Layout::AnnBenchmarks,
        note: "",
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
        elem: ElementType::F32,
        layout: Layout::VectorDbBench { train_shards },
        note: "",
    }
}

/// A VIBE set: its name (as VIBE's `DATASETS` and README spell it), dimension, points and
/// metric (README table; `normalized` sets are unit vectors read as angular). VIBE's README
/// states no query count.
const fn vibe(
    name: &'static str,
    dim: usize,
    train: usize,
    distance: Distance,
    note: &'static str,
) -> KnownDataset {
    KnownDataset {
        name,
        aliases: &[],
        dim,
        train,
        test: None,
        distance,
        elem: ElementType::F32,
        layout: Layout::Vibe,
        note,
    }
}

/// A big-ann-benchmarks set (`benchmark/datasets.py`).
#[allow(clippy::too_many_arguments)]
const fn bigann(
    name: &'static str,
    aliases: &'static [&'static str],
    dim: usize,
    train: usize,
    test: usize,
    distance: Distance,
    elem: ElementType,
    files: &'static BigAnnFiles,
    note: &'static str,
) -> KnownDataset {
    KnownDataset {
        name,
        aliases,
        dim,
        train,
        test: Some(test),
        distance,
        elem,
        layout: Layout::BigAnn(files),
        note,
    }
}

/// `subset_url` of big-ann's `datasets.py`: the truth files of the 10M and 100M crops.
macro_rules! subset {
    ($path:literal) => {
        concat!(
            "https://dl.fbaipublicfiles.com/billion-scale-ann-benchmarks/",
            $path
        )
    };
}
macro_rules! bigann_url {
    ($file:literal) => {
        concat!(
            "https://dl.fbaipublicfiles.com/billion-scale-ann-benchmarks/bigann/",
            $file
        )
    };
}
macro_rules! msturing_url {
    ($file:literal) => {
        concat!(
            "https://comp21storage.z5.web.core.windows.net/comp21/MSFT-TURING-ANNS/",
            $file
        )
    };
}
macro_rules! t2i_url {
    ($file:literal) => {
        concat!(
            "https://storage.yandexcloud.net/yandex-research/ann-datasets/T2I/",
            $file
        )
    };
}
macro_rules! yfcc_url {
    ($file:literal) => {
        concat!(
            "https://dl.fbaipublicfiles.com/billion-scale-ann-benchmarks/yfcc100M/",
            $file
        )
    };
}

/// BIGANN (SIFT descriptors, `BigANNDataset`): 1B × 128 uint8, 10K queries.
const fn bigann_files(truth: &'static str) -> BigAnnFiles {
    BigAnnFiles {
        base: bigann_url!("base.1B.u8bin"),
        base_rows: 1_000_000_000,
        query: bigann_url!("query.public.10K.u8bin"),
        truth: Some(truth),
        extra: &[],
    }
}
const BIGANN_10M: BigAnnFiles = bigann_files(subset!("GT_10M/bigann-10M"));
const BIGANN_100M: BigAnnFiles = bigann_files(subset!("GT_100M/bigann-100M"));
const BIGANN_1B: BigAnnFiles = bigann_files(bigann_url!("GT.public.1B.ibin"));

/// MS Turing-ANNS (`MSTuringANNS`): 1B × 100 float32, 100K queries; the crops' truth files
/// sit next to the base file.
const fn msturing_files(truth: &'static str) -> BigAnnFiles {
    BigAnnFiles {
        base: msturing_url!("base1b.fbin"),
        base_rows: 1_000_000_000,
        query: msturing_url!("query100K.fbin"),
        truth: Some(truth),
        extra: &[],
    }
}
const MSTURING_1M: BigAnnFiles = msturing_files(msturing_url!("msturing-gt-1M"));
const MSTURING_10M: BigAnnFiles = msturing_files(msturing_url!("msturing-gt-10M"));
const MSTURING_100M: BigAnnFiles = msturing_files(msturing_url!("msturing-gt-100M"));
const MSTURING_1B: BigAnnFiles = msturing_files(msturing_url!("query_gt100.bin"));

/// Yandex Text-to-Image (`Text2Image1B`): 1B × 200 float32 image embeddings, 100K text
/// queries, inner product. big-ann publishes no truth for the 1M crop.
const fn t2i_files(truth: Option<&'static str>) -> BigAnnFiles {
    BigAnnFiles {
        base: t2i_url!("base.1B.fbin"),
        base_rows: 1_000_000_000,
        query: t2i_url!("query.public.100K.fbin"),
        truth,
        extra: &[],
    }
}
const T2I_1M: BigAnnFiles = t2i_files(None);
const T2I_10M: BigAnnFiles = t2i_files(Some(subset!("GT_10M/text2image-10M")));
const T2I_100M: BigAnnFiles = t2i_files(Some(subset!("GT_100M/text2image-100M")));
const T2I_1B: BigAnnFiles = t2i_files(Some(
    "https://storage.yandexcloud.net/yandex-research/ann-datasets/t2i_new_groundtruth.public.100K.bin",
));
const T2I_NOTE: &str = "out-of-distribution: text queries against image embeddings; inner product";

/// The NeurIPS'23 clustered MSTuring sets (`MSTuringClustered10M`, `…30M`): whole files, no
/// crop. Their streaming runbooks (`neurips23/runbooks/clustered_*.yaml`) are not included.
const MSTURING_CLUSTERED_10M: BigAnnFiles = BigAnnFiles {
    base: "https://comp21storage.z5.web.core.windows.net/comp23/clustered_data/msturing-10M-clustered/msturing-10M-clustered.fbin",
    base_rows: 10_000_000,
    query: "https://comp21storage.z5.web.core.windows.net/comp23/clustered_data/msturing-10M-clustered/testQuery10K.fbin",
    truth: Some(
        "https://comp21storage.z5.web.core.windows.net/comp23/clustered_data/msturing-10M-clustered/clu_msturing10M_gt100",
    ),
    extra: &[],
};
const MSTURING_CLUSTERED_30M: BigAnnFiles = BigAnnFiles {
    base: "https://comp21storage.z5.web.core.windows.net/comp23/clustered_data/msturing-30M-clustered/30M-clustered64.fbin",
    base_rows: 29_998_994,
    query: "https://comp21storage.z5.web.core.windows.net/comp23/clustered_data/msturing-30M-clustered/testQuery10K.fbin",
    truth: Some(
        "https://comp21storage.z5.web.core.windows.net/comp23/clustered_data/msturing-30M-clustered/clu_msturing30M_gt100",
    ),
    extra: &[],
};
const CLUSTERED_NOTE: &str = "NeurIPS'23 streaming track's data; its runbooks are not included";

/// YFCC-10M, the NeurIPS'23 filter track (`YFCC100MDataset`): 10M × 192 uint8 CLIP
/// descriptors, 100K queries, each point and query with a set of tags (`.spmat`, a CSR
/// matrix). The truth read is big-ann's unfiltered one (`yfcc-10M-unfiltered`).
const YFCC_10M: BigAnnFiles = BigAnnFiles {
    base: yfcc_url!("base.10M.u8bin"),
    base_rows: 10_000_000,
    query: yfcc_url!("query.public.100K.u8bin"),
    truth: Some(yfcc_url!("unfiltered.GT.public.ibin")),
    extra: &[
        Extra {
            url: yfcc_url!("base.metadata.10M.spmat"),
            local: "base.metadata.10M.spmat",
            what: "point tags (CSR .spmat)",
        },
        Extra {
            url: yfcc_url!("query.metadata.public.100K.spmat"),
            local: "query.metadata.public.100K.spmat",
            what: "query tags (CSR .spmat)",
        },
        Extra {
            url: yfcc_url!("GT.public.ibin"),
            local: "filtered.GT.public.bin",
            what: "filtered truth",
        },
    ],
};

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
    // VectorDBBench's Bioasq (biomedical text embeddings, `Bioasq` in `dataset.py`):
    // 1024-d, cosine.
    vdbbench(
        "bioasq_medium_1m",
        &["bioasq1m", "bioasq-1m"],
        1024,
        1_000_000,
        Distance::Angular,
        1,
    ),
    vdbbench(
        "bioasq_large_10m",
        &["bioasq10m", "bioasq-10m"],
        1024,
        10_000_000,
        Distance::Angular,
        10,
    ),
    // big-ann-benchmarks (harsha-simhadri/big-ann-benchmarks, `benchmark/datasets.py`,
    // names as its `DATASETS`): the 10M/100M (and 1M) sets are crops of the 1B file.
    bigann(
        "bigann-10M",
        &["bigann10m"],
        128,
        10_000_000,
        10_000,
        Distance::Euclidean,
        ElementType::U8,
        &BIGANN_10M,
        "",
    ),
    bigann(
        "bigann-100M",
        &["bigann100m"],
        128,
        100_000_000,
        10_000,
        Distance::Euclidean,
        ElementType::U8,
        &BIGANN_100M,
        "",
    ),
    bigann(
        "bigann-1B",
        &["bigann1b"],
        128,
        1_000_000_000,
        10_000,
        Distance::Euclidean,
        ElementType::U8,
        &BIGANN_1B,
        "",
    ),
    bigann(
        "msturing-1M",
        &["msturing1m"],
        100,
        1_000_000,
        100_000,
        Distance::Euclidean,
        ElementType::F32,
        &MSTURING_1M,
        "",
    ),
    bigann(
        "msturing-10M",
        &["msturing10m"],
        100,
        10_000_000,
        100_000,
        Distance::Euclidean,
        ElementType::F32,
        &MSTURING_10M,
        "",
    ),
    bigann(
        "msturing-100M",
        &["msturing100m"],
        100,
        100_000_000,
        100_000,
        Distance::Euclidean,
        ElementType::F32,
        &MSTURING_100M,
        "",
    ),
    bigann(
        "msturing-1B",
        &["msturing1b"],
        100,
        1_000_000_000,
        100_000,
        Distance::Euclidean,
        ElementType::F32,
        &MSTURING_1B,
        "",
    ),
    bigann(
        "msturing-10M-clustered",
        &[],
        100,
        10_000_000,
        10_000,
        Distance::Euclidean,
        ElementType::F32,
        &MSTURING_CLUSTERED_10M,
        CLUSTERED_NOTE,
    ),
    bigann(
        "msturing-30M-clustered",
        &[],
        100,
        29_998_994,
        10_000,
        Distance::Euclidean,
        ElementType::F32,
        &MSTURING_CLUSTERED_30M,
        CLUSTERED_NOTE,
    ),
    bigann(
        "text2image-1M",
        &["text2image1m", "t2i-1m"],
        200,
        1_000_000,
        100_000,
        Distance::Dot,
        ElementType::F32,
        &T2I_1M,
        "out-of-distribution: text queries against image embeddings; inner product; \
         big-ann publishes no truth for this crop, so it is computed",
    ),
    bigann(
        "text2image-10M",
        &["text2image10m", "t2i-10m"],
        200,
        10_000_000,
        100_000,
        Distance::Dot,
        ElementType::F32,
        &T2I_10M,
        T2I_NOTE,
    ),
    bigann(
        "text2image-100M",
        &["text2image100m", "t2i-100m"],
        200,
        100_000_000,
        100_000,
        Distance::Dot,
        ElementType::F32,
        &T2I_100M,
        T2I_NOTE,
    ),
    bigann(
        "text2image-1B",
        &["text2image1b", "t2i-1b"],
        200,
        1_000_000_000,
        100_000,
        Distance::Dot,
        ElementType::F32,
        &T2I_1B,
        T2I_NOTE,
    ),
    bigann(
        "yfcc-10M",
        &["yfcc10m"],
        192,
        10_000_000,
        100_000,
        Distance::Euclidean,
        ElementType::U8,
        &YFCC_10M,
        "filter track: the tag files (.spmat) and the filtered truth are downloaded but not \
         read; ragdbeval benches it unfiltered, against big-ann's unfiltered truth",
    ),
    // VIBE (vector-index-bench/vibe, README tables; files at its Hugging Face repository).
    // `normalized` sets hold unit vectors (any of euclidean, cosine, ip ranks alike): read
    // as angular.
    vibe(
        "agnews-mxbai-1024-euclidean",
        1024,
        769_382,
        Distance::Euclidean,
        "",
    ),
    vibe(
        "arxiv-nomic-768-normalized",
        768,
        1_344_643,
        Distance::Angular,
        "",
    ),
    vibe(
        "dpr-jina-768-normalized",
        768,
        20_969_760,
        Distance::Angular,
        "",
    ),
    vibe("glove-200-cosine", 200, 1_192_514, Distance::Angular, ""),
    vibe(
        "gooaq-distilroberta-768-normalized",
        768,
        1_475_024,
        Distance::Angular,
        "",
    ),
    vibe(
        "imagenet-clip-512-normalized",
        512,
        1_281_167,
        Distance::Angular,
        "",
    ),
    vibe(
        "inaturalist-resnet-2048-cosine",
        2048,
        499_000,
        Distance::Angular,
        "",
    ),
    vibe(
        "landmark-dino-768-cosine",
        768,
        760_757,
        Distance::Angular,
        "",
    ),
    vibe(
        "landmark-nomic-768-normalized",
        768,
        760_757,
        Distance::Angular,
        "",
    ),
    vibe(
        "msmarco-qwen-1024-normalized",
        1024,
        8_840_823,
        Distance::Angular,
        "",
    ),
    vibe(
        "yahoo-minilm-384-normalized",
        384,
        677_305,
        Distance::Angular,
        "",
    ),
    vibe(
        "hotpotqa-harrier-640-normalized",
        640,
        5_233_329,
        Distance::Angular,
        VIBE_OOD_TEXT,
    ),
    vibe(
        "imagenet-align-640-normalized",
        640,
        1_281_167,
        Distance::Angular,
        VIBE_OOD_T2I,
    ),
    vibe(
        "laion-clip-512-normalized",
        512,
        1_000_448,
        Distance::Angular,
        VIBE_OOD_T2I,
    ),
    vibe(
        "yandex-200-cosine",
        200,
        1_000_000,
        Distance::Angular,
        VIBE_OOD_T2I,
    ),
    vibe(
        "cqadupstack-lemur-2048-ip",
        2048,
        457_149,
        Distance::Dot,
        "out-of-distribution (VIBE): multi-vector (LEMUR) embeddings; inner product",
    ),
    vibe(
        "cqadupstack-muvera-5120-ip",
        5120,
        457_149,
        Distance::Dot,
        "out-of-distribution (VIBE): multi-vector (MUVERA) embeddings; inner product",
    ),
    vibe(
        "yi-128-ip",
        128,
        187_843,
        Distance::Dot,
        "out-of-distribution (VIBE): attention keys and queries (Yi); inner product",
    ),
    vibe(
        "llama-128-ip",
        128,
        256_921,
        Distance::Dot,
        "out-of-distribution (VIBE): attention keys and queries (Llama); inner product",
    ),
];

const VIBE_OOD_TEXT: &str = "out-of-distribution (VIBE): queries and corpus embedded differently";
const VIBE_OOD_T2I: &str = "out-of-distribution (VIBE): text queries against image embeddings";

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
                            8 + (d.train * d.dim * d.elem.size()) as u64,
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
                assert_eq!(d.elem, ElementType::F32);
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
            (Distance::Dot, ElementType::F32, 200)
        );
        assert!(t2i.note.contains("out-of-distribution"));
        assert_eq!(find("yfcc-10M").unwrap().files().len(), 6);
        assert_eq!(
            find("glove-200-cosine").unwrap().files()[0].url,
            "https://huggingface.co/datasets/vector-index-bench/vibe/resolve/main/glove-200-cosine.hdf5"
        );
    }
}
