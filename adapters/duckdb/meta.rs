// What `duckdb` declares about itself: see [`crate::engine_meta`]. `build.rs` includes
// this file too, so it may use nothing but `crate::engine_meta`.

use crate::engine_meta::{Conformance, EngineMeta};

pub const ENGINE: EngineMeta = EngineMeta {
    summary: "DuckDB in-process with the vss extension (HNSW); cargo feature `duckdb`, scripts/install/duckdb.sh",
    server: None,
    conformance: Conformance {
        distance: "euclidean",
        effort_sweep: "ef_search=8,32,128",
        search_params: &[],
        min_recall: 0.9,
    },
};
