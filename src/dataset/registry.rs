//! Known datasets: the ann-benchmarks collection, by name and by alias.
//!
//! Every entry downloads as one file in the ann-benchmarks HDF5 layout, so the loader is the
//! same whatever the source (the registry idea of ann-benchmarks' `datasets.py`).

use serde::Serialize;

use crate::distance::Distance;

/// One downloadable dataset.
#[derive(Debug, Clone, Serialize)]
pub struct KnownDataset {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub dim: usize,
    pub train: usize,
    pub test: usize,
    pub distance: Distance,
}

impl KnownDataset {
    /// Where ann-benchmarks publishes it; `RAGDBEVAL_DATASET_URL` replaces the base (a mirror,
    /// or a local server in tests).
    pub fn url(&self) -> String {
        let base = std::env::var("RAGDBEVAL_DATASET_URL")
            .unwrap_or_else(|_| "https://ann-benchmarks.com".to_string());
        format!("{}/{}.hdf5", base.trim_end_matches('/'), self.name)
    }

    pub fn file_name(&self) -> String {
        format!("{}.hdf5", self.name)
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
        test,
        distance,
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
            find("sift1m").unwrap().url(),
            "https://ann-benchmarks.com/sift-128-euclidean.hdf5"
        );
    }
}
