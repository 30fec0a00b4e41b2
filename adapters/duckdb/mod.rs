//! `duckdb`: DuckDB in-process with its vss extension, whose HNSW index (usearch) answers
//! `ORDER BY <distance>(v, query) LIMIT k` over a `FLOAT[dim]` column.
//!
//! The adapter is behind the cargo feature `duckdb`: it links the DuckDB 1.5.5 library and
//! loads the vss extension built for it, both installed by `scripts/install/duckdb.sh` into
//! `.deps/duckdb/` (nothing is downloaded at run time; DuckDB's own extension autoloading is
//! turned off). The extension is found at `$RAGDBEVAL_DUCKDB_VSS`, else in that directory of
//! the clone the binary was built from. A binary built without the feature still lists the
//! engine and refuses to open it, naming the commands that build it.
//!
//! One table per collection: `id BIGINT`, `v FLOAT[dim]`, one column per attribute. The bulk
//! load appends Arrow batches through DuckDB's Appender; `wait_until_ready` then creates the
//! HNSW index (its time is build time) and checks with `EXPLAIN` that the search statement is
//! answered by `HNSW_INDEX_SCAN`. Upserts and deletes run in a transaction each (vss marks
//! deleted rows in the graph; the scan never returns them). Searches run on one connection
//! per client thread (idle ones are pooled), each with its prepared statements.
//!
//! Files: `params` (build and search parameters), `sql` (the statements), `store` (the
//! collection's connections, loads and writes), `engine` (the trait impl), `report` (index
//! facts and sizes).

use crate::engine::{ConnectOptions, EngineResult, VectorEngine};

mod engine;
mod params;
mod report;
mod sql;
mod store;
#[cfg(test)]
mod tests;

pub use engine::DuckDb;

/// The registry name.
const ENGINE: &str = crate::adapters::meta::duckdb::NAME;

/// Opens the engine: checks that the vss extension is installed and loads into DuckDB.
pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    engine::open(opts)
}

