//! The tantivy side of `bm25`: the schema, the writer's settings, and the searcher a built
//! index answers through.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use tantivy::collector::TopDocs;
use tantivy::columnar::Column;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{FAST, Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::{TextAnalyzer, TokenStream};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, Term};

use super::NAME;
use crate::engine::{EngineError, EngineResult, Neighbor};
use crate::params::{ParamMap, ParamMapExt};

/// The analyzer the text field is indexed with, and queries are analysed with: tantivy's
/// `default`, which [`crate::sparse::bm25::tokens`] reproduces.
pub(super) const TOKENIZER: &str = "default";

const TEXT: &str = "text";
const ID: &str = "id";

/// The build parameters the engine knows.
const BUILD_PARAMS: &[&str] = &["writer_heap_mb", "threads"];

/// tantivy refuses a writer thread less memory than this (`MEMORY_BUDGET_NUM_BYTES_MIN`).
const MIN_MB_PER_THREAD: u64 = 15;

/// tantivy refuses a writer thread this much memory or more (`MEMORY_BUDGET_NUM_BYTES_MAX`).
const MAX_BYTES_PER_THREAD: u64 = u32::MAX as u64 - 1_000_000;

/// The writer's memory when none is given: a few segments per million short texts.
const DEFAULT_HEAP_MB: u64 = 256;

/// tantivy's own cap on the threads it picks (`MAX_NUM_THREAD`).
const MAX_DEFAULT_THREADS: u64 = 8;

pub(super) fn op(operation: &str) -> impl Fn(tantivy::TantivyError) -> EngineError + '_ {
    move |e| EngineError::op(NAME, operation, e)
}

fn bad_param(param: &str, message: impl std::fmt::Display) -> EngineError {
    EngineError::bad_param(NAME, param, message)
}

/// The schema's two fields.
#[derive(Debug, Clone, Copy)]
pub(super) struct Fields {
    /// The row's text: positions left out (no phrase queries), frequencies and field norms
    /// kept (BM25 needs both).
    pub text: Field,
    /// The row id, a fast field: what a hit is reported as.
    pub id: Field,
}

pub(super) fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(TOKENIZER)
        .set_index_option(IndexRecordOption::WithFreqs)
        .set_fieldnorms(true);
    let text = builder.add_text_field(TEXT, TextOptions::default().set_indexing_options(indexing));
    let id = builder.add_u64_field(ID, FAST);
    (builder.build(), Fields { text, id })
}

/// The `IndexWriter`'s memory and threads (build parameters `writer_heap_mb`, `threads`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct WriterSettings {
    /// The whole writer's memory, in MB of 10^6 bytes (tantivy's unit), split evenly among
    /// its threads.
    pub heap_mb: u64,
    pub threads: u64,
}

impl WriterSettings {
    pub fn parse(params: &ParamMap) -> EngineResult<WriterSettings> {
        params
            .reject_unknown(BUILD_PARAMS)
            .map_err(|e| bad_param("build", e))?;
        let heap_mb = params
            .get_u64("writer_heap_mb")
            .map_err(|e| bad_param("writer_heap_mb", e))?
            .unwrap_or(DEFAULT_HEAP_MB);
        let threads = match params
            .get_count("threads")
            .map_err(|e| bad_param("threads", e))?
        {
            Some(t) => t,
            // What `Index::writer` picks: a thread per core, at most 8, as many as the memory
            // gives each its minimum.
            None => {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
                cores
                    .min(MAX_DEFAULT_THREADS)
                    .min(heap_mb / MIN_MB_PER_THREAD)
                    .max(1)
            }
        };
        if heap_mb / threads < MIN_MB_PER_THREAD {
            return Err(bad_param(
                "writer_heap_mb",
                format!(
                    "{heap_mb} MB leaves each of {threads} writer threads less than tantivy's \
                     minimum of {MIN_MB_PER_THREAD} MB"
                ),
            ));
        }
        if heap_mb.saturating_mul(1_000_000) / threads >= MAX_BYTES_PER_THREAD {
            return Err(bad_param(
                "writer_heap_mb",
                format!(
                    "{heap_mb} MB gives each of {threads} writer threads 4 GB or more, tantivy's \
                     maximum"
                ),
            ));
        }
        Ok(WriterSettings { heap_mb, threads })
    }

