// What `milvus` declares about itself: see [`crate::engine_meta`]. `build.rs` includes
// this file too, so it may use nothing but `crate::engine_meta`.

use crate::engine_meta::{Conformance, EngineMeta, ServerMeta};

pub const ENGINE: EngineMeta = EngineMeta {
    summary: "Milvus over its gRPC API (standalone or cluster); scripts/servers/milvus.sh",
    server: Some(ServerMeta {
        url_env: "MILVUS_URL",
        script: true,
        how_to_get: "scripts/servers/milvus.sh start prints it",
        password_env: None,
    }),
    conformance: Conformance {
        distance: "euclidean",
        effort_sweep: "nprobe=2,8,32",
        search_params: &[],
        min_recall: 0.9,
    },
};
