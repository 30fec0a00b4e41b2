//! `sqlite-vec`: SQLite's `vec0` virtual table (the `sqlite-vec` crate, its C source compiled
//! in) on SQLite bundled by `rusqlite`, in process.
//!
//! vec0 keeps vectors in chunks of `chunk_size` rows and answers a KNN query
//! (`embedding MATCH ? AND k = ?`) by scanning every chunk: brute force, exact for float32
//! vectors. The quantized variants scan an `int8` or `bit` copy of every vector instead, and
//! by default re-rank the candidates by their float vector (sqlite-vec's re-scoring). Filters
//! are constraints on vec0 metadata columns, evaluated inside the scan ([`sql`]).
//!
//! The database is a file in the run's work directory, in WAL mode, memory-mapped and with a
//! page cache per connection (`mmap_mb`, `cache_mb`): a file because separate connections
//! per searching thread need one (an in-memory database belongs to one connection), and
//! mapped so that once read it is searched from memory, as the in-memory engines are. The
//! `on-disk` set turns the mapping off and keeps SQLite's small default page cache.
//!
//! The adapter is behind the cargo feature `sqlite-vec` (SQLite's and sqlite-vec's C are a
//! compile the default build does without); a binary built without it still lists the engine
//! and refuses to open it, naming the command that builds it.
//!
//! Files: `params` (build and search parameters), `conn` (connections, sqlite-vec
//! registration), `sql` (statements and filters), `collection` (the database and its
//! connections), `engine` (the trait impls).

use crate::engine::{ConnectOptions, EngineResult, VectorEngine};

mod collection;
mod conn;
mod engine;
mod params;
mod sql;
#[cfg(test)]
mod tests;

pub use engine::SqliteVec;

/// Registry name of the engine.
const ENGINE: &str = crate::adapters::meta::sqlite_vec::NAME;

/// Opens the adapter; nothing to connect to (`url` does not apply), `recreate` is honoured.
pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(SqliteVec::new(opts)?))
}

