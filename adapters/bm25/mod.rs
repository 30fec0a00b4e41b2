//! `bm25`: tantivy's inverted index and BM25 scoring over the rows' texts, in-process: the
//! lexical baseline of sparse and hybrid runs. It reads the texts (`texts/` of the dataset),
//! not the sparse vectors: it tokenises them with tantivy's `default` analyzer, the one
//! [`crate::sparse::bm25`] encodes with, so its scores are the exact truth's up to tantivy's
//! f32 arithmetic and its field norms (document lengths above 40 tokens rounded to one of 256
//! levels).
//!
//! A query is its distinct tokens as a disjunction of term queries (never tantivy's query
//! parser, which would read `AND`, `:` or quotes in a query as syntax), collected by
//! `TopDocs::order_by_score` (Block-WAND), then ordered by score and row id.
//!
//! The adapter is behind the cargo feature `bm25`; a binary built without it still lists the
//! engine and refuses to open it, naming the command that builds it.
//!
//! Files: `index` (schema, writer settings, the searcher), `engine` (the trait impl).

use crate::engine::ConnectOptions;
use crate::engine::EngineResult;
use crate::engine::hybrid::HybridEngine;

#[cfg(feature = "bm25")]
mod engine;
#[cfg(feature = "bm25")]
mod index;
#[cfg(all(test, feature = "bm25"))]
mod tests;

/// Registry name of the engine.
const NAME: &str = crate::adapters::meta::bm25::NAME;

/// Opens the adapter. The index lives in the run's work directory; `--recreate` replaces one
/// left there.
#[cfg(feature = "bm25")]
pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn HybridEngine>> {
    Ok(Box::new(engine::Bm25::new(opts.recreate)))
}

/// This build has no tantivy: says how to get one.
#[cfg(not(feature = "bm25"))]
pub fn open(_opts: &ConnectOptions) -> EngineResult<Box<dyn HybridEngine>> {
    Err(super::not_built(NAME, "bm25"))
}
