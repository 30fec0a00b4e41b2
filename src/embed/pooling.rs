//! From the transformer's token states to one sentence vector, as sentence-transformers'
//! `Pooling` and `Normalize` modules compute it: the mean of the states of the tokens the
//! attention mask keeps (a sequence's own, never padding; the count clamped at 1e-9), or the first (CLS)
//! token's state; then, when the folder has a `Normalize` module, division by the L2 norm
//! (clamped at 1e-12, as `torch.nn.functional.normalize`).

/// How token states become one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The mean over the tokens of the attention mask.
    Mean,
    /// The first token's state.
    Cls,
}

/// The sentence vectors of a batch: `states` holds the token states of the batch's
/// sequences end to end (`[Σ lens, dim]` row-major), `lens` each sequence's tokens. Returns
/// `[lens.len(), dim]`.
pub fn pool(
    states: &[f32],
    lens: &[usize],
    dim: usize,
    pooling: Pooling,
    normalize: bool,
) -> Vec<f32> {
    let mut out = vec![0f32; lens.len() * dim];
    let mut start = 0;
    for (row, &len) in out.chunks_exact_mut(dim).zip(lens) {
        let tokens = &states[start * dim..(start + len) * dim];
        start += len;
        match pooling {
            Pooling::Cls => {
                if let Some(first) = tokens.get(..dim) {
                    row.copy_from_slice(first)
                }
            }
            Pooling::Mean => mean_of(tokens, row),
        }
        if normalize {
            let norm = row.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
            row.iter_mut().for_each(|v| *v /= norm);
        }
    }
    out
}

/// `row` = the mean of the rows of `tokens` (the count clamped at 1e-9, as
/// sentence-transformers clamps the mask's sum).
fn mean_of(tokens: &[f32], row: &mut [f32]) {
    let dim = row.len();
    let mut count = 0f32;
    for state in tokens.chunks_exact(dim) {
        count += 1.0;
        row.iter_mut().zip(state).for_each(|(r, s)| *r += s);
    }
    let count = count.max(1e-9);
    row.iter_mut().for_each(|v| *v /= count);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two sentences of three and two tokens, dimension 2, end to end.
    const STATES: [f32; 10] = [
        1.0, 2.0, /**/ 3.0, 4.0, /**/ 5.0, 0.0, // sentence 0
        6.0, 8.0, /**/ 0.0, 0.0, // sentence 1
    ];
    const LENS: [usize; 2] = [3, 2];

    #[test]
    fn mean_pooling_averages_each_sentences_tokens_by_hand() {
        let pooled = pool(&STATES, &LENS, 2, Pooling::Mean, false);
        // (1+3+5)/3, (2+4+0)/3; (6+0)/2, (8+0)/2.
        assert_eq!(pooled, [3.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn normalisation_gives_unit_vectors_by_hand() {
        let pooled = pool(&STATES, &LENS, 2, Pooling::Mean, true);
        // (3, 2) / sqrt(13); (3, 4) / 5.
        let s = 13f32.sqrt();
        let want = [3.0 / s, 2.0 / s, 0.6, 0.8];
        for (got, want) in pooled.iter().zip(want) {
            assert!((got - want).abs() < 1e-6, "{pooled:?}");
        }
    }

    #[test]
    fn cls_pooling_takes_the_first_token_and_zero_stays_finite() {
        assert_eq!(
            pool(&STATES, &LENS, 2, Pooling::Cls, false),
            [1.0, 2.0, 6.0, 8.0]
        );
        // An all-zero vector normalises to zero (the norm is clamped), not to NaN.
        let zero = pool(&[0.0; 4], &[2], 2, Pooling::Mean, true);
        assert_eq!(zero, [0.0, 0.0]);
    }
}
