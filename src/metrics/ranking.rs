//! The scores a ranking is written with: TREC run files (`bench --trec-run`) and the end-task
//! scoring of the same answers use them, so that both rank as the engine did.

/// Scores that order like the engine's ranking (the convention of `crate::export::trec`):
/// `−distance`, forced strictly below the previous score where it would not be. `distances[i]` is the recomputed distance
/// of the result at rank `i + 1`, `None` (or NaN) where there is none.
///
/// Single precision on purpose: trec_eval (and pytrec_eval) keep a run's scores as C
/// `float`s, so two scores one double step apart would tie there and be reordered by docid.
/// One float step apart, they stay in order in every reader.
pub fn ranking_scores(distances: &[Option<f32>]) -> Vec<f32> {
    let mut scores: Vec<f32> = Vec::with_capacity(distances.len());
    for d in distances {
        // `+ 0.0` writes a distance of 0 as `0.0`, not `-0.0`.
        let natural = d.filter(|d| !d.is_nan()).map(|d| -d + 0.0);
        let score = match (scores.last(), natural) {
            (None, Some(s)) => s,
            // Nothing to go by at the top: 0, and the next results below it.
            (None, None) => 0.0,
            (Some(&previous), Some(s)) if s < previous => s,
            (Some(&previous), _) => previous.next_down(),
        };
        scores.push(score);
    }
    scores
}
