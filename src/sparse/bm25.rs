//! Okapi BM25 as sparse vectors, so that an exact dot product is the BM25 score and every engine
//! with sparse vectors ranks text the way a BM25 index does.
//!
//! - Tokens: tantivy's `default` analyzer, which the lexical engine (`--db bm25`) indexes with:
//!   the text split at every character that is not alphanumeric (Unicode), tokens of 40 bytes
//!   or more dropped, the rest lower-cased.
//! - Document `d`, term `t` with `tf` occurrences, `dl` tokens in `d`, `avgdl` the mean over the
//!   corpus: `w(t, d) = tf · (k1 + 1) / (tf + k1 · (1 − b + b · dl / avgdl))`, k1 = 1.2, b = 0.75
//!   (tantivy's and Lucene's constants).
//! - Query: each distinct term once, weighted by `idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5))`
//!   (N documents, df of them containing `t`: Lucene's, tantivy's and Qdrant's IDF); terms no
//!   document has are dropped.
//!
//! Then `q · d = Σ idf(t) · w(t, d)` is BM25 exactly (tantivy rounds `dl` to one of 256 levels
//! above 40 tokens, which can swap near ties). The vocabulary is numbered in order of first
//! appearance in the corpus, so the encoding is deterministic.

use std::collections::HashMap;

use super::Csr;

/// BM25's two parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Params {
    pub k1: f64,
    pub b: f64,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params { k1: 1.2, b: 0.75 }
    }
}

/// Tokens of `text` as tantivy's `default` analyzer gives them.
pub fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty() && t.len() < 40)
        .map(str::to_lowercase)
}

/// A corpus encoded: its vocabulary and statistics, and the documents' vectors.
#[derive(Debug, Clone)]
pub struct Bm25Index {
    pub params: Bm25Params,
    /// Term → dimension.
    pub vocabulary: HashMap<String, u32>,
    /// Documents containing each dimension's term.
    pub document_frequency: Vec<u32>,
    pub documents: usize,
    pub average_length: f64,
    /// One row per document.
    pub vectors: Csr,
}

impl Bm25Index {
    /// Encodes `documents`.
    pub fn fit(documents: &[&str], params: Bm25Params) -> Bm25Index {
        let mut vocabulary: HashMap<String, u32> = HashMap::new();
        let mut document_frequency: Vec<u32> = Vec::new();
        let mut counted: Vec<(Vec<(u32, u32)>, usize)> = Vec::with_capacity(documents.len());
        for text in documents {
            let mut tf: HashMap<u32, u32> = HashMap::new();
            let mut length = 0;
            for token in tokens(text) {
                let next = vocabulary.len() as u32;
                let id = *vocabulary.entry(token).or_insert(next);
                if id == next {
                    document_frequency.push(0);
                }
                *tf.entry(id).or_default() += 1;
                length += 1;
            }
            let mut terms: Vec<(u32, u32)> = tf.into_iter().collect();
            terms.sort_unstable();
            for &(id, _) in &terms {
                document_frequency[id as usize] += 1;
            }
            counted.push((terms, length));
        }
        let total: usize = counted.iter().map(|(_, l)| l).sum();
        let average_length = if documents.is_empty() {
            0.0
        } else {
            total as f64 / documents.len() as f64
        };
        let rows: Vec<Vec<(u32, f32)>> = counted
            .iter()
            .map(|(terms, length)| {
                let norm =
                    params.k1 * (1.0 - params.b + params.b * *length as f64 / average_length);
                terms
                    .iter()
                    .map(|&(id, tf)| {
                        let tf = f64::from(tf);
                        (id, (tf * (params.k1 + 1.0) / (tf + norm)) as f32)
                    })
                    .collect()
            })
            .collect();
        Bm25Index {
            params,
            vectors: Csr::from_rows(vocabulary.len(), &rows),
            document_frequency,
            documents: documents.len(),
            average_length,
            vocabulary,
        }
    }

    /// The inverse document frequency of dimension `id`.
    pub fn idf(&self, id: u32) -> f64 {
        let n = self.documents as f64;
        let df = f64::from(self.document_frequency[id as usize]);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// The query vectors of `queries`: each distinct known term once, weighted by its IDF.
    pub fn queries(&self, queries: &[&str]) -> Csr {
        let rows: Vec<Vec<(u32, f32)>> = queries
            .iter()
            .map(|text| {
                let mut ids: Vec<u32> = tokens(text)
                    .filter_map(|t| self.vocabulary.get(&t).copied())
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                ids.into_iter()
                    .map(|id| (id, self.idf(id) as f32))
                    .collect()
            })
            .collect();
        Csr::from_rows(self.vocabulary.len(), &rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_split_at_non_alphanumerics_drop_long_ones_and_lower_case() {
        let long = "x".repeat(40);
        let text = format!(
            "Hello, WORLD! foo_bar {long} ok39{} Ünïcode",
            "y".repeat(35)
        );
        let got: Vec<String> = tokens(&text).collect();
        assert_eq!(
            got,
            [
                "hello",
                "world",
                "foo",
                "bar",
                &format!("ok39{}", "y".repeat(35)),
                "ünïcode"
            ]
        );
    }

    #[test]
    fn scores_are_bm25_by_hand() {
        // Three documents of 4, 2 and 3 tokens: avgdl = 3.
        let docs = ["a b a c", "b d", "c c e"];
        let index = Bm25Index::fit(&docs, Bm25Params::default());
        assert_eq!(index.average_length, 3.0);
        let id = |t: &str| index.vocabulary[t];
        assert_eq!(
            (id("a"), id("b"), id("c"), id("d"), id("e")),
            (0, 1, 2, 3, 4)
        );
        // idf(a) = ln(1 + (3 - 1 + 0.5) / (1 + 0.5)) = ln(8/3).
        assert!((index.idf(id("a")) - (8.0f64 / 3.0).ln()).abs() < 1e-12);
        // idf(c), df 2: ln(1 + 1.5 / 2.5) = ln(1.6).
        assert!((index.idf(id("c")) - 1.6f64.ln()).abs() < 1e-12);
        // w(a, d0): tf 2, dl 4: 2 · 2.2 / (2 + 1.2 · (0.25 + 0.75 · 4/3)) = 4.4 / 3.5.
        let d0 = index.vectors.entries(0);
        assert_eq!(d0.indices, [0, 1, 2]);
        assert!((f64::from(d0.values[0]) - 4.4 / 3.5).abs() < 1e-6);
        // Query "A c c z": a and c once each, z unknown.
        let q = index.queries(&["A c c z"]);
        let q0 = q.entries(0);
        assert_eq!(q0.indices, [0, 2]);
        // BM25(q, d2) = idf(c) · w(c, d2): tf 2, dl 3: 2 · 2.2 / (2 + 1.2) = 1.375.
        let want = 1.6f64.ln() * 1.375;
        assert!((q0.dot(&index.vectors.entries(2)) - want).abs() < 1e-6);
        assert_eq!(q0.dot(&index.vectors.entries(1)), 0.0);
    }
}
