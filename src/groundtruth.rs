//! Exact k-nearest-neighbour ground truth: the computation every benchmark figure rests on.
//!
//! Formulation: for a block of queries and a block of base vectors, one SGEMM gives all inner
//! products; a ranking score is derived per metric (`|x|² - 2q·x` for euclidean, on vectors
//! centred on the base mean; `-q·x/|x|` for angular; `-q·x` for dot), and each query keeps its
//! candidates in a threshold buffer. The f32 SGEMM scores are only used to *select*: with a
//! proven bound on their rounding (see `ErrorBounds`) every item that could belong to the
//! top-k is kept, however many that is, the kept distances are recomputed with
//! [`Distance::between`] on the original vectors, and the final top-k is sorted by
//! (distance, id). The result is therefore identical to a brute force with
//! `Distance::between` over every item ([`naive_knn`]): ties are broken by id, and stored
//! distances compare exactly with the distances the harness recomputes for engine results.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use crate::distance::{Distance, dot};
use crate::engine::PointId;

/// True neighbours of each query: `ids` and `distances` are `queries × k`, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct GroundTruth {
    pub k: usize,
    pub ids: Vec<PointId>,
    pub distances: Vec<f32>,
}

impl GroundTruth {
    pub fn queries(&self) -> usize {
        self.ids.len().checked_div(self.k).unwrap_or(0)
    }

    pub fn ids_of(&self, q: usize) -> &[PointId] {
        &self.ids[q * self.k..(q + 1) * self.k]
    }

    pub fn distances_of(&self, q: usize) -> &[f32] {
        &self.distances[q * self.k..(q + 1) * self.k]
    }

    /// Keeps the first `k` neighbours of each query.
    pub fn truncated(&self, k: usize) -> GroundTruth {
        let k = k.min(self.k);
        let mut ids = Vec::with_capacity(self.queries() * k);
        let mut distances = Vec::with_capacity(self.queries() * k);
        for q in 0..self.queries() {
            ids.extend_from_slice(&self.ids_of(q)[..k]);
            distances.extend_from_slice(&self.distances_of(q)[..k]);
        }
        GroundTruth { k, ids, distances }
    }
}

/// The base set to search: flat row-major vectors plus, optionally, the id of each row
/// (its row number when absent). Ids must be ascending, so that tie-breaking by id and by
/// scan order agree.
pub struct BaseSet<'a> {
    pub vectors: &'a [f32],
    pub ids: Option<&'a [PointId]>,
    pub dim: usize,
}

/// Selected rows of a matrix: entry `i` is vector `rows[i]` with id `ids[i]`. A live set is
/// searched in place, without copying the dataset. Ids must be ascending.
pub struct RowSelection<'a> {
    pub vectors: &'a [f32],
    pub rows: &'a [usize],
    pub ids: &'a [PointId],
    pub dim: usize,
}

/// Either form, as the kernel sees it.
enum Base<'a> {
    All(&'a BaseSet<'a>),
    Rows(&'a RowSelection<'a>),
}

impl Base<'_> {
    fn len(&self) -> usize {
        match self {
            Base::All(b) => b.vectors.len() / b.dim,
            Base::Rows(r) => r.rows.len(),
        }
    }

    fn dim(&self) -> usize {
        match self {
            Base::All(b) => b.dim,
            Base::Rows(r) => r.dim,
        }
    }

    #[inline]
    fn id(&self, entry: usize) -> PointId {
        match self {
            Base::All(b) => b.ids.map_or(entry as PointId, |ids| ids[entry]),
            Base::Rows(r) => r.ids[entry],
        }
    }

    #[inline]
    fn vector(&self, entry: usize) -> &[f32] {
        let (data, row, dim) = match self {
            Base::All(b) => (b.vectors, entry, b.dim),
            Base::Rows(r) => (r.vectors, r.rows[entry], r.dim),
        };
        &data[row * dim..(row + 1) * dim]
    }

    /// Entries `start..end` as one contiguous block, minus `centre` if given: borrowed when
    /// nothing needs changing, else gathered into `buf`.
    fn block<'b>(
        &'b self,
        start: usize,
        end: usize,
        centre: Option<&[f32]>,
        buf: &'b mut Vec<f32>,
    ) -> &'b [f32] {
        match (self, centre) {
            (Base::All(b), None) => &b.vectors[start * b.dim..end * b.dim],
            _ => {
                buf.clear();
                for e in start..end {
                    push_centred(buf, self.vector(e), centre);
                }
                buf
            }
        }
    }
}

/// Appends `x - centre` (or `x`) to `out`. The same f32 subtraction everywhere, so a centred
/// vector is bit-identical wherever it is recomputed.
#[inline]
fn push_centred(out: &mut Vec<f32>, x: &[f32], centre: Option<&[f32]>) {
    match centre {
        Some(c) => out.extend(x.iter().zip(c).map(|(a, b)| a - b)),
        None => out.extend_from_slice(x),
    }
}

