//! Help shared by the engine adapters, so each adapter folder holds only what is particular
//! to its engine: starting a local server through its script, finding a server's process,
//! and checking row shapes. Credentials are kept out of messages by [`crate::secret`].

pub mod filter;
pub mod http;
pub mod per_thread;
pub mod poll;
pub mod pool;
pub mod process;
pub mod server;
#[cfg(test)]
pub mod testing;
pub mod upload;

/// The shape check lives with the engine contract ([`crate::engine::Query`] uses it); the
/// adapters' write paths reach it here.
pub use crate::engine::rows;
