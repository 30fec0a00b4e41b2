// What `diskann` declares about itself: see [`crate::engine_meta`]. `build.rs` includes
// this file too, so it may use nothing but `crate::engine_meta`.

use crate::engine_meta::{Conformance, EngineMeta};

pub const ENGINE: EngineMeta = EngineMeta {
    summary: "Microsoft's DiskANN in-process (the diskann crates): Vamana graph in memory or on disk (PQ + SSD graph), filters; cargo feature `diskann`",
    server: None,
    conformance: Conformance {
        distance: "euclidean",
        effort_sweep: "l_search=10,32,128",
        search_params: &[],
        min_recall: 0.9,
    },
};