/// Per-dimension mean of the base, the translation applied before the euclidean SGEMM.
/// Any centre is correct (distances are translation invariant, and the rounding of the
/// subtraction is part of the error bound); the mean makes the norms, and with them the
/// rounding of the scores, as small as the spread of the data allows.
fn base_mean(base: &Base<'_>) -> Vec<f32> {
    let (n, dim) = (base.len(), base.dim());
    let sums = (0..n)
        .into_par_iter()
        .fold(
            || vec![0.0f64; dim],
            |mut acc, e| {
                for (a, v) in acc.iter_mut().zip(base.vector(e)) {
                    *a += *v as f64;
                }
                acc
            },
        )
        .reduce(
            || vec![0.0f64; dim],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
                a
            },
        );
    sums.iter()
        .map(|s| {
            let m = (s / n.max(1) as f64) as f32;
            // A non-finite coordinate in the data must not poison every other vector.
            if m.is_finite() { m } else { 0.0 }
        })
        .collect()
}

/// Queries per SGEMM block: large enough that each pass over the base serves many queries.
const QUERY_BLOCK: usize = 256;
/// Base vectors per SGEMM block: the score tile (`QUERY_BLOCK × BASE_BLOCK` floats) stays in L2.
const BASE_BLOCK: usize = 1024;

/// Computes the exact top-`k` of every query against `base`.
///
/// `on_progress` is called with the number of queries finished so far (from worker threads).
/// If the base has fewer than `k` points, each row is padded with id `u64::MAX` and
/// distance `+inf`.
pub fn exact_knn(
    base: &BaseSet<'_>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    on_progress: &(dyn Fn(usize) + Sync),
) -> GroundTruth {
    knn(&Base::All(base), queries, distance, k, on_progress)
}

/// [`exact_knn`] over selected rows of a matrix (a live set after mutations).
pub fn exact_knn_rows(
    base: &RowSelection<'_>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    on_progress: &(dyn Fn(usize) + Sync),
) -> GroundTruth {
    knn(&Base::Rows(base), queries, distance, k, on_progress)
}

fn knn(
    base: &Base<'_>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    on_progress: &(dyn Fn(usize) + Sync),
) -> GroundTruth {
    knn_counted(base, queries, distance, k, on_progress).0
}

/// [`knn`], also returning how many candidates were re-ranked exactly over all queries (the
/// cost of the error bound; tests check it stays near k per query).
fn knn_counted(
    base: &Base<'_>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    on_progress: &(dyn Fn(usize) + Sync),
) -> (GroundTruth, usize) {
    let dim = base.dim();
    let nq = queries.len() / dim;
    let n = base.len();
    if nq == 0 || k == 0 {
        let empty = GroundTruth {
            k,
            ids: Vec::new(),
            distances: Vec::new(),
        };
        return (empty, 0);
    }

    // Euclidean distances do not change under translation, but the rounding of
    // `|x|² - 2q·x` grows with |x|²: centring shrinks it to the spread of the data (on data
    // around 1000 it is what makes the candidate margin small). Angular and dot depend on
    // the origin, so they are scored as given.
    let centre = match distance {
        Distance::Euclidean => Some(base_mean(base)),
        Distance::Angular | Distance::Dot => None,
    };
    let centre = centre.as_deref();

    // Squared norm of every (centred) base vector, in f32 as the score uses it.
    let norms2: Vec<f32> = (0..n)
        .into_par_iter()
        .map_init(
            || Vec::with_capacity(dim),
            |buf, e| {
                buf.clear();
                push_centred(buf, base.vector(e), centre);
                dot(buf, buf)
            },
        )
        .collect();
    let max_norm2 = norms2.iter().copied().fold(0.0f32, f32::max);
    // Per-base-vector term of the ranking score.
    let base_term: Vec<f32> = match distance {
        Distance::Euclidean => norms2,
        Distance::Angular => norms2
            .into_par_iter()
            .map(|n2| {
                let norm = n2.sqrt();
                if norm > 0.0 { 1.0 / norm } else { 0.0 }
            })
            .collect(),
        Distance::Dot => Vec::new(),
    };
    let bounds = ErrorBounds::new(distance, dim, max_norm2);

    // Keep several blocks per thread so both cores stay busy on small query sets.
    let threads = rayon::current_num_threads().max(1);
    let qblock = QUERY_BLOCK.min(nq.div_ceil(threads * 4)).max(8);
    let done = AtomicUsize::new(0);
    let reranked = AtomicUsize::new(0);

    let mut ids = vec![PointId::MAX; nq * k];
    let mut dists = vec![f32::INFINITY; nq * k];

    ids.par_chunks_mut(qblock * k)
        .zip(dists.par_chunks_mut(qblock * k))
        .enumerate()
        .for_each(|(block, (ids_out, dists_out))| {
            let q0 = block * qblock;
            let qn = ids_out.len() / k;
            let qs = &queries[q0 * dim..(q0 + qn) * dim];
            // The SGEMM sees centred queries; the exact re-rank below uses the originals.
            let mut centred_qs = Vec::new();
            let scored_qs: &[f32] = match centre {
                Some(_) => {
                    for q in qs.chunks_exact(dim) {
                        push_centred(&mut centred_qs, q, centre);
                    }
                    &centred_qs
                }
                None => qs,
            };
            let mut tops: Vec<TopBuffer> = scored_qs
                .chunks_exact(dim)
                .map(|q| TopBuffer::new(k, bounds.slack(q)))
                .collect();
            let mut scores = vec![0.0f32; qn * BASE_BLOCK];
            let mut gathered = Vec::new();
            let mut b0 = 0;
            while b0 < n {
                let bn = BASE_BLOCK.min(n - b0);
                let bs = base.block(b0, b0 + bn, centre, &mut gathered);
                // scores[qn × bn] = scored_qs[qn × dim] · bsᵀ[dim × bn]
                // SAFETY: the pointers and strides describe the live slices above exactly:
                // `scored_qs` is qn×dim row-major, `bs` is bn×dim row-major (read as its
                // transpose), `scores` has room for qn×bn with row stride bn.
                unsafe {
                    matrixmultiply::sgemm(
                        qn,
                        dim,
                        bn,
                        1.0,
                        scored_qs.as_ptr(),
                        dim as isize,
                        1,
                        bs.as_ptr(),
                        1,
                        dim as isize,
                        0.0,
                        scores.as_mut_ptr(),
                        bn as isize,
                        1,
                    );
                }
                for (qi, top) in tops.iter_mut().enumerate() {
                    let row = &scores[qi * bn..(qi + 1) * bn];
                    match distance {
                        Distance::Euclidean => {
                            let terms = &base_term[b0..b0 + bn];
                            top.offer_row(b0, terms, row, |t, s| t - 2.0 * s);
                        }
                        Distance::Angular => {
                            let terms = &base_term[b0..b0 + bn];
                            top.offer_row(b0, terms, row, |t, s| -s * t);
                        }
                        Distance::Dot => top.offer_row(b0, row, row, |_, s| -s),
                    }
                }
                b0 += bn;
            }
            // Exact re-ranking of every kept candidate, on the original vectors.
            let mut exact: Vec<(f32, PointId)> = Vec::new();
            for (qi, top) in tops.iter_mut().enumerate() {
                let q = &qs[qi * dim..(qi + 1) * dim];
                exact.clear();
                for &(_, entry) in top.candidates() {
                    let e = entry as usize;
                    exact.push((distance.between(q, base.vector(e)), base.id(e)));
                }
                reranked.fetch_add(exact.len(), Ordering::Relaxed);
                exact.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                for (slot, (d, id)) in exact.iter().take(k).enumerate() {
                    ids_out[qi * k + slot] = *id;
                    dists_out[qi * k + slot] = *d;
                }
            }
            let finished = done.fetch_add(qn, Ordering::Relaxed) + qn;
            on_progress(finished);
        });

    let gt = GroundTruth {
        k,
        ids,
        distances: dists,
    };
    (gt, reranked.into_inner())
}

