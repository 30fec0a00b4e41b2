// What `usearch` declares about itself: see [`crate::engine_meta`]. `build.rs` includes
// this file too, so it may use nothing but `crate::engine_meta`.

use crate::engine_meta::{Conformance, EngineMeta};

pub const ENGINE: EngineMeta = EngineMeta {
    summary: "Unum's usearch in-process (the usearch crate): HNSW, f16/i8 quantization, filters",
    server: None,
    conformance: Conformance {
        distance: "euclidean",
        effort_sweep: "expansion_search=8,32,128",
        search_params: &[],
        min_recall: 0.95,
    },
};
