//! `ragdbeval embed`: a corpus and its queries embedded by a local sentence-transformers
//! model, written as a dataset with its exact ground truth and the corpus' judgments mapped to
//! the vectors. Needs the cargo feature `embed`; a build without it says how to build one.

use std::process::ExitCode;

use crate::cli::EmbedArgs;

/// Runs `embed`.
#[cfg(feature = "embed")]
pub fn run(args: EmbedArgs) -> anyhow::Result<ExitCode> {
    with_model::run(args)
}

/// Runs `embed`: in this build, one error saying how to build a ragdbeval that can.
#[cfg(not(feature = "embed"))]
pub fn run(_args: EmbedArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "this ragdbeval was built without the `embed` cargo feature; build it with `{}`",
        crate::embed::BUILD_COMMAND
    )
}

#[cfg(feature = "embed")]
mod with_model {
    use std::collections::{HashMap, HashSet};
    use std::process::ExitCode;
    use std::time::Instant;

    use anyhow::{Context, bail};

    use crate::cli::{EmbedArgs, SparseEncoding};
    use crate::dataset::compute_ground_truth;
    use crate::distance::Distance;
    use crate::embed::chunk::ChunkRule;
    use crate::embed::corpus::{Embedded, LongText, embed_texts};
    use crate::embed::input::{self, TextRecord, TextSet};
    use crate::embed::model::Embedder;
    use crate::embed::output::{self, EmbedDataset, VectorSource};
    use crate::output::progress;
    use crate::types::{Progress, ProgressUnit};
    use crate::vectors::Vectors;

    mod bm25;

    /// Texts embedded and how long it took.
    struct Timed {
        embedded: Embedded,
        seconds: f64,
    }

    pub(super) fn run(args: EmbedArgs) -> anyhow::Result<ExitCode> {
        output::check_writable(&args.out)?;
        let set = read_input(&args)?;
        let mut corpus = set.corpus;
        if let Some(n) = args.max_docs {
            corpus.truncate(n);
        }
        let queries = judged_queries(set.queries, set.qrels.as_deref(), args.max_queries);
        if queries.is_empty() {
            bail!("no query to embed: the qrels judge none of the queries");
        }
        let progress = progress::terminal(args.quiet);
        let embedder = Embedder::load(&args.model)
            .with_context(|| format!("loading the model in {}", args.model.display()))?;
        let rule = ChunkRule::new(embedder.window(), args.overlap)?;
        let long = if args.truncate {
            LongText::Truncate
        } else {
            LongText::Chunk(rule)
        };
        let mut docs = embed(&embedder, &corpus, ("documents", long), &args, &*progress)?;
        let queries_long = ("queries", LongText::Truncate);
        let mut qs = embed(&embedder, &queries, queries_long, &args, &*progress)?;
        let dim = embedder.dim();
        let base = Vectors::new(std::mem::take(&mut docs.embedded.vectors), dim)?;
        let test = Vectors::new(std::mem::take(&mut qs.embedded.vectors), dim)?;
        let truth = compute_ground_truth(&base, &test, Distance::Angular, args.k, &*progress)?;

        let sources: Vec<VectorSource> = docs
            .embedded
            .chunks
            .iter()
            .map(|c| VectorSource {
                doc: &corpus[c.text].id,
                chunk: c.chunk,
                tokens: c.tokens.clone(),
            })
            .collect();
        let query_ids: Vec<&str> = queries.iter().map(|q| q.id.as_str()).collect();
        let (qrels, skipped) = map_judgments(set.qrels.as_deref(), &sources, &query_ids);
        let manifest = manifest(&args, &embedder, rule, (&docs, &qs), (corpus.len(), &qrels));
        let lexical = match args.sparse {
            Some(SparseEncoding::Bm25) => Some(bm25::side(
                &embedder,
                &corpus,
                &docs.embedded.chunks,
                &queries,
            )?),
            None => None,
        };
        let dataset = EmbedDataset {
            base: &base,
            queries: &test,
            truth: &truth,
            sources: &sources,
            query_ids: &query_ids,
            qrels: &qrels,
            manifest,
            lexical: lexical.as_ref().map(bm25::Side::as_output),
        };
        output::write(&args.out, &dataset)?;
        let counts = (corpus.len(), queries.len(), dim, truth.k);
        report(&args, counts, (&docs, &qs), (qrels.len(), skipped));
        Ok(ExitCode::SUCCESS)
    }

    fn read_input(args: &EmbedArgs) -> anyhow::Result<TextSet> {
        if let Some(dir) = &args.beir {
            return Ok(input::read_beir(dir, &args.split)?);
        }
        let (Some(corpus), Some(queries)) = (&args.corpus, &args.queries) else {
            bail!("give --beir DIR, or --corpus FILE and --queries FILE");
        };
        Ok(TextSet {
            corpus: input::read_jsonl(corpus)?,
            queries: input::read_jsonl(queries)?,
            qrels: args.qrels.as_deref().map(input::read_qrels).transpose()?,
        })
    }