/// Unit roundoff of f32.
const U: f64 = f32::EPSILON as f64 / 2.0;

/// γ_m = m·u / (1 − m·u): the relative error bound of m chained f32 roundings (Higham, Accuracy
/// and Stability of Numerical Algorithms, §3.1); a length-d dot product in any summation order,
/// with or without FMA, is within γ_d Σ|a_i b_i|. Also γ_a + γ_b + γ_a·γ_b ≤ γ_(a+b).
fn gamma(m: usize) -> f64 {
    let mu = m as f64 * U;
    if mu < 0.5 {
        mu / (1.0 - mu)
    } else {
        f64::INFINITY
    }
}

/// The error bounds of one metric and base, from which each query's [`Slack`] follows.
///
/// Notation: s̃ is the f32 selection score, S its exact value on the (centred) f32 vectors,
/// d̃ = `Distance::between` (f32, original vectors), d its exact value; Q = |q'|, M = max |x'|
/// (primes: centred for euclidean, as given otherwise). Every bound is doubled, a safety factor
/// over the worst case (and over the f64 arithmetic evaluating it).
///
/// Why that is enough: let T be the k-th smallest s̃ of the query and X those k items. If an
/// item y has s̃(y) > threshold(T), the bounds give d(y) − d(x) > 2·(error of d̃) for every x
/// in X, hence d̃(y) > d̃(x): at least k items rank strictly before y in the (d̃, id) order,
/// so y cannot be in the exact top-k. Every item with s̃ ≤ threshold(T) is re-ranked with d̃,
/// so the result equals a brute force over all items with `Distance::between`.
struct ErrorBounds {
    distance: Distance,
    dim: usize,
    /// M, an upper bound of the largest norm of a (centred) base vector.
    max_norm: f64,
}

impl ErrorBounds {
    fn new(distance: Distance, dim: usize, max_norm2: f32) -> ErrorBounds {
        // The f32 squared norm is ≥ (1 − γ_d)·|x|².
        let max_norm = (max_norm2 as f64 / (1.0 - gamma(dim))).sqrt();
        ErrorBounds {
            distance,
            dim,
            max_norm,
        }
    }

