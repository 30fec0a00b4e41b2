//! Retrieval sets built from real text found on the machine (`ragdbeval dataset make-text`):
//! known-item retrieval, where each query is an item's one-line description and its only
//! relevant document is that item's text.
//!
//! A source ([`manpages`], [`debian`]) turns what the machine has into [`known_item::Item`]s; the rule
//! that makes documents and queries of them ([`known_item::select`]) and the BEIR directory
//! written from them ([`beir`]) are shared, so `ragdbeval embed --beir` reads the result as any
//! BEIR download.

pub mod beir;
pub mod debian;
pub mod known_item;
pub mod manpages;

#[cfg(test)]
mod tests;

use std::path::PathBuf;

/// Why a text set could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TextSetError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A program the source needs is missing or failed outside any one input.
    #[error("{0}")]
    Tool(String),
    /// The source yielded too little to build a set from.
    #[error("{0}")]
    TooSmall(String),
}

impl TextSetError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> TextSetError {
        TextSetError::Io {
            path: path.into(),
            source,
        }
    }
}

/// `text` with whitespace collapsed to single spaces, typographic quotes and dashes as ASCII,
/// cut to its first `words` words.
pub fn normalise(text: &str, words: usize) -> String {
    let ascii: String = text
        .chars()
        .map(|c| match c {
            '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2212}' => '-',
            '\u{2018}' | '\u{2019}' => '\'',
            '\u{201C}' | '\u{201D}' => '"',
            '\u{00A0}' => ' ',
            other => other,
        })
        .collect();
    ascii
        .split_whitespace()
        .take(words)
        .collect::<Vec<_>>()
        .join(" ")
}
