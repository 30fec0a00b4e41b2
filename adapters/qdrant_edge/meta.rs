// What `qdrant-edge` declares about itself: see [`crate::engine_meta`]. `build.rs` includes
// this file too, so it may use nothing but `crate::engine_meta`.

use crate::engine_meta::{Conformance, EngineMeta};

pub const ENGINE: EngineMeta = EngineMeta {
    summary: "Qdrant's engine in-process (the qdrant-edge crate): HNSW, quantization",
    server: None,
    conformance: Conformance {
        distance: "euclidean",
        effort_sweep: "hnsw_ef=8,32,128",
        search_params: &[],
        min_recall: 0.95,
    },
};
