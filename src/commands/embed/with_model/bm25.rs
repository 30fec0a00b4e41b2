//! `embed --sparse bm25`: each window's text (its token span of the document; the whole text
//! for a document that is one window) and each query's text, BM25-encoded over the windows
//! ([`crate::sparse::bm25`]).

use serde_json::json;

use crate::embed::corpus::ChunkRef;
use crate::embed::input::TextRecord;
use crate::embed::model::Embedder;
use crate::embed::output::EmbedLexical;
use crate::sparse::Csr;
use crate::sparse::bm25::{Bm25Index, Bm25Params};

/// The lexical side of an embedded corpus.
pub(super) struct Side {
    base: Csr,
    queries: Csr,
    base_texts: Vec<String>,
    query_texts: Vec<String>,
    encoding: serde_json::Value,
}

impl Side {
    pub(super) fn as_output(&self) -> EmbedLexical<'_> {
        EmbedLexical {
            base: &self.base,
            queries: &self.queries,
            encoding: self.encoding.clone(),
            base_texts: &self.base_texts,
            query_texts: &self.query_texts,
        }
    }
}

/// The BM25 side of `corpus` cut into `chunks` (in vector order), and of `queries`.
pub(super) fn side(
    embedder: &Embedder,
    corpus: &[TextRecord],
    chunks: &[ChunkRef],
    queries: &[TextRecord],
) -> anyhow::Result<Side> {
    let base_texts = window_texts(embedder, corpus, chunks)?;
    let query_texts: Vec<String> = queries.iter().map(|q| q.text.clone()).collect();
    let rows: Vec<&str> = base_texts.iter().map(String::as_str).collect();
    let index = Bm25Index::fit(&rows, Bm25Params::default());
    let query_rows: Vec<&str> = query_texts.iter().map(String::as_str).collect();
    let queries = index.queries(&query_rows);
    let encoding = json!({
        "encoding": "bm25",
        "tokens": "tantivy's default analyzer: split at every non-alphanumeric character, \
                   tokens of 40 bytes or more dropped, lower-cased",
        "k1": index.params.k1,
        "b": index.params.b,
        "document_weight": "tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))",
        "query_weight": "idf = ln(1 + (N - df + 0.5) / (df + 0.5)), each distinct term once",
        "rows": "one per window: the window's text",
        "documents": index.documents,
        "average_length": index.average_length,
        "vocabulary": index.vocabulary.len(),
    });
    Ok(Side {
        base: index.vectors,
        queries,
        base_texts,
        query_texts,
        encoding,
    })
}

/// Each window's text, in vector order.
fn window_texts(
    embedder: &Embedder,
    corpus: &[TextRecord],
    chunks: &[ChunkRef],
) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::with_capacity(chunks.len());
    let mut i = 0;
    while i < chunks.len() {
        let doc = chunks[i].text;
        let end = i + chunks[i..].iter().take_while(|c| c.text == doc).count();
        let text = &corpus[doc].text;
        let (read, spans) = embedder.token_spans(text)?;
        let whole = end - i == 1 && chunks[i].tokens == (0..spans.len());
        for c in &chunks[i..end] {
            let span = match (
                whole,
                spans.get(c.tokens.start),
                spans.get(c.tokens.end.wrapping_sub(1)),
            ) {
                (false, Some(first), Some(last)) => read.get(first.0..last.1),
                _ => None,
            };
            out.push(span.map_or_else(|| text.clone(), str::to_string));
        }
        i = end;
    }
    Ok(out)
}
