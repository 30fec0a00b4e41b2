//! The checks every dataset goes through once its arrays are read (HDF5's `train`, `test`,
//! `neighbors` or TEXMEX's files), on arrays of any shape and content: ragged data, NaN and
//! infinite components, zero vectors, stored neighbours out of range, repeated, of depth 0,
//! for other vectors; with `--limit` and `--max-queries`.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ragdbeval::dataset::{DatasetArrays, LoadOptions, assemble};
use ragdbeval::distance::Distance;
use ragdbeval::vectors::Vectors;

#[derive(Debug, Arbitrary)]
struct Arrays {
    dim_train: u8,
    dim_test: u8,
    train: Vec<f32>,
    test: Vec<f32>,
    /// (k, ids) as HDF5's `neighbors` would hold them.
    neighbors: Option<(u8, Vec<i64>)>,
    metric: u8,
    limit: Option<u8>,
    max_queries: Option<u8>,
    gt_k: u8,
}

fn vectors(data: Vec<f32>, dim: u8) -> Option<Vectors> {
    Vectors::new(data, usize::from(dim)).ok()
}

fuzz_target!(|a: Arrays| {
    let (Some(train), Some(test)) = (vectors(a.train, a.dim_train), vectors(a.test, a.dim_test))
    else {
        return;
    };
    let distance = match a.metric % 3 {
        0 => Distance::Euclidean,
        1 => Distance::Angular,
        _ => Distance::Dot,
    };
    let opts = LoadOptions {
        limit: a.limit.map(usize::from),
        max_queries: a.max_queries.map(usize::from),
        gt_k: usize::from(a.gt_k).max(1),
        ..LoadOptions::default()
    };
    let stored = a.neighbors.map(|(k, ids)| (usize::from(k), ids));
    let arrays = DatasetArrays {
        name: "fuzz".into(),
        source: "fuzz",
        distance,
        train,
        test,
        stored_gt: stored,
        sha256: String::new(),
    };
    let _ = assemble(arrays, &opts);
});
