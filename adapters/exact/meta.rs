// What `exact` declares about itself: see [`crate::engine_meta`]. `build.rs` includes
// this file too, so it may use nothing but `crate::engine_meta`.

use crate::engine_meta::{Conformance, EngineMeta};

pub const ENGINE: EngineMeta = EngineMeta {
    summary: "brute force over the live set (the reference: recall is always 1.000)",
    server: None,
    conformance: Conformance {
        distance: "euclidean",
        effort_sweep: "",
        search_params: &[],
        min_recall: 1.0,
    },
};
