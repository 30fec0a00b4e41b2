//! `diskann`: Microsoft's DiskANN in-process, from its Rust crates (`diskann`,
//! `diskann-providers`): a Vamana graph in memory over full-precision f32 vectors, built with
//! R (`max_degree`), L (`l_build`) and `alpha`, searched with a search list `l_search`.
//!
//! The adapter is behind the cargo feature `diskann`: DiskANN's crates turn on a feature of
//! `half` (`rand_distr`) that qdrant-edge and parquet also use, so building with it rebuilds
//! them once. A binary built without the feature still lists the engine and refuses to open
//! it, naming the command that builds it.
//!
//! The bulk load is kept until `wait_until_ready`, which builds the graph (its time is build
//! time): the medoid of the load becomes DiskANN's start point, then every point is inserted
//! from several threads at once, as DiskANN's in-memory build does. Upserts and deletes are
//! DiskANN's own inserts and in-place deletes; filtered searches are its multi-hop filtered
//! search with the predicate as its label callback. Euclidean, angular and dot data map to
//! DiskANN's L2, cosine and inner product.
//!
//! DiskANN's on-disk index (`diskann-disk`: PQ-compressed vectors in memory, the graph and
//! full vectors on SSD) is not driven here.
//!
//! Files: `settings` (parameters and metric), `graph` (the index, its slots, writes),
//! `query` (searches, the library's figures, sizes), `engine` (the trait impl).

use crate::engine::{ConnectOptions, EngineResult, VectorEngine};

/// What this engine declares about itself (summary, server, conformance settings).
pub mod meta;

/// The engine's named parameter sets and sweeps.
pub const CONFIG: &str = include_str!("config.toml");

#[cfg(feature = "diskann")]
mod engine;
#[cfg(feature = "diskann")]
mod graph;
#[cfg(feature = "diskann")]
mod query;
#[cfg(feature = "diskann")]
mod settings;
#[cfg(all(test, feature = "diskann"))]
mod tests;

#[cfg(feature = "diskann")]
pub use engine::DiskAnn;

/// Registry name of the engine.
const NAME: &str = "diskann";

/// The version of DiskANN's crates, pinned in Cargo.toml.
#[cfg(feature = "diskann")]
const DISKANN_VERSION: &str = "0.61.0";

/// What builds a ragdbeval that has this engine.
pub const BUILD_COMMAND: &str = "cargo build --release --features diskann";

/// Opens the adapter. The engine runs in-process: there is nothing to connect to, and no
/// file to recreate (the index lives in memory).
#[cfg(feature = "diskann")]
pub fn open(_opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(DiskAnn::default()))
}

/// This build has no DiskANN: says how to get one.
#[cfg(not(feature = "diskann"))]
pub fn open(_opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Err(crate::engine::EngineError::op(
        NAME,
        "open",
        format!(
            "this ragdbeval was built without the `diskann` cargo feature; build it with \
             `{BUILD_COMMAND}`"
        ),
    ))
}
