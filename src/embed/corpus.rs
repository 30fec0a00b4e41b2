//! Embedding many texts: tokenised in parallel, cut into windows ([`super::chunk`]) or
//! truncated, and run through the model in batches on all cores, longest first within blocks
//! of [`BLOCK`] texts, so that the threads finish together.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::EmbedError;
use super::bert::Scratch;
use super::chunk::ChunkRule;
use super::model::Embedder;
use crate::types::ProgressTask;

/// Texts tokenised and embedded together: enough for batches of similar length, few enough
/// to keep their tokens small in memory and the progress bar moving.
pub const BLOCK: usize = 2048;

/// What happens to a text longer than the model's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LongText {
    /// One vector per window (documents).
    Chunk(ChunkRule),
    /// The first window only (queries, as sentence-transformers does).
    Truncate,
}

/// One vector's place in its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRef {
    /// Index of the text in the input.
    pub text: usize,
    /// Index of the window within the text, from 0.
    pub chunk: usize,
    /// The window's text tokens (special tokens not counted).
    pub tokens: Range<usize>,
}

/// The vectors of a set of texts.
#[derive(Debug, Clone)]
pub struct Embedded {
    /// `[chunks.len(), dim]` row-major; row `i` is the window `chunks[i]`. The windows of one
    /// text are consecutive rows, in text order.
    pub vectors: Vec<f32>,
    pub chunks: Vec<ChunkRef>,
    /// Tokens the model read, special tokens included, padding not.
    pub tokens: u64,
}

/// Embeds `texts`; `progress` is set to the number of texts done.
pub fn embed_texts(
    embedder: &Embedder,
    texts: &[&str],
    long: LongText,
    batch: usize,
    progress: &dyn ProgressTask,
) -> Result<Embedded, EmbedError> {
    let mut all = Embedded {
        vectors: Vec::new(),
        chunks: Vec::new(),
        tokens: 0,
    };
    for (b, block) in texts.chunks(BLOCK).enumerate() {
        let first = b * BLOCK;
        let tokens: Vec<Vec<u32>> = block
            .par_iter()
            .map(|t| embedder.tokenize(t))
            .collect::<Result<_, _>>()?;
        let chunks = windows(&tokens, first, long, embedder.window());
        let seqs: Vec<&[u32]> = chunks
            .iter()
            .map(|c| &tokens[c.text - first][c.tokens.clone()])
            .collect();
        let on_batch = |done: usize| {
            let share = block.len() * done / seqs.len().max(1);
            progress.set((first + share) as u64);
        };
        let vectors = embed_sorted(embedder, &seqs, batch, &on_batch)?;
        all.tokens += seqs
            .iter()
            .map(|s| (s.len() + embedder.special_tokens()) as u64)
            .sum::<u64>();
        all.vectors.extend(vectors);
        all.chunks.extend(chunks);
    }
    progress.set(texts.len() as u64);
    Ok(all)
}

/// The windows of the texts of a block whose first text has index `first`.
#[allow(clippy::single_range_in_vec_init)] // a truncated text is one window
fn windows(tokens: &[Vec<u32>], first: usize, long: LongText, window: usize) -> Vec<ChunkRef> {
    let mut chunks = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let spans = match long {
            LongText::Chunk(rule) => rule.spans(t.len()),
            LongText::Truncate => vec![0..t.len().min(window)],
        };
        chunks.extend(spans.into_iter().enumerate().map(|(c, span)| ChunkRef {
            text: first + i,
            chunk: c,
            tokens: span,
        }));
    }
    chunks
}

/// The vectors of `seqs` in their order, computed in batches of `batch` sequences of similar
/// length (longest first), the batches on all cores (each thread with its own buffers);
/// `on_batch` gets the number of sequences done.
fn embed_sorted(
    embedder: &Embedder,
    seqs: &[&[u32]],
    batch: usize,
    on_batch: &(dyn Fn(usize) + Sync),
) -> Result<Vec<f32>, EmbedError> {
    let dim = embedder.dim();
    let mut order: Vec<usize> = (0..seqs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(seqs[i].len()));
    let done = AtomicUsize::new(0);
    let batches: Vec<Vec<f32>> = order
        .par_chunks(batch.max(1))
        .map_init(Scratch::default, |scratch, group| {
            let members: Vec<&[u32]> = group.iter().map(|&i| seqs[i]).collect();
            let vectors = embedder.embed_batch(&members, scratch)?;
            on_batch(done.fetch_add(group.len(), Ordering::Relaxed) + group.len());
            Ok(vectors)
        })
        .collect::<Result<_, EmbedError>>()?;
    let mut out = vec![0f32; seqs.len() * dim];
    for (group, vectors) in order.chunks(batch.max(1)).zip(&batches) {
        for (&i, v) in group.iter().zip(vectors.chunks_exact(dim)) {
            out[i * dim..(i + 1) * dim].copy_from_slice(v);
        }
    }
    Ok(out)
}
