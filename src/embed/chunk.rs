//! How a document longer than the model's input is cut: into windows of at most `window`
//! tokens (the model's `max_seq_length` less its special tokens: 256 − 2 = 254 for
//! all-MiniLM-L6-v2), each starting `window − overlap` tokens after the previous one, the last
//! one ending at the document's last token. Each window becomes one vector. The first window is
//! exactly what sentence-transformers embeds for the whole document (it truncates), so a
//! document that fits has one vector equal to sentence-transformers' own.
//!
//! Queries are not cut: like sentence-transformers, they are truncated to the first window.

use std::ops::Range;

/// The token windows of long documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkRule {
    /// Tokens per window, special tokens excluded.
    pub window: usize,
    /// Tokens each window shares with the next.
    pub overlap: usize,
}

/// A window and overlap that cannot cut a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "a chunk overlap of {overlap} tokens must be below the window of {window} tokens the model \
     takes"
)]
pub struct ChunkError {
    pub window: usize,
    pub overlap: usize,
}

impl ChunkRule {
    /// A rule whose windows advance: `overlap < window`.
    pub fn new(window: usize, overlap: usize) -> Result<ChunkRule, ChunkError> {
        if window == 0 || overlap >= window {
            return Err(ChunkError { window, overlap });
        }
        Ok(ChunkRule { window, overlap })
    }

    /// The token ranges of a document of `n` tokens: one (possibly empty) when it fits.
    #[allow(clippy::single_range_in_vec_init)] // one window, not the numbers 0..n
    pub fn spans(&self, n: usize) -> Vec<Range<usize>> {
        if n <= self.window {
            return vec![0..n];
        }
        let step = self.window - self.overlap;
        let mut spans = Vec::with_capacity(n.div_ceil(step));
        let mut start = 0;
        loop {
            let end = (start + self.window).min(n);
            spans.push(start..end);
            if end == n {
                return spans;
            }
            start += step;
        }
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // expected windows, one range each
mod tests {
    use super::*;

    #[test]
    fn windows_overlap_and_the_last_ends_at_the_last_token() {
        let rule = ChunkRule::new(254, 32).unwrap();
        assert_eq!(rule.spans(0), [0..0]);
        assert_eq!(rule.spans(254), [0..254]);
        assert_eq!(rule.spans(255), [0..254, 222..255]);
        assert_eq!(rule.spans(600), [0..254, 222..476, 444..600]);
        let small = ChunkRule::new(4, 1).unwrap();
        assert_eq!(small.spans(10), [0..4, 3..7, 6..10]);
        assert_eq!(small.spans(11), [0..4, 3..7, 6..10, 9..11]);
        // No overlap: a partition.
        assert_eq!(ChunkRule::new(4, 0).unwrap().spans(8), [0..4, 4..8]);
    }

    #[test]
    fn every_token_is_in_a_window_of_at_most_window_tokens() {
        let rule = ChunkRule::new(7, 3).unwrap();
        for n in 0..60 {
            let spans = rule.spans(n);
            assert_eq!(spans[0].start, 0);
            assert_eq!(spans.last().unwrap().end, n);
            for pair in spans.windows(2) {
                assert_eq!(pair[0].end - pair[1].start, 3, "n = {n}");
            }
            assert!(spans.iter().all(|s| s.len() <= 7));
        }
    }

    #[test]
    fn an_overlap_of_the_whole_window_is_refused() {
        let err = ChunkRule::new(254, 254).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a chunk overlap of 254 tokens must be below the window of 254 tokens the model takes"
        );
        assert!(ChunkRule::new(0, 0).is_err());
    }
}
