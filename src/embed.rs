//! Text to vectors: a corpus and its queries (JSONL, or a BEIR directory with its qrels)
//! embedded in-process by a local sentence-transformers model, so that a benchmark can run on
//! the vectors a retrieval system would really store, and score the end task against the
//! corpus' own relevance judgments.
//!
//! - [`input`] reads the texts (`_id`, `text`, optional `title`) and the qrels, with one error
//!   naming the file and line of anything malformed.
//! - [`config`] reads the model folder's sentence-transformers configuration (modules, pooling,
//!   maximum sequence length) and [`pooling`] applies the pooling and normalisation it asks for.
//! - [`chunk`] cuts a long document's tokens into windows that each fit the model.
//! - `bert` (cargo feature `embed`) is the BERT encoder; `model` runs it with the tokenizer of
//!   `tokenizer.json`; `corpus` drives it over whole corpora, batches on all cores.
//! - [`output`] writes the vectors as a dataset, with the map back to the texts and the
//!   judgments mapped to the vectors.

#[cfg(feature = "embed")]
pub mod bert;
pub mod chunk;
pub mod config;
#[cfg(feature = "embed")]
pub mod corpus;
pub mod input;
#[cfg(feature = "embed")]
pub mod model;
pub mod output;
pub mod pooling;

/// What builds a ragdbeval that can embed text (without the heavier default engine, add
/// `--no-default-features` only when no other engine is needed).
pub const BUILD_COMMAND: &str = "cargo build --release --features embed";

/// Why a model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A configuration or model file that cannot be read or parsed.
    #[error("{path}: {message}")]
    File {
        path: std::path::PathBuf,
        message: String,
    },
    /// Something in the model folder this implementation does not do.
    #[error("{0}")]
    Unsupported(String),
    /// The tokenizer failed on a text.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The encoder failed (shapes, memory).
    #[error("model: {0}")]
    Model(String),
    #[error(transparent)]
    Chunk(#[from] chunk::ChunkError),
}

impl EmbedError {
    /// A file error naming `path`.
    pub fn file(path: &std::path::Path, message: impl std::fmt::Display) -> EmbedError {
        EmbedError::File {
            path: path.to_path_buf(),
            message: message.to_string(),
        }
    }
}
