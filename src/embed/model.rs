//! A sentence-transformers BERT model run in-process: the tokenizer of `tokenizer.json`
//! (Hugging Face's tokenizers crate, offline) and the encoder of `model.safetensors`
//! ([`super::bert`]). Nothing is downloaded: every file comes from the folder given.
//!
//! The `tokenizer.json` of a sentence-transformers folder often carries the truncation and
//! padding of its training (all-MiniLM-L6-v2's: 128 tokens); both are turned off here, since
//! [`super::chunk`] decides the windows and the encoder packs a batch's sequences end to end.

use std::path::Path;

use tokenizers::Tokenizer;

use super::EmbedError;
use super::bert::{Bert, Scratch};
use super::config::{self, SentenceConfig};
use super::pooling::pool;

/// A loaded model, ready to embed token sequences.
pub struct Embedder {
    bert: Bert,
    tokenizer: Tokenizer,
    config: SentenceConfig,
    /// Special tokens the tokenizer puts before and after a text (`[CLS]`, `[SEP]`).
    prefix: Vec<u32>,
    suffix: Vec<u32>,
    /// Tokens per sequence, special tokens included.
    max_seq_length: usize,
    dim: usize,
}

impl Embedder {
    /// Loads the sentence-transformers folder `dir` (see [`config::read`]).
    pub fn load(dir: &Path) -> Result<Embedder, EmbedError> {
        let config = config::read(dir)?;
        let tdir = &config.transformer_dir;
        let bert = Bert::load(tdir)?;
        let tokenizer = load_tokenizer(&tdir.join("tokenizer.json"))?;
        let (prefix, suffix) = special_tokens(&tokenizer)?;
        let positions = bert.config().max_position_embeddings;
        let max_seq_length = config.max_seq_length.unwrap_or(positions).min(positions);
        if max_seq_length <= prefix.len() + suffix.len() {
            return Err(EmbedError::Unsupported(format!(
                "max_seq_length {max_seq_length} leaves no room for text"
            )));
        }
        Ok(Embedder {
            dim: bert.config().hidden_size,
            bert,
            tokenizer,
            config,
            prefix,
            suffix,
            max_seq_length,
        })
    }

    /// Dimension of the sentence vectors.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Tokens per sequence, special tokens included (`max_seq_length`).
    pub fn max_seq_length(&self) -> usize {
        self.max_seq_length
    }

    /// Text tokens one sequence holds: `max_seq_length` less the special tokens.
    pub fn window(&self) -> usize {
        self.max_seq_length - self.prefix.len() - self.suffix.len()
    }

    /// Special tokens added to each sequence.
    pub fn special_tokens(&self) -> usize {
        self.prefix.len() + self.suffix.len()
    }

    /// The configuration read from the folder.
    pub fn config(&self) -> &SentenceConfig {
        &self.config
    }

    /// The token ids of `text`, without special tokens and without truncation.
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        let lowered;
        let text = if self.config.do_lower_case {
            lowered = text.to_lowercase();
            &lowered
        } else {
            text
        };
        let encoding = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// The text the tokenizer reads (lower-cased when the folder says so) and each token's
    /// byte span in it, as [`Embedder::tokenize`] counts the tokens.
    pub fn token_spans(&self, text: &str) -> Result<(String, Vec<(usize, usize)>), EmbedError> {
        let read = if self.config.do_lower_case {
            text.to_lowercase()
        } else {
            text.to_string()
        };
        let encoding = self
            .tokenizer
            .encode(read.as_str(), false)
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        let spans = encoding.get_offsets().to_vec();
        Ok((read, spans))
    }

    /// The sentence vectors (`[n, dim]`) of sequences of text tokens, each at most
    /// [`Embedder::window`] long: special tokens are added and the states pooled as the
    /// folder says. Runs on the calling thread, in `scratch`'s buffers.
    pub fn embed_batch(
        &self,
        seqs: &[&[u32]],
        scratch: &mut Scratch,
    ) -> Result<Vec<f32>, EmbedError> {
        if seqs.is_empty() {
            return Ok(Vec::new());
        }
        let specials = self.special_tokens();
        if let Some(long) = seqs
            .iter()
            .find(|s| s.len() + specials > self.max_seq_length)
        {
            return Err(EmbedError::Model(format!(
                "a sequence of {} tokens is longer than max_seq_length {}",
                long.len() + specials,
                self.max_seq_length
            )));
        }
        let full: Vec<Vec<u32>> = seqs
            .iter()
            .map(|seq| [&self.prefix[..], seq, &self.suffix[..]].concat())
            .collect();
        let packed: Vec<&[u32]> = full.iter().map(Vec::as_slice).collect();
        let states = self.bert.encode(&packed, scratch)?;
        let lens: Vec<usize> = full.iter().map(Vec::len).collect();
        Ok(pool(
            states,
            &lens,
            self.dim,
            self.config.pooling,
            self.config.normalize,
        ))
    }
}

