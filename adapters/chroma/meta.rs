// What `chroma` declares about itself: see [`crate::engine_meta`]. `build.rs` includes
// this file too, so it may use nothing but `crate::engine_meta`.

use crate::engine_meta::{Conformance, EngineMeta, ServerMeta};

pub const ENGINE: EngineMeta = EngineMeta {
    summary: "Chroma server over HTTP API v2; scripts/servers/chroma.sh",
    server: Some(ServerMeta {
        url_env: "CHROMA_URL",
        script: true,
        how_to_get: "scripts/servers/chroma.sh start prints it",
        password_env: None,
    }),
    conformance: Conformance {
        distance: "euclidean",
        effort_sweep: "",
        search_params: &[],
        min_recall: 0.9,
    },
};
