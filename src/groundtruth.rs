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
use crate::types::PointId;

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
mod tests;
