// The engine registry: one line per engine, `module => "registry name"`, in the order
// `ragdbeval engines` lists them. Everything else about an engine is in its folder
// (`adapters/<module>/`: `mod.rs` with `CONFIG` and `open`, `meta.rs` with `ENGINE`).
//
// Three places expand this list with their own `engines!` macro: `adapters/mod.rs` (the
// registry), `build.rs` (which engines are server engines and whose tests can run) and
// `tests/it/conformance.rs` (the tests every engine must pass, one module per engine). Keep it
// a plain list. A `#[cfg(feature = ...)]` before a line makes that engine optional (qdrant-edge:
// a default feature, which the fuzz build leaves out). An engine behind a cargo feature of its
// own name that is not a default (usearch, duckdb, diskann) is listed without the attribute: a
// build without the feature compiles its adapter to an `open` that names the build command,
// and build.rs reports its tests as ignored.
engines! {
    #[cfg(feature = "qdrant-edge")]
    qdrant_edge => "qdrant-edge",
    exact => "exact",
    qdrant => "qdrant",
    pgvector => "pgvector",
    chroma => "chroma",
    redis => "redis",
    sqlite_vec => "sqlite-vec",
    usearch => "usearch",
    duckdb => "duckdb",
    diskann => "diskann",
    milvus => "milvus",
}
