// What `sqlite-vec` declares about itself: see [`crate::engine_meta`]. `build.rs` includes
// this file too, so it may use nothing but `crate::engine_meta`.

use crate::engine_meta::{Conformance, EngineMeta};

pub const ENGINE: EngineMeta = EngineMeta {
    summary: "SQLite's vec0 table in-process (the sqlite-vec crate): brute force, int8/bit quantization, metadata filters",
    server: None,
    conformance: Conformance {
        distance: "euclidean",
        // Brute force: no search effort to sweep, and float32 answers are exact.
        effort_sweep: "",
        search_params: &[],
        min_recall: 1.0,
    },
};
