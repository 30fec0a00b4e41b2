//! Arguments of `ragdbeval embed`.

use std::path::PathBuf;

use clap::{ArgGroup, Args, ValueEnum};

use super::parse_count;

pub(super) const EMBED_EXAMPLES: &str = "\
Long documents: each window of at most max_seq_length − 2 tokens (254 for all-MiniLM-L6-v2)
becomes a vector; a window starts `window − overlap` tokens after the previous one and the
last ends at the document's end. Queries are truncated to one window, as sentence-transformers
does. A document with a title is embedded as `title + \" \" + text` (BEIR's rule).

Output (--out DIR, written whole or not at all): base.fbin (one vector per window), query.fbin,
gt.ibin (exact neighbours, angular), chunks.tsv (vector id → corpus-id, window, token range),
queries.tsv (query index → query-id), qrels.txt (TREC qrels: query index, vector id, score,
every window of each judged document) and embed.json (model, rule, counts, timings). With
--sparse bm25 also sparse/base.csr and sparse/queries.csr (each window's and query's BM25
vector, sparse/encoding.json: tokenizer, k1, b) and texts/ (each window's and query's text),
what `bench --retrieval sparse|hybrid` reads.
`bench --dataset DIR` loads it (angular, from embed.json) and scores every search step on the
retrieval task against qrels.txt too, beside recall against the exact neighbours.

Examples:
  scripts/install/minilm.sh
      Installs sentence-transformers' all-MiniLM-L6-v2 and prints its folder.
  ragdbeval embed --beir data/scifact --model \"$(scripts/install/minilm.sh)\" --out data/scifact-minilm
      A BEIR directory: corpus.jsonl, queries.jsonl, qrels/test.tsv; only judged queries.
  ragdbeval embed --corpus docs.jsonl --queries questions.jsonl --model DIR --out data/docs
      JSONL files of {\"_id\", \"text\", optional \"title\"}, without judgments.
  ragdbeval bench --dataset data/scifact-minilm --runbook build-search --trec-run run.trec
      Recall against the exact neighbours and task NDCG@10 against the judgments, per step.
  ragdbeval eval --means trec_eval-c --qrels data/scifact-minilm/qrels.txt --run run.trec
      The same task figures from the exported run, window by window.";

/// Sparse vectors `embed` can derive from the texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SparseEncoding {
    /// Okapi BM25 (k1 1.2, b 0.75) over tantivy's default tokens.
    Bm25,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("input").required(true).args(["beir", "corpus"])))]
pub struct EmbedArgs {
    /// A BEIR directory: corpus.jsonl, queries.jsonl and qrels/<SPLIT>.tsv. Only the queries
    /// the qrels judge are embedded, as BEIR evaluates.
    #[arg(long, conflicts_with_all = ["corpus", "queries", "qrels"])]
    pub beir: Option<PathBuf>,
    /// The qrels file of a BEIR directory: qrels/<SPLIT>.tsv.
    #[arg(long, default_value = "test")]
    pub split: String,
    /// Documents, JSONL: one {"_id", "text", optional "title"} per line.
    #[arg(long, requires = "queries")]
    pub corpus: Option<PathBuf>,
    /// Queries, JSONL: one {"_id", "text"} per line.
    #[arg(long, requires = "corpus")]
    pub queries: Option<PathBuf>,
    /// Relevance judgments for --corpus/--queries, BEIR's TSV (query-id, corpus-id, score).
    #[arg(long, requires = "corpus")]
    pub qrels: Option<PathBuf>,
    /// A local sentence-transformers model folder (modules.json, 1_Pooling/config.json,
    /// sentence_bert_config.json, config.json, model.safetensors, tokenizer.json);
    /// scripts/install/minilm.sh installs all-MiniLM-L6-v2 and prints its folder.
    #[arg(long)]
    pub model: PathBuf,
    /// The dataset directory to write (must not exist, or be empty).
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    /// Tokens a document window shares with the next.
    #[arg(long, default_value_t = 32)]
    pub overlap: usize,
    /// One vector per document, of its first window only (what sentence-transformers'
    /// `encode` does), instead of one per window.
    #[arg(long)]
    pub truncate: bool,
    /// Also write sparse vectors of each window and query (and their texts), for sparse and
    /// hybrid runs.
    #[arg(long, value_enum)]
    pub sparse: Option<SparseEncoding>,
    /// Sequences per forward pass of the model.
    #[arg(long, default_value_t = 32, value_parser = parse_count)]
    pub batch_size: usize,
    /// Depth of the exact ground truth (nearest windows per query).
    #[arg(short = 'k', long, default_value_t = 100, value_parser = parse_count)]
    pub k: usize,
    /// Embed only the first N documents (judgments of the others are dropped).
    #[arg(long, value_parser = parse_count)]
    pub max_docs: Option<usize>,
    /// Embed only the first Q queries (after keeping the judged ones).
    #[arg(long, value_parser = parse_count)]
    pub max_queries: Option<usize>,
    /// No progress bar; the closing summary line still prints.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}