/// The tokenizer of `path` without its stored truncation and padding.
fn load_tokenizer(path: &Path) -> Result<Tokenizer, EmbedError> {
    let mut tokenizer = Tokenizer::from_file(path).map_err(|e| EmbedError::file(path, e))?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(None)
        .map_err(|e| EmbedError::file(path, e))?;
    Ok(tokenizer)
}

/// The special tokens the tokenizer's post-processor puts before and after a text.
fn special_tokens(tokenizer: &Tokenizer) -> Result<(Vec<u32>, Vec<u32>), EmbedError> {
    let encoding = tokenizer
        .encode("a", true)
        .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
    let ids = encoding.get_ids();
    let special = encoding.get_special_tokens_mask();
    let Some(first) = special.iter().position(|&s| s == 0) else {
        return Err(EmbedError::Tokenizer(
            "a text encodes to special tokens only".into(),
        ));
    };
    let last = special.iter().rposition(|&s| s == 0).unwrap_or(first);
    if special[first..=last].iter().any(|&s| s != 0) {
        return Err(EmbedError::Unsupported(
            "the tokenizer puts special tokens inside a single text".into(),
        ));
    }
    Ok((ids[..first].to_vec(), ids[last + 1..].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::chunk::ChunkRule;
    use crate::embed::corpus::{LongText, embed_texts};
    use crate::types::{Progress, ProgressUnit, Silent};

    const NEEDS_MODEL: &str = "needs RAGDBEVAL_EMBED_MODEL (scripts/install/minilm.sh prints it)";

    fn embedder() -> Embedder {
        let dir = std::env::var_os("RAGDBEVAL_EMBED_MODEL").expect(NEEDS_MODEL);
        Embedder::load(Path::new(&dir)).unwrap()
    }

    fn embed(e: &Embedder, texts: &[&str]) -> Vec<Vec<f32>> {
        let tokens: Vec<Vec<u32>> = texts.iter().map(|t| e.tokenize(t).unwrap()).collect();
        let seqs: Vec<&[u32]> = tokens.iter().map(|t| t.as_slice()).collect();
        let flat = e.embed_batch(&seqs, &mut Scratch::default()).unwrap();
        flat.chunks_exact(e.dim()).map(<[f32]>::to_vec).collect()
    }

    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    #[cfg_attr(not(embed_model), ignore = "needs RAGDBEVAL_EMBED_MODEL")]
    fn unit_vectors_and_a_paraphrase_nearer_than_an_unrelated_sentence() {
        let e = embedder();
        assert_eq!((e.dim(), e.max_seq_length(), e.window()), (384, 256, 254));
        let v = embed(
            &e,
            &[
                "A man is eating food.",
                "A man is eating a piece of bread.",
                "The stock market fell sharply on Monday.",
            ],
        );
        for row in &v {
            assert!((dot(row, row).sqrt() - 1.0).abs() < 1e-5);
        }
        let (near, far) = (dot(&v[0], &v[1]), dot(&v[0], &v[2]));
        assert!(near > 0.6 && far < 0.2 && near > far + 0.4, "{near} {far}");
    }

    #[test]
    #[cfg_attr(not(embed_model), ignore = "needs RAGDBEVAL_EMBED_MODEL")]
    fn padding_changes_nothing_and_a_long_text_is_cut_into_windows() {
        let e = embedder();
        let short = "Rust is a systems programming language.";
        let long = "Memory safety without garbage collection. ".repeat(60);
        let medium = "Memory safety without garbage collection. ".repeat(20);
        let alone = embed(&e, &[short]);
        let padded = embed(&e, &[short, &medium]);
        for (a, b) in alone[0].iter().zip(&padded[0]) {
            assert!((a - b).abs() < 1e-5);
        }
        let rule = ChunkRule::new(e.window(), 32).unwrap();
        let n = e.tokenize(&long).unwrap().len();
        let bar = Silent.task("t", None, ProgressUnit::Items);
        let chunked = embed_texts(&e, &[short, &long], LongText::Chunk(rule), 4, &*bar).unwrap();
        let spans: Vec<_> = chunked.chunks.iter().filter(|c| c.text == 1).collect();
        assert_eq!(spans.len(), rule.spans(n).len());
        assert!(spans.len() >= 2);
        // The first window of the long text is what truncation gives (sentence-transformers').
        let cut = embed_texts(&e, &[&long], LongText::Truncate, 4, &*bar).unwrap();
        let first = &chunked.vectors[e.dim()..2 * e.dim()];
        assert!(
            first
                .iter()
                .zip(&cut.vectors)
                .all(|(a, b)| (a - b).abs() < 1e-5)
        );
    }
}