    /// The queries to embed: with judgments, only the judged ones (as BEIR evaluates), in
    /// file order; then at most `max`.
    fn judged_queries(
        queries: Vec<TextRecord>,
        qrels: Option<&[input::Qrel]>,
        max: Option<usize>,
    ) -> Vec<TextRecord> {
        let mut kept: Vec<TextRecord> = match qrels {
            Some(qrels) => {
                let judged: HashSet<&str> = qrels.iter().map(|q| q.query.as_str()).collect();
                queries
                    .into_iter()
                    .filter(|q| judged.contains(q.id.as_str()))
                    .collect()
            }
            None => queries,
        };
        if let Some(max) = max {
            kept.truncate(max);
        }
        kept
    }

    fn embed(
        embedder: &Embedder,
        records: &[TextRecord],
        (label, long): (&str, LongText),
        args: &EmbedArgs,
        progress: &dyn Progress,
    ) -> anyhow::Result<Timed> {
        let bar = progress.task(label, Some(records.len() as u64), ProgressUnit::Items);
        let texts: Vec<&str> = records.iter().map(|r| r.text.as_str()).collect();
        let started = Instant::now();
        let embedded = embed_texts(embedder, &texts, long, args.batch_size, &*bar)
            .with_context(|| format!("embedding the {label}"))?;
        Ok(Timed {
            embedded,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// The judgments by query index and vector id, and how many were left out.
    fn map_judgments(
        qrels: Option<&[input::Qrel]>,
        sources: &[VectorSource],
        query_ids: &[&str],
    ) -> (Vec<(usize, usize, i64)>, usize) {
        let Some(qrels) = qrels else {
            return (Vec::new(), 0);
        };
        let query_index: HashMap<&str, usize> =
            query_ids.iter().enumerate().map(|(i, q)| (*q, i)).collect();
        let mut doc_vectors: HashMap<&str, std::ops::Range<usize>> = HashMap::new();
        for (v, s) in sources.iter().enumerate() {
            doc_vectors.entry(s.doc).or_insert(v..v).end = v + 1;
        }
        output::map_qrels(qrels, &query_index, &doc_vectors)
    }

    fn manifest(
        args: &EmbedArgs,
        embedder: &Embedder,
        rule: ChunkRule,
        (docs, qs): (&Timed, &Timed),
        (documents, qrels): (usize, &[(usize, usize, i64)]),
    ) -> serde_json::Value {
        let config = embedder.config();
        serde_json::json!({
            "model": args.model.display().to_string(),
            "dim": embedder.dim(),
            "distance": "angular",
            "pooling": format!("{:?}", config.pooling).to_lowercase(),
            "normalize": config.normalize,
            "max_seq_length": embedder.max_seq_length(),
            "chunk_tokens": rule.window,
            "chunk_overlap": rule.overlap,
            "documents_truncated": args.truncate,
            "text_rule": if args.truncate {
                "title + \" \" + text, stripped (BEIR); documents and queries truncated to one window"
            } else {
                "title + \" \" + text, stripped (BEIR); queries truncated to one window"
            },
            "documents": documents,
            "vectors": docs.embedded.chunks.len(),
            "queries": qs.embedded.chunks.len(),
            "qrels_lines": qrels.len(),
            "document_tokens": docs.embedded.tokens,
            "document_seconds": docs.seconds,
            "query_seconds": qs.seconds,
            "batch_size": args.batch_size,
            "threads": rayon::current_num_threads(),
        })
    }

    fn report(
        args: &EmbedArgs,
        (documents, queries, dim, k): (usize, usize, usize, usize),
        (docs, qs): (&Timed, &Timed),
        (judgments, skipped): (usize, usize),
    ) {
        let per_s = |n: f64, t: f64| if t > 0.0 { n / t } else { 0.0 };
        println!(
            "wrote {}: {documents} documents as {} vectors of dimension {dim} and {queries} queries \
             (load with --dataset {}); ground truth depth {k}; {judgments} \
             judgments by window{}",
            args.out.display(),
            docs.embedded.chunks.len(),
            args.out.display(),
            if skipped > 0 {
                format!(" ({skipped} left out: query or document not embedded)")
            } else {
                String::new()
            }
        );
        println!(
            "documents: {:.1}/s, {:.0} tokens/s ({:.1} s); queries: {:.1}/s ({:.1} s)",
            per_s(documents as f64, docs.seconds),
            per_s(docs.embedded.tokens as f64, docs.seconds),
            docs.seconds,
            per_s(queries as f64, qs.seconds),
            qs.seconds
        );
    }
}
