//! `diskann`: Microsoft's DiskANN in-process, from its Rust crates (`diskann`,
//! `diskann-providers`, `diskann-disk`): a Vamana graph built with R (`max_degree`), L
//! (`l_build`) and `alpha`, searched with a search list `l_search`; in memory over
//! full-precision f32 vectors (`storage = "memory"`, the default), or DiskANN's on-disk index
//! (`storage = "disk"`).
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
//! The on-disk index (`diskann-disk`) is built at `wait_until_ready` too, into files in a
//! directory of the run's work directory (removed with the collection): PQ codes of
//! `pq_chunks` bytes a vector, kept in memory, and one file of 4 KiB sectors holding each
//! node's full vector beside its adjacency list, read with direct I/O (io_uring on Linux),
//! `beam_width` nodes a search step, the results re-ranked by the full vectors read. It is
//! static: writes after the build are refused as unsupported, naming the mode. Filtered
//! searches are DiskANN's inline label filter with the predicate as its callback.
//!
//! Files: `settings` (parameters and metric), `graph` (the in-memory index, its slots,
//! writes), `query` (its searches, the library's figures, sizes), `disk` (the on-disk index:
//! build, search, figures, sizes), `engine` (the trait impl).

use crate::engine::{ConnectOptions, EngineResult, VectorEngine};

/// Registry name of the engine.
const NAME: &str = crate::adapters::meta::diskann::NAME;

mod disk;
mod engine;
mod graph;
mod query;
mod settings;
#[cfg(test)]
mod tests;

pub use engine::DiskAnn;

/// The version of DiskANN's crates, pinned in Cargo.toml.
const DISKANN_VERSION: &str = "0.61.0";

/// Opens the adapter. The engine runs in-process: there is nothing to connect to, and no
/// file to recreate (the on-disk index's files live in a directory of each collection's
/// own, removed with it).
pub fn open(_opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(DiskAnn::default()))
}