    /// The slack for query `q` (centred like the base, as the SGEMM sees it).
    fn slack(&self, q: &[f32]) -> Slack {
        let d = self.dim;
        let q2: f64 = q.iter().map(|v| (*v as f64) * (*v as f64)).sum();
        let qn = q2.sqrt();
        let m = self.max_norm;
        // Subnormal underflow breaks relative bounds: each product or term may lose up to
        // 2^-149 absolutely; this covers both the selection and the re-rank, twice over.
        let tiny = 16.0 * (d + 8) as f64 * 2f64.powi(-149);
        let slack = match self.distance {
            Distance::Euclidean => {
                // s̃ = fl(fl(|x'|²) − 2·fl(q'·x')): |s̃ − S| ≤ γ_(d+4)·(M² + 2QM).
                let e_score = 2.0 * gamma(d + 4) * (m * m + 2.0 * qn * m);
                // Centring rounds each coordinate by ≤ u relatively, so q' − x' differs from
                // q − x by a vector e with |e| ≤ 1.01u(Q + M), and the squared distance by
                // ≤ 2|q − x||e| + |e|² ≤ 2.03u(Q + M)² + O(u²).
                let e_centre = 5.0 * U * (qn + m) * (qn + m);
                // d̃² is within γ_(d+3) of d² (differences and squares are rounded
                // relatively, the sum of non-negative terms by γ_d), d̃ within u more:
                // d̃(y) > d̃(x) once d²(y) > (1 + rho)·d²(x).
                let g = gamma(d + 3);
                let rho = (1.0 + g) * (1.0 + U).powi(2) / ((1.0 - g) * (1.0 - U).powi(2)) - 1.0;
                // With T the k-th s̃: d²(x) ≤ T + Q² + e for x in X, and
                // d²(y) ≥ s̃(y) + Q² − e, e = e_score + e_centre.
                let e = e_score + e_centre;
                Slack {
                    abs: 2.0 * e + tiny,
                    rel: 2.0 * rho,
                    offset: q2 + e,
                }
            }
            Distance::Angular => {
                // s̃ = fl(−fl(q·x)·fl(1/fl(√fl(|x|²)))) is within Q·γ_(2d+4) of
                // S = −q·x/|x|; d̃ = fl(1 − fl(q·x)/fl(√(fl(|q|²)·fl(|x|²)))) is within
                // γ_(2d+7) of d = 1 + S/Q, i.e. Q·γ_(2d+7) in score units.
                let e_score = 2.0 * qn * gamma(2 * d + 6);
                let e_rerank = 2.0 * qn * gamma(2 * d + 9);
                Slack {
                    abs: 2.0 * e_score + 2.0 * e_rerank + tiny,
                    rel: 0.0,
                    offset: 0.0,
                }
            }
            Distance::Dot => {
                // s̃ = −fl(q·x) and d̃ = −dot(q, x): both within γ_(d+2)·Q·M of −q·x.
                let e = 2.0 * gamma(d + 2) * qn * m;
                Slack {
                    abs: 4.0 * e + tiny,
                    rel: 0.0,
                    offset: 0.0,
                }
            }
        };
        if slack.abs.is_finite() && slack.rel.is_finite() {
            slack
        } else {
            // Bounds too large to mean anything (huge dimension or norms): keep everything.
            Slack {
                abs: f64::INFINITY,
                rel: 0.0,
                offset: 0.0,
            }
        }
    }
}

/// How far above the k-th smallest selection score a candidate may be and still belong to
/// the exact top-k: `abs + rel·max(kth + offset, 0)` (see [`ErrorBounds`]).
#[derive(Debug, Clone, Copy)]
struct Slack {
    abs: f64,
    rel: f64,
    offset: f64,
}

impl Slack {
    /// The largest selection score that may still be in the top-k, rounded up to f32 so that
    /// the comparison in f32 never cuts below the bound.
    fn threshold(&self, kth: f32) -> f32 {
        let t = kth as f64;
        let v = t + self.abs + self.rel * (t + self.offset).max(0.0);
        let f = v as f32;
        if (f as f64) < v { f.next_up() } else { f }
    }
}

/// Keeps every (score, row) pair whose score is at most the threshold of the k-th smallest
/// score seen, cheaply: candidates under the current threshold are appended, and when the
/// buffer is full the k-th smallest is selected and everything above its threshold dropped.
/// The k-th smallest only decreases as rows arrive, so a pair dropped early would also fail
/// the final threshold. On tie-heavy data many pairs may sit within the slack: the buffer
/// then grows (exactness first; the re-rank simply has more to do).
struct TopBuffer {
    k: usize,
    slack: Slack,
    threshold: f32,
    /// Size at which the buffer is cut back; at least twice what survived the last cut.
    cap: usize,
    items: Vec<(f32, u32)>,
}

impl TopBuffer {
    fn new(k: usize, slack: Slack) -> TopBuffer {
        let cap = 2 * k + 64;
        TopBuffer {
            k,
            slack,
            threshold: f32::INFINITY,
            cap,
            items: Vec::with_capacity(cap),
        }
    }

    #[inline(always)]
    fn offer(&mut self, score: f32, row: u32) {
        // `<=`: a score equal to the threshold is within the bound and must be kept. NaN
        // scores (NaN input) compare false and are dropped.
        if score <= self.threshold {
            self.items.push((score, row));
            if self.items.len() >= self.cap {
                self.shrink();
            }
        }
    }

