// What `pgvector` declares about itself: see [`crate::engine_meta`]. `build.rs` includes
// this file too, so it may use nothing but `crate::engine_meta`.

use crate::engine_meta::{Conformance, EngineMeta, ServerMeta};

pub const ENGINE: EngineMeta = EngineMeta {
    summary: "PostgreSQL + pgvector server (HNSW/IVFFlat, halfvec, binary quantization); scripts/servers/pgvector.sh",
    server: Some(ServerMeta {
        url_env: "PGVECTOR_URL",
        script: true,
        how_to_get: "scripts/servers/pgvector.sh start prints it",
        password_env: Some("PGPASSWORD"),
    }),
    conformance: Conformance {
        distance: "euclidean",
        effort_sweep: "ef_search=10,40,160",
        // At 4,000 rows the planner prefers a scan: make it use the index under test.
        search_params: &["seqscan=false"],
        min_recall: 0.9,
    },
};
