// What `qdrant` declares about itself: see [`crate::engine_meta`]. `build.rs` includes
// this file too, so it may use nothing but `crate::engine_meta`.

use crate::engine_meta::{Conformance, EngineMeta, ServerMeta};

pub const ENGINE: EngineMeta = EngineMeta {
    summary: "a Qdrant server over gRPC (qdrant-client); --url, default http://localhost:6334",
    server: Some(ServerMeta {
        url_env: "QDRANT_URL",
        script: false,
        how_to_get: "a Qdrant server, e.g. docker run -p 6334:6334 qdrant/qdrant; not installable here, so its tests are ignored even under CI",
        password_env: None,
    }),
    conformance: Conformance {
        distance: "euclidean",
        effort_sweep: "hnsw_ef=8,32,128",
        search_params: &[],
        min_recall: 0.9,
    },
};
