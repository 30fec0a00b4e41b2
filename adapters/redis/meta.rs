// What `redis` declares about itself: see [`crate::engine_meta`]. `build.rs` includes
// this file too, so it may use nothing but `crate::engine_meta`.

use crate::engine_meta::{Conformance, EngineMeta, ServerMeta};

pub const ENGINE: EngineMeta = EngineMeta {
    summary: "Redis 8 vector sets (VADD/VSIM, cosine); scripts/servers/redis.sh",
    server: Some(ServerMeta {
        url_env: "REDIS_URL",
        script: true,
        how_to_get: "scripts/servers/redis.sh start prints it",
        password_env: Some("REDISCLI_AUTH"),
    }),
    conformance: Conformance {
        // Vector sets compare by cosine only.
        distance: "angular",
        effort_sweep: "ef=10,40,160",
        search_params: &[],
        min_recall: 0.9,
    },
};
