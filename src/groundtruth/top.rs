//! Per-query buffer of the candidates the selection keeps.

use super::bounds::Slack;

/// Keeps every (score, row) pair whose score is at most the threshold of the k-th smallest
/// score seen, cheaply: candidates under the current threshold are appended, and when the
/// buffer is full the k-th smallest is selected and everything above its threshold dropped.
/// The k-th smallest only decreases as rows arrive, so a pair dropped early would also fail
/// the final threshold. On tie-heavy data many pairs may sit within the slack: the buffer
/// then grows (exactness first; the re-rank simply has more to do).
pub(super) struct TopBuffer {
    k: usize,
    slack: Slack,
    threshold: f32,
    /// The k-th smallest score at the last cut (+inf before it): at least k kept items score
    /// at most this.
    kth: f32,
    /// Size at which the buffer is cut back; at least twice what survived the last cut.
    cap: usize,
    items: Vec<(f32, u32)>,
}

impl TopBuffer {
    pub(super) fn new(k: usize, slack: Slack) -> TopBuffer {
        let cap = 2 * k + 64;
        TopBuffer {
            k,
            slack,
            threshold: f32::INFINITY,
            kth: f32::INFINITY,
            cap,
            items: Vec::with_capacity(cap),
        }
    }

    #[inline(always)]
    pub(super) fn offer(&mut self, score: f32, row: u32) {
        // `<=`: a score equal to the threshold is within the bound and must be kept. NaN
        // scores (NaN input) compare false and are dropped.
        if score <= self.threshold {
            self.items.push((score, row));
            if self.items.len() >= self.cap {
                self.shrink();
            }
        }
    }

    /// The largest score still kept (+inf until the buffer is first cut).
    #[inline(always)]
    pub(super) fn threshold(&self) -> f32 {
        self.threshold
    }

    /// Replaces the slack by a wider one (the rows about to be scored have a larger norm than
    /// any before) and raises the threshold to match; see `ErrorBounds`.
    pub(super) fn widen(&mut self, slack: Slack) {
        self.slack = slack;
        if self.kth.is_finite() {
            self.threshold = self.slack.threshold(self.kth);
        }
    }

    fn shrink(&mut self) {
        if self.items.len() > self.k {
            let (_, kth, _) = self
                .items
                .select_nth_unstable_by(self.k - 1, |a, b| a.0.total_cmp(&b.0));
            self.kth = kth.0;
            let threshold = self.slack.threshold(self.kth);
            self.items.retain(|item| item.0 <= threshold);
            self.threshold = threshold;
            if self.items.len() * 2 > self.cap {
                self.cap = self.items.len() * 2;
                self.items.reserve(self.cap - self.items.len());
            }
        }
    }

    pub(super) fn candidates(&mut self) -> &[(f32, u32)] {
        self.shrink();
        &self.items
    }
}
