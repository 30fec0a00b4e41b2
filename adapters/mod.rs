//! Engine adapters: one folder per engine family, one registration line each.
//!
//! An adapter implements [`crate::engine::VectorEngine`] for its engine and ships a
//! `config.toml` of named parameter sets. To add an engine: create `adapters/<name>/mod.rs`
//! with `pub const CONFIG` and `pub fn open`, then add one line to `engines!` below.
//!
//! An adapter folder holds only what is particular to its engine, in small files; what
//! several adapters need (starting a local server through `scripts/servers/<name>.sh`,
//! finding a server's process, the row-shape check, idle connections, URL redaction) is in
//! [`support`].

use crate::engine::EngineEntry;

/// Parameter parsing shared by the qdrant and qdrant-edge adapters.
pub mod qdrant_settings;

/// Help shared by the adapters: local servers, process discovery, row checks, URL redaction.
pub mod support;

macro_rules! engines {
    ($($module:ident => $name:literal, embedded: $embedded:literal, $summary:literal;)*) => {
        $(pub mod $module;)*

        /// Every registered engine, in the order `ragdbeval engines` lists them.
        pub const ENGINES: &[EngineEntry] = &[
            $(EngineEntry {
                name: $name,
                summary: $summary,
                config_toml: $module::CONFIG,
                embedded: $embedded,
                open: $module::open,
            },)*
        ];
    };
}

engines! {
    qdrant_edge => "qdrant-edge", embedded: true, "Qdrant's engine in-process (the qdrant-edge crate): HNSW, quantization";
    exact => "exact", embedded: true, "brute force over the live set (the reference: recall is always 1.000)";
    qdrant => "qdrant", embedded: false, "a Qdrant server over gRPC (qdrant-client); --url, default http://localhost:6334";
    pgvector => "pgvector", embedded: false, "PostgreSQL + pgvector server (HNSW/IVFFlat, halfvec, binary quantization); scripts/servers/pgvector.sh";
    chroma => "chroma", embedded: false, "Chroma server over HTTP API v2; scripts/servers/chroma.sh";
    redis => "redis", embedded: false, "Redis 8 vector sets (VADD/VSIM, cosine); scripts/servers/redis.sh";
}

/// Looks an engine up by name.
pub fn find(name: &str) -> Option<&'static EngineEntry> {
    ENGINES.iter().find(|e| e.name == name)
}

/// Names of all engines, for error messages.
pub fn names() -> String {
    ENGINES
        .iter()
        .map(|e| e.name)
        .collect::<Vec<_>>()
        .join(", ")
}