    pub fn writer(&self, index: &Index) -> EngineResult<IndexWriter> {
        index
            .writer_with_num_threads(self.threads as usize, (self.heap_mb * 1_000_000) as usize)
            .map_err(op("open the index writer"))
    }

    pub fn to_json(self) -> Value {
        json!({"writer_heap_mb": self.heap_mb, "threads": self.threads})
    }
}

/// Tokens of `text` as `analyzer` gives them, in order.
pub(super) fn analyze(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut stream = analyzer.token_stream(text);
    let mut tokens = Vec::new();
    while stream.advance() {
        tokens.push(stream.token().text.clone());
    }
    tokens
}

/// A committed index opened for search: one reader, the searcher of its one generation (the
/// reload policy is manual: nothing changes it), and each segment's row-id column.
pub(super) struct Ready {
    _reader: IndexReader,
    searcher: Searcher,
    /// Indexed by segment ordinal, as a hit's `DocAddress` names its segment.
    ids: Vec<Column<u64>>,
    analyzer: TextAnalyzer,
    text: Field,
}

impl Ready {
    pub fn open(index: &Index, fields: Fields) -> EngineResult<Ready> {
        let reader: IndexReader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(op("open the reader"))?;
        let searcher = reader.searcher();
        let ids = searcher
            .segment_readers()
            .iter()
            .map(|s| s.fast_fields().u64(ID))
            .collect::<tantivy::Result<Vec<_>>>()
            .map_err(op("open the row-id column"))?;
        let analyzer = index
            .tokenizer_for_field(fields.text)
            .map_err(op("find the text field's analyzer"))?;
        Ok(Ready {
            _reader: reader,
            searcher,
            ids,
            analyzer,
            text: fields.text,
        })
    }

    pub fn segments(&self) -> usize {
        self.searcher.segment_readers().len()
    }

    pub fn docs(&self) -> u64 {
        self.searcher.num_docs()
    }

    /// The distinct terms of `text`, analysed as the documents were.
    fn terms(&self, text: &str) -> Vec<Term> {
        // A clone per query: analysing takes `&mut`, and searches share `&self`.
        let mut analyzer = self.analyzer.clone();
        let distinct: BTreeSet<String> = analyze(&mut analyzer, text).into_iter().collect();
        distinct
            .iter()
            .map(|t| Term::from_field_text(self.text, t))
            .collect()
    }

    /// The BM25 top-`k` of `text`: `(row, score)`, best first, ties by the smaller row.
    pub fn top(&self, text: &str, k: usize, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        out.clear();
        let terms = self.terms(text);
        if k == 0 || terms.is_empty() {
            return Ok(());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .into_iter()
            .map(|t| {
                let q: Box<dyn Query> = Box::new(TermQuery::new(t, IndexRecordOption::WithFreqs));
                (Occur::Should, q)
            })
            .collect();
        let hits = self
            .searcher
            .search(
                &BooleanQuery::new(clauses),
                &TopDocs::with_limit(k).order_by_score(),
            )
            .map_err(op("search"))?;
        for (score, at) in hits {
            let id = self
                .ids
                .get(at.segment_ord as usize)
                .and_then(|column| column.first(at.doc_id))
                .ok_or_else(|| {
                    EngineError::op(
                        NAME,
                        "search",
                        format!(
                            "document {} of segment {} has no row id",
                            at.doc_id, at.segment_ord
                        ),
                    )
                })?;
            out.push(Neighbor { id, score });
        }
        // tantivy breaks ties by document address, which is not the row order across segments.
        out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
        Ok(())
    }
}
