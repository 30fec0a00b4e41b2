// The engine registry: one line per engine, `module => "registry name"`, in the order
// `ragdbeval engines` lists them. Everything else about an engine is in its folder
// (`adapters/<module>/`: `mod.rs` with `CONFIG` and `open`, `meta.rs` with `ENGINE`).
//
// Three places expand this list with their own `engines!` macro: `adapters/mod.rs` (the
// registry), `build.rs` (which engines are server engines and whose tests can run) and
// `tests/it/conformance.rs` (the tests every engine must pass, one module per engine). Keep it
// a plain list. `#[cfg(feature = "...")]` before a line builds that adapter only with the
// feature: without it the engine is still listed (its meta.rs and config.toml) and its `open`
// names the build (the default features hold the embedded default and the server engines with
// a client crate; `scripts/ragdbeval` leaves the servers out until a command names one, and
// the fuzz build leaves out qdrant-edge). build.rs reports the tests of an engine not built as
// ignored.
engines! {
    #[cfg(feature = "qdrant-edge")]
    qdrant_edge => "qdrant-edge",
    exact => "exact",
    #[cfg(feature = "qdrant")]
    qdrant => "qdrant",
    #[cfg(feature = "pgvector")]
    pgvector => "pgvector",
    chroma => "chroma",
    #[cfg(feature = "redis")]
    redis => "redis",
    #[cfg(feature = "sqlite-vec")]
    sqlite_vec => "sqlite-vec",
    #[cfg(feature = "usearch")]
    usearch => "usearch",
    #[cfg(feature = "duckdb")]
    duckdb => "duckdb",
    #[cfg(feature = "diskann")]
    diskann => "diskann",
    #[cfg(feature = "milvus")]
    milvus => "milvus",
}
