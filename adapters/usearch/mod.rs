//! Adapter for usearch (the `usearch` crate: Unum's HNSW library, C++ behind cxx), running
//! inside the ragdbeval process.
//!
//! Every `add` links the point into the HNSW graph before it returns, so the build is the
//! load alone and [`VectorEngine::wait_until_ready`] only reports what the index holds: its
//! own counts (size, graph nodes and edges), memory use and the SIMD kernels its metric runs
//! on. usearch needs its capacity reserved before points are added; the adapter reserves the
//! expected build size and doubles the capacity whenever more points arrive.
//!
//! The adapter is behind the cargo feature `usearch` (usearch's C++ and its SIMD kernels are
//! a long compile the default build does without); a binary built without it still lists
//! the engine and refuses to open it, naming the command that builds it.
//!
//! Files: `settings` (parameters and metric), `collection` (the index, its locks, writes and
//! searches), `engine` (the trait impl).

use crate::engine::{ConnectOptions, EngineResult, VectorEngine};

mod collection;
mod engine;
mod settings;
#[cfg(test)]
mod tests;

pub use engine::USearch;

/// Registry name of the engine.
const NAME: &str = crate::adapters::meta::usearch::NAME;

/// Opens the adapter. The engine runs in-process: there is nothing to connect to, and no
/// file to recreate (the index lives in memory).
pub fn open(_opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(USearch::default()))
}

