//! Retrieval evaluation over relevance judgments (`ragdbeval eval`): qrels and runs read from
//! files ([`parse`]), each run's results matched to the judgments and scored per query and on
//! average ([`score`]).
//!
//! Two worlds meet here. TREC files (qrels `qid 0 docid grade`, runs `qid Q0 docid rank score
//! tag`) are matched exactly on document ids and scored as trec_eval scores them; the JSONL
//! ground truth of RAG evaluations (`gold_references` of document + page + relevance) is matched
//! fuzzily on the document's normalised name and the page within ±1, each gold reference at
//! most once.

pub mod evaluate;
pub mod parse;
pub mod score;

/// What can go wrong reading qrels or a run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Line {
        path: String,
        line: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    File { path: String, message: String },
}

/// One judged query.
#[derive(Debug, Clone, Default)]
pub struct JudgedQuery {
    pub id: String,
    pub text: Option<String>,
    pub category: Option<String>,
    pub difficulty: Option<String>,
    /// A query the corpus has no answer for: the right response is no result.
    pub is_rejection: bool,
    pub references: Vec<Reference>,
    /// Gold answers (for the answer metrics), when the judgments carry them.
    pub gold_answers: Vec<String>,
}

/// A document id as judged or retrieved. Ids of up to 24 bytes (TREC, BEIR and MS MARCO ids)
/// are held inline: a run has millions of them, and a heap string each costs more than the
/// rest of the parse.
pub type DocumentId = compact_str::CompactString;

/// One judged document: a TREC docid, or a RAG ground-truth document and page.
#[derive(Debug, Clone)]
pub struct Reference {
    pub document: DocumentId,
    pub page: Option<i64>,
    /// Relevance grade; relevant when ≥ 1 (trec_eval's default relevance level).
    pub grade: i64,
}

/// How results are matched to references.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matching {
    /// Document ids compared as they are (TREC).
    Exact,
    /// Normalised document name and page within ±1, each reference matched once (RAG ground-truth
    /// JSONL).
    Fuzzy,
}

/// All judgments of one file.
#[derive(Debug, Clone)]
pub struct Judgments {
    pub queries: Vec<JudgedQuery>,
    pub matching: Matching,
}

/// One retrieved result. A TREC run has millions of them and never a page or text, so
/// those two sit behind one pointer: 40 bytes a hit instead of 72.
#[derive(Debug, Clone)]
pub struct Hit {
    pub document: DocumentId,
    pub score: f64,
    extra: Option<Box<HitExtra>>,
}

/// What only RAG runs give a result.
#[derive(Debug, Clone)]
struct HitExtra {
    page: Option<i64>,
    text: Option<String>,
}

impl Hit {
    /// A result with neither page nor text (a TREC line, an engine's answer).
    pub fn new(document: impl Into<DocumentId>, score: f64) -> Hit {
        Hit {
            document: document.into(),
            score,
            extra: None,
        }
    }

    /// A result of a RAG run, with its page and text when it has them.
    pub fn with_page_and_text(
        document: impl Into<DocumentId>,
        score: f64,
        page: Option<i64>,
        text: Option<String>,
    ) -> Hit {
        let extra = (page.is_some() || text.is_some()).then(|| Box::new(HitExtra { page, text }));
        Hit {
            document: document.into(),
            score,
            extra,
        }
    }

    pub fn page(&self) -> Option<i64> {
        self.extra.as_ref().and_then(|e| e.page)
    }

    /// The retrieved text, when the run carries it (support metrics of answers).
    pub fn text(&self) -> Option<&str> {
        self.extra.as_ref().and_then(|e| e.text.as_deref())
    }
}

/// One query's answer in a run, results in rank order.
#[derive(Debug, Clone, Default)]
pub struct RunQuery {
    pub id: String,
    pub hits: Vec<Hit>,
    pub answer: Option<String>,
    pub latency_ms: Option<f64>,
}

/// A whole run, queries in file order.
#[derive(Debug, Clone, Default)]
pub struct Run {
    pub queries: Vec<RunQuery>,
}