    /// Offers `score(terms[j], row[j])` as row `b0 + j`, for every j. Once the first blocks
    /// are seen nearly every score is above the threshold, and a scalar compare-and-branch per
    /// score would cost as much as the SGEMM: chunks are scored and tested with vector
    /// instructions, and only a chunk holding a score at or under the threshold is offered
    /// one by one (same scores, same outcome as offering each).
    #[inline(always)]
    fn offer_row(
        &mut self,
        b0: usize,
        terms: &[f32],
        row: &[f32],
        score: impl Fn(f32, f32) -> f32,
    ) {
        const CHUNK: usize = 32;
        let mut j = 0;
        for (tc, rc) in terms.chunks_exact(CHUNK).zip(row.chunks_exact(CHUNK)) {
            let mut s = [0.0f32; CHUNK];
            for ((v, t), r) in s.iter_mut().zip(tc).zip(rc) {
                *v = score(*t, *r);
            }
            let threshold = self.threshold;
            // A non-short-circuiting `or`, so the test vectorises.
            if s.iter().fold(false, |any, v| any | (*v <= threshold)) {
                for (l, v) in s.iter().enumerate() {
                    self.offer(*v, (b0 + j + l) as u32);
                }
            }
            j += CHUNK;
        }
        for (l, (t, r)) in terms[j..].iter().zip(&row[j..]).enumerate() {
            self.offer(score(*t, *r), (b0 + j + l) as u32);
        }
    }

    fn shrink(&mut self) {
        if self.items.len() > self.k {
            let (_, kth, _) = self
                .items
                .select_nth_unstable_by(self.k - 1, |a, b| a.0.total_cmp(&b.0));
            let threshold = self.slack.threshold(kth.0);
            self.items.retain(|item| item.0 <= threshold);
            self.threshold = threshold;
            if self.items.len() * 2 > self.cap {
                self.cap = self.items.len() * 2;
                self.items.reserve(self.cap - self.items.len());
            }
        }
    }

    fn candidates(&mut self) -> &[(f32, u32)] {
        self.shrink();
        &self.items
    }
}

