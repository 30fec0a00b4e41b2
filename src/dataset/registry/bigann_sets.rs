//! The files of big-ann-benchmarks' binary sets (`benchmark/datasets.py`): base, query and
//! truth URLs, the 1M/10M/100M sets cropped from the 1B base file.

use super::{BigAnnFiles, Extra};

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
pub(super) const BIGANN_10M: BigAnnFiles = bigann_files(subset!("GT_10M/bigann-10M"));
pub(super) const BIGANN_100M: BigAnnFiles = bigann_files(subset!("GT_100M/bigann-100M"));
pub(super) const BIGANN_1B: BigAnnFiles = bigann_files(bigann_url!("GT.public.1B.ibin"));

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
pub(super) const MSTURING_1M: BigAnnFiles = msturing_files(msturing_url!("msturing-gt-1M"));
pub(super) const MSTURING_10M: BigAnnFiles = msturing_files(msturing_url!("msturing-gt-10M"));
pub(super) const MSTURING_100M: BigAnnFiles = msturing_files(msturing_url!("msturing-gt-100M"));
pub(super) const MSTURING_1B: BigAnnFiles = msturing_files(msturing_url!("query_gt100.bin"));

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
pub(super) const T2I_1M: BigAnnFiles = t2i_files(None);
pub(super) const T2I_10M: BigAnnFiles = t2i_files(Some(subset!("GT_10M/text2image-10M")));
pub(super) const T2I_100M: BigAnnFiles = t2i_files(Some(subset!("GT_100M/text2image-100M")));
pub(super) const T2I_1B: BigAnnFiles = t2i_files(Some(
    "https://storage.yandexcloud.net/yandex-research/ann-datasets/t2i_new_groundtruth.public.100K.bin",
));
pub(super) const T2I_NOTE: &str =
    "out-of-distribution: text queries against image embeddings; inner product";

/// The NeurIPS'23 clustered MSTuring sets (`MSTuringClustered10M`, `…30M`): whole files, no
/// crop. Their streaming runbooks (`neurips23/runbooks/clustered_*.yaml`) are not included.
pub(super) const MSTURING_CLUSTERED_10M: BigAnnFiles = BigAnnFiles {
    base: "https://comp21storage.z5.web.core.windows.net/comp23/clustered_data/msturing-10M-clustered/msturing-10M-clustered.fbin",
    base_rows: 10_000_000,
    query: "https://comp21storage.z5.web.core.windows.net/comp23/clustered_data/msturing-10M-clustered/testQuery10K.fbin",
    truth: Some(
        "https://comp21storage.z5.web.core.windows.net/comp23/clustered_data/msturing-10M-clustered/clu_msturing10M_gt100",
    ),
    extra: &[],
};
pub(super) const MSTURING_CLUSTERED_30M: BigAnnFiles = BigAnnFiles {
    base: "https://comp21storage.z5.web.core.windows.net/comp23/clustered_data/msturing-30M-clustered/30M-clustered64.fbin",
    base_rows: 29_998_994,
    query: "https://comp21storage.z5.web.core.windows.net/comp23/clustered_data/msturing-30M-clustered/testQuery10K.fbin",
    truth: Some(
        "https://comp21storage.z5.web.core.windows.net/comp23/clustered_data/msturing-30M-clustered/clu_msturing30M_gt100",
    ),
    extra: &[],
};
pub(super) const CLUSTERED_NOTE: &str =
    "NeurIPS'23 streaming track's data; its runbooks are not included";

/// YFCC-10M, the NeurIPS'23 filter track (`YFCC100MDataset`): 10M × 192 uint8 CLIP
/// descriptors, 100K queries, each point and query with a set of tags (`.spmat`, a CSR
/// matrix). The truth read is big-ann's unfiltered one (`yfcc-10M-unfiltered`).
pub(super) const YFCC_10M: BigAnnFiles = BigAnnFiles {
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