/// Brute force over explicit ids, used where the base is small or scattered (tests, live sets
/// in mutation steps): distance to every vector, sorted by (distance, id).
pub fn naive_knn(
    base: &[f32],
    ids: &[PointId],
    dim: usize,
    query: &[f32],
    distance: Distance,
    k: usize,
) -> Vec<(PointId, f32)> {
    let mut all: Vec<(PointId, f32)> = base
        .chunks_exact(dim)
        .zip(ids)
        .map(|(x, id)| (*id, distance.between(query, x)))
        .collect();
    all.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    all.truncate(k);
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::SplitMix64;

    fn random(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut rng = SplitMix64::new(seed);
        (0..n * dim).map(|_| rng.next_f32() * 2.0 - 1.0).collect()
    }

    fn check_against_naive(distance: Distance, n: usize, nq: usize, dim: usize, k: usize) {
        let base = random(n, dim, 1);
        let queries = random(nq, dim, 2);
        let ids: Vec<PointId> = (0..n as PointId).collect();
        let gt = exact_knn(
            &BaseSet {
                vectors: &base,
                ids: None,
                dim,
            },
            &queries,
            distance,
            k,
            &|_| {},
        );
        for q in 0..nq {
            let want = naive_knn(
                &base,
                &ids,
                dim,
                &queries[q * dim..(q + 1) * dim],
                distance,
                k,
            );
            let got: Vec<(PointId, f32)> = gt
                .ids_of(q)
                .iter()
                .copied()
                .zip(gt.distances_of(q).iter().copied())
                .collect();
            assert_eq!(got, want, "{distance} query {q}");
        }
    }

    #[test]
    fn matches_naive_on_every_metric() {
        for d in [Distance::Euclidean, Distance::Angular, Distance::Dot] {
            check_against_naive(d, 3000, 37, 19, 10);
        }
    }

    #[test]
    fn ties_are_broken_by_id() {
        // Eight copies of the same vector and one query equal to it: all eight are at distance
        // zero, so the top-5 must be the five smallest ids, in order.
        let dim = 4;
        let mut base = random(50, dim, 3);
        let dup = [0.5f32, -0.25, 0.125, 1.0];
        for id in [40usize, 3, 17, 9, 44, 21, 30, 12] {
            base[id * dim..(id + 1) * dim].copy_from_slice(&dup);
        }
        let gt = exact_knn(
            &BaseSet {
                vectors: &base,
                ids: None,
                dim,
            },
            &dup,
            Distance::Euclidean,
            5,
            &|_| {},
        );
        assert_eq!(gt.ids_of(0), &[3, 9, 12, 17, 21]);
        assert!(gt.distances_of(0).iter().all(|d| *d == 0.0));
    }

    #[test]
    fn row_selection_matches_a_copied_subset() {
        let dim = 7;
        let base = random(2000, dim, 5);
        let queries = random(9, dim, 6);
        // Every third row, with ids that are not row numbers.
        let rows: Vec<usize> = (0..2000).step_by(3).collect();
        let ids: Vec<PointId> = rows.iter().map(|r| *r as PointId * 10).collect();
        let mut copy = Vec::new();
        for r in &rows {
            copy.extend_from_slice(&base[r * dim..(r + 1) * dim]);
        }
        for d in [Distance::Euclidean, Distance::Angular, Distance::Dot] {
            let selection = RowSelection {
                vectors: &base,
                rows: &rows,
                ids: &ids,
                dim,
            };
            let a = exact_knn_rows(&selection, &queries, d, 15, &|_| {});
            let copied = BaseSet {
                vectors: &copy,
                ids: Some(&ids),
                dim,
            };
            let b = exact_knn(&copied, &queries, d, 15, &|_| {});
            assert_eq!(a, b, "{d}");
        }
    }

    #[test]
    fn explicit_ids_and_short_base() {
        let dim = 2;
        let base = vec![0.0, 0.0, 1.0, 0.0, 5.0, 5.0];
        let ids = [10, 20, 30];
        let gt = exact_knn(
            &BaseSet {
                vectors: &base,
                ids: Some(&ids),
                dim,
            },
            &[0.9, 0.0],
            Distance::Euclidean,
            4,
            &|_| {},
        );
        assert_eq!(gt.ids_of(0), &[20, 10, 30, PointId::MAX]);
        assert!((gt.distances_of(0)[0] - 0.1).abs() < 1e-6);
        assert!(gt.distances_of(0)[3].is_infinite());
    }

    // ---- Exactness against brute force (defect: f32 selection dropped true neighbours) ----
    //
    // The rule tested: the ground truth must equal `naive_knn` over every point, ids *and*
    // f32 distances (same `Distance::between`, same (distance, id) order). That is what
    // "exact" means for a harness that stores f32 distances. Independently, the result is
    // checked against a float64 brute force: position by position the float64 distances agree
    // within `f64_tolerance` (a bound on the rounding of the f32 re-rank, written here
    // independently of the implementation), nothing clearly closer than the k-th is missing,
    // and equal float64 distances are ordered by id.

    /// Gaussian vectors N(mean, sd²), scaled by `scale` afterwards.
    fn gaussian(n: usize, dim: usize, mean: f32, sd: f32, scale: f32, seed: u64) -> Vec<f32> {
        let mut rng = SplitMix64::new(seed);
        (0..n * dim)
            .map(|_| (mean + sd * rng.next_gaussian()) * scale)
            .collect()
    }

    /// `Distance::between` in float64, same conventions (a zero norm gives angular 1).
    fn distance_f64(distance: Distance, a: &[f32], b: &[f32]) -> f64 {
        let dot = |x: &[f32], y: &[f32]| -> f64 {
            x.iter().zip(y).map(|(p, q)| *p as f64 * *q as f64).sum()
        };
        match distance {
            Distance::Euclidean => a
                .iter()
                .zip(b)
                .map(|(p, q)| (*p as f64 - *q as f64).powi(2))
                .sum::<f64>()
                .sqrt(),
            Distance::Angular => {
                let denom = (dot(a, a) * dot(b, b)).sqrt();
                if denom == 0.0 {
                    1.0
                } else {
                    1.0 - dot(a, b) / denom
                }
            }
            Distance::Dot => -dot(a, b),
        }
    }

    /// How far an f32 `Distance::between` may be from the float64 value, with a factor 4 to
    /// spare: relative for euclidean (the differences are rounded, not the coordinates),
    /// absolute for angular, |q|·max|x| for dot.
    fn f64_tolerance(distance: Distance, dim: usize, query: &[f32], base: &[f32], kth: f64) -> f64 {
        let u = f32::EPSILON as f64 / 2.0;
        let norm = |x: &[f32]| x.iter().map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt();
        match distance {
            Distance::Euclidean => 4.0 * (dim + 8) as f64 * u * kth.abs() + 1e-30,
            Distance::Angular => 4.0 * (2 * dim + 9) as f64 * u,
            Distance::Dot => {
                let max = base.chunks_exact(dim).map(norm).fold(0.0, f64::max);
                4.0 * (dim + 2) as f64 * u * norm(query) * max
            }
        }
    }

    /// Asserts that `gt` is the exact top-k of `queries` over `base` (row r has id `ids[r]`);
    /// panics with the number of top-k entries that differ from brute force.
    #[allow(clippy::too_many_arguments)] // the case under test, spelled out
    fn assert_exact(
        label: &str,
        distance: Distance,
        base: &[f32],
        ids: &[PointId],
        dim: usize,
        queries: &[f32],
        k: usize,
        gt: &GroundTruth,
    ) {
        let nq = queries.len() / dim;
        assert_eq!(gt.queries(), nq, "{label}");
        // 1. Equal to the f32 brute force.
        let mut differ = 0;
        let mut first = None;
        for q in 0..nq {
            let query = &queries[q * dim..(q + 1) * dim];
            let want = naive_knn(base, ids, dim, query, distance, k);
            for slot in 0..k {
                let got = (gt.ids_of(q)[slot], gt.distances_of(q)[slot]);
                let expect = want
                    .get(slot)
                    .copied()
                    .unwrap_or((PointId::MAX, f32::INFINITY));
                if got != expect {
                    differ += 1;
                    first.get_or_insert((q, slot, got, expect));
                }
            }
        }
        assert!(
            differ == 0,
            "{label}: {differ} of {} top-{k} entries differ from brute force (first: query, \
             slot, got, want = {:?})",
            nq * k,
            first
        );
        // 2. Against float64.
        let n = base.len() / dim;
        for q in 0..nq {
            let query = &queries[q * dim..(q + 1) * dim];
            let mut all: Vec<(f64, PointId)> = (0..n)
                .map(|r| {
                    (
                        distance_f64(distance, query, &base[r * dim..(r + 1) * dim]),
                        ids[r],
                    )
                })
                .collect();
            all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let kk = k.min(n);
            let kth = all[kk - 1].0;
            let tol = f64_tolerance(distance, dim, query, base, kth);
            let row_of = |id: PointId| ids.iter().position(|i| *i == id).unwrap();
            let vector = |id: PointId| &base[row_of(id) * dim..(row_of(id) + 1) * dim];
            let d64 = |id: PointId| all.iter().find(|e| e.1 == id).map(|e| e.0).unwrap();
            // Equal float64 distances must be ordered by id when the vectors are identical
            // (then the f32 distances are bit-identical too). Distinct vectors at equal float64
            // distance may differ in f32 rounding (summation order), so for them only the
            // tolerance applies.
            let tie = |a: PointId, b: PointId| d64(a) == d64(b) && vector(a) == vector(b);
            let got = &gt.ids_of(q)[..kk];
            for (slot, id) in got.iter().enumerate() {
                let d = d64(*id);
                assert!(
                    (d - all[slot].0).abs() <= tol,
                    "{label} query {q} slot {slot}: f64 distance {d} vs brute force {} (tol {tol})",
                    all[slot].0
                );
                if slot > 0 {
                    let prev = d64(got[slot - 1]);
                    assert!(prev <= d + tol, "{label} query {q}: out of order at {slot}");
                    if tie(got[slot - 1], *id) {
                        assert!(
                            got[slot - 1] < *id,
                            "{label} query {q}: tie not by id at {slot}"
                        );
                    }
                }
            }
            for (d, id) in &all {
                if !got.contains(id) {
                    assert!(
                        *d >= kth - tol,
                        "{label} query {q}: missing id {id} at {d} < {kth}"
                    );
                    if tie(*id, got[kk - 1]) {
                        assert!(*id > got[kk - 1], "{label} query {q}: tie at the boundary");
                    }
                }
            }
        }
    }

    fn run_exact(
        label: &str,
        distance: Distance,
        base: &[f32],
        dim: usize,
        queries: &[f32],
        k: usize,
    ) {
        let ids: Vec<PointId> = (0..(base.len() / dim) as PointId).collect();
        let set = BaseSet {
            vectors: base,
            ids: None,
            dim,
        };
        let gt = exact_knn(&set, queries, distance, k, &|_| {});
        assert_exact(label, distance, base, &ids, dim, queries, k, &gt);
    }

    const METRICS: [Distance; 3] = [Distance::Euclidean, Distance::Angular, Distance::Dot];

    #[test]
    fn exact_on_offset_data_euclidean() {
        // |x|² ≈ 32·10⁶ (or 10⁸) dwarfs the neighbour distances (≈ 32): in the uncentred f32
        // score |x|² − 2q·x their differences are below rounding.
        for mean in [1000.0, 10000.0] {
            let base = gaussian(2000, 32, mean, 1.0, 1.0, 11);
            let queries = gaussian(200, 32, mean, 1.0, 1.0, 12);
            run_exact(
                &format!("N({mean},1) euclidean"),
                Distance::Euclidean,
                &base,
                32,
                &queries,
                10,
            );
        }
    }

    #[test]
    fn exact_on_offset_data_angular_and_dot() {
        for mean in [1000.0, 10000.0] {
            let base = gaussian(2000, 32, mean, 1.0, 1.0, 13);
            let queries = gaussian(200, 32, mean, 1.0, 1.0, 14);
            for d in [Distance::Angular, Distance::Dot] {
                run_exact(&format!("N({mean},1) {d}"), d, &base, 32, &queries, 10);
            }
        }
    }

    #[test]
    fn exact_on_scaled_data() {
        for scale in [1e-3f32, 1e4] {
            let base = gaussian(2000, 32, 0.0, 1.0, scale, 15);
            let queries = gaussian(50, 32, 0.0, 1.0, scale, 16);
            for d in METRICS {
                run_exact(&format!("scale {scale} {d}"), d, &base, 32, &queries, 10);
            }
            // Scaled and offset at once.
            let base = gaussian(2000, 32, 100.0, 1.0, scale, 17);
            let queries = gaussian(50, 32, 100.0, 1.0, scale, 18);
            for d in METRICS {
                run_exact(
                    &format!("scale {scale} offset {d}"),
                    d,
                    &base,
                    32,
                    &queries,
                    10,
                );
            }
        }
    }

    #[test]
    fn exact_on_duplicate_heavy_data() {
        // 3000 rows drawn from 20 distinct vectors: ~150 exact ties per group, more than any
        // fixed candidate margin; the top-k must be the smallest ids of the nearest group.
        let dim = 16;
        let distinct = gaussian(20, dim, 50.0, 1.0, 1.0, 19);
        let mut rng = SplitMix64::new(20);
        let mut base = Vec::new();
        for _ in 0..3000 {
            let g = rng.below(20) as usize;
            base.extend_from_slice(&distinct[g * dim..(g + 1) * dim]);
        }
        // Queries: some equal to a group, some near one.
        let mut queries = distinct[..5 * dim].to_vec();
        queries.extend(gaussian(5, dim, 50.0, 1.0, 1.0, 21));
        for d in METRICS {
            run_exact(&format!("duplicates {d}"), d, &base, dim, &queries, 10);
            run_exact(
                &format!("duplicates {d} k=200"),
                d,
                &base,
                dim,
                &queries,
                200,
            );
        }
    }

    #[test]
    fn exact_on_offset_row_selection() {
        // A live set (every other row, ids ≠ rows) must get the same guarantee.
        let dim = 32;
        let base = gaussian(4000, dim, 1000.0, 1.0, 1.0, 22);
        let queries = gaussian(100, dim, 1000.0, 1.0, 1.0, 23);
        let rows: Vec<usize> = (0..4000).step_by(2).collect();
        let ids: Vec<PointId> = rows.iter().map(|r| *r as PointId * 7 + 3).collect();
        let mut copy = Vec::new();
        for r in &rows {
            copy.extend_from_slice(&base[r * dim..(r + 1) * dim]);
        }
        for d in METRICS {
            let selection = RowSelection {
                vectors: &base,
                rows: &rows,
                ids: &ids,
                dim,
            };
            let gt = exact_knn_rows(&selection, &queries, d, 10, &|_| {});
            assert_exact(&format!("rows {d}"), d, &copy, &ids, dim, &queries, 10, &gt);
        }
    }

    #[test]
    fn candidates_stay_near_k() {
        // The bound must not degenerate into keeping everything: centring keeps the euclidean
        // slack at the scale of the spread (uncentred, |x|² ≈ 3·10⁹ makes the slack larger
        // than all distances and every item a candidate), and on spread-out data the slack
        // costs only a few extra re-ranks per query.
        let cases = [
            (
                Distance::Euclidean,
                gaussian(2000, 32, 10000.0, 1.0, 1.0, 24),
                10000.0,
            ),
            (Distance::Euclidean, random(3000 * 32, 1, 25), 0.0),
            (Distance::Angular, random(3000 * 32, 1, 26), 0.0),
            (Distance::Dot, random(3000 * 32, 1, 27), 0.0),
        ];
        for (distance, base, mean) in cases {
            let dim = 32;
            let queries = if mean > 0.0 {
                gaussian(100, dim, mean, 1.0, 1.0, 28)
            } else {
                random(100, dim, 28)
            };
            let set = BaseSet {
                vectors: &base,
                ids: None,
                dim,
            };
            let (_, reranked) = knn_counted(&Base::All(&set), &queries, distance, 10, &|_| {});
            let per_query = reranked as f64 / 100.0;
            assert!(
                per_query < 15.0,
                "{distance} mean {mean}: {per_query} candidates per query"
            );
        }
    }

    #[test]
    fn exact_on_many_random_datasets() {
        // Property-style: random shapes, offsets, scales, duplicates, integer grids (exact
        // ties between distinct vectors), zero rows, k beyond n, live-set selections.
        let mut rng = SplitMix64::new(0xC0FFEE);
        for case in 0..400 {
            let n = 1 + rng.below(700) as usize;
            let dim = 1 + rng.below(40) as usize;
            let k = 1 + rng.below(40) as usize;
            let nq = 1 + rng.below(6) as usize;
            let offset = [0.0f32, 1.0, 100.0, 1000.0, 10000.0][rng.below(5) as usize];
            let scale = [1e-3f32, 1.0, 1e3][rng.below(3) as usize];
            let distance = METRICS[rng.below(3) as usize];
            let grid = rng.below(4) == 0;
            let seed = rng.next_u64();
            let draw = |count: usize, seed: u64| -> Vec<f32> {
                let mut r = SplitMix64::new(seed);
                (0..count * dim)
                    .map(|_| {
                        let v = if grid {
                            r.below(3) as f32
                        } else {
                            r.next_gaussian()
                        };
                        (offset + v) * scale
                    })
                    .collect()
            };
            let mut base = draw(n, seed);
            // Duplicates: copy some rows over others.
            if rng.below(2) == 0 {
                for _ in 0..rng.below(n as u64 * 2) {
                    let (from, to) = (rng.below(n as u64) as usize, rng.below(n as u64) as usize);
                    let row = base[from * dim..(from + 1) * dim].to_vec();
                    base[to * dim..(to + 1) * dim].copy_from_slice(&row);
                }
            }
            if rng.below(10) == 0 {
                let r = rng.below(n as u64) as usize;
                base[r * dim..(r + 1) * dim].fill(0.0);
            }
            let mut queries = draw(nq, seed ^ 0x5555);
            if rng.below(3) == 0 {
                // A query equal to a base row.
                let r = rng.below(n as u64) as usize;
                queries[..dim].copy_from_slice(&base[r * dim..(r + 1) * dim]);
            }
            let label = format!(
                "case {case}: n={n} dim={dim} k={k} nq={nq} offset={offset} scale={scale} \
                 grid={grid} {distance}"
            );
            if rng.below(3) == 0 {
                let rows: Vec<usize> = (0..n).filter(|_| rng.below(4) != 0).collect();
                if rows.is_empty() {
                    continue;
                }
                let ids: Vec<PointId> = rows.iter().map(|r| *r as PointId * 3 + 1).collect();
                let mut copy = Vec::new();
                for r in &rows {
                    copy.extend_from_slice(&base[r * dim..(r + 1) * dim]);
                }
                let selection = RowSelection {
                    vectors: &base,
                    rows: &rows,
                    ids: &ids,
                    dim,
                };
                let gt = exact_knn_rows(&selection, &queries, distance, k, &|_| {});
                assert_exact(&label, distance, &copy, &ids, dim, &queries, k, &gt);
            } else {
                run_exact(&label, distance, &base, dim, &queries, k);
            }
        }
    }
}
