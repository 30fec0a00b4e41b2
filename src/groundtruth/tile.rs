//! The fused scoring tile: the inner products of `MR` queries with `NR` base vectors are
//! computed in registers, turned into selection scores and tested against each query's
//! threshold there, so that a score reaches memory only when it may belong to the top-k.
//!
//! Why fused: with a general SGEMM every score of every (query, base) pair is written to a
//! score matrix and read back by the selection, and every base block is packed again for
//! every query block. Once the first base rows are seen nearly no score passes its query's
//! threshold; testing in registers costs a few instructions per 96 scores against 1,536 FMAs
//! of the product (at d = 128), and the base is packed once for all query blocks.
//!
//! Layout (BLIS's): queries are packed in panels of `MR` rows, coordinate-major (panel p
//! holds, for each coordinate k, coordinate k of its MR queries); base rows likewise in
//! panels of `NR`. The per-row score term (the squared norm, the inverse norm, or zero) sits
//! beside each base panel; padding rows of the last panel have the term NaN, whose scores
//! compare false against any threshold, so padding never passes.
//!
//! Every inner product is a length-d f32 sum (with FMA on x86_64 AVX2, without elsewhere):
//! the rounding bound of `bounds` holds for any summation order, with or without FMA.

use rayon::prelude::*;

use super::base::Base;
use super::top::TopBuffer;
use crate::distance::Distance;

/// Queries per tile (rows held in registers).
pub(super) const MR: usize = 6;
/// Base vectors per tile (two AVX registers of 8 lanes).
pub(super) const NR: usize = 16;

/// The selection score from the inner product `s` and the base row's term `t` (the rounding
/// bound covers exactly these operations): `t − 2s` (euclidean, t = |x'|²; 2s is exact, so one
/// rounding), `−(s·t)` (angular, t = 1/|x|), `t − s` (dot, t = 0: exactly −s).
#[inline(always)]
fn score(distance: Distance, t: f32, s: f32) -> f32 {
    match distance {
        Distance::Euclidean => t - 2.0 * s,
        Distance::Angular => -(s * t),
        Distance::Dot => t - s,
    }
}

/// A block of queries packed for the tile: `MR`-row panels, and one threshold per packed row
/// (the query's current threshold; NaN for padding rows, which then never pass).
pub(super) struct PackedQueries {
    pub(super) panels: Vec<f32>,
    pub(super) thresholds: Vec<f32>,
}

impl PackedQueries {
    /// Packs `queries` (row-major, `dim` wide), each with threshold +inf.
    pub(super) fn new(queries: &[f32], dim: usize) -> PackedQueries {
        let nq = queries.len() / dim;
        let npanels = nq.div_ceil(MR);
        let mut panels = vec![0.0f32; npanels * MR * dim];
        for (q, v) in queries.chunks_exact(dim).enumerate() {
            let panel = &mut panels[(q / MR) * MR * dim..(q / MR + 1) * MR * dim];
            for (k, x) in v.iter().enumerate() {
                panel[k * MR + q % MR] = *x;
            }
        }
        let mut thresholds = vec![f32::NAN; npanels * MR];
        thresholds[..nq].fill(f32::INFINITY);
        PackedQueries { panels, thresholds }
    }
}

/// A chunk of base rows (`start..start + rows`) packed for the tile: `NR`-row panels
/// (centred for euclidean) and each row's score term, NaN for padding.
#[derive(Default)]
pub(super) struct PackedBase {
    start: usize,
    panels: Vec<f32>,
    terms: Vec<f32>,
}

impl PackedBase {
    /// Packs entries `start..end` of `base`, minus `centre` if given (the same f32 subtraction
    /// as `push_centred`), with their terms from `terms` (zero when `None`), reusing the
    /// buffers. Panels are filled in parallel.
    pub(super) fn pack(
        &mut self,
        base: &Base<'_>,
        start: usize,
        end: usize,
        centre: Option<&[f32]>,
        terms: Option<&[f32]>,
    ) {
        let dim = base.dim();
        let rows = end - start;
        let npanels = rows.div_ceil(NR);
        self.start = start;
        // Every slot of a real row is overwritten below; only padding needs zeroing.
        self.panels.resize(npanels * NR * dim, 0.0);
        self.panels.truncate(npanels * NR * dim);
        self.terms.clear();
        match terms {
            Some(t) => self.terms.extend_from_slice(&t[start..end]),
            None => self.terms.resize(rows, 0.0),
        }
        self.terms.resize(npanels * NR, f32::NAN);
        self.panels
            .par_chunks_mut(NR * dim)
            .enumerate()
            .with_min_len(16)
            .for_each(|(p, panel)| {
                for c in 0..NR {
                    let e = start + p * NR + c;
                    if e >= end {
                        for k in 0..dim {
                            panel[k * NR + c] = 0.0;
                        }
                        continue;
                    }
                    let v = base.vector(e);
                    match centre {
                        Some(m) => {
                            for (k, (x, mk)) in v.iter().zip(m).enumerate() {
                                panel[k * NR + c] = x - mk;
                            }
                        }
                        None => {
                            for (k, x) in v.iter().enumerate() {
                                panel[k * NR + c] = *x;
                            }
                        }
                    }
                }
            });
    }

    pub(super) fn rows(&self) -> usize {
        self.terms.len()
    }
}

/// Offers every score of the packed queries against the packed chunk to `tops` (one per real
/// query row, in order), keeping `queries.thresholds` equal to each buffer's threshold.
pub(super) fn scan(
    queries: &mut PackedQueries,
    chunk: &PackedBase,
    dim: usize,
    distance: Distance,
    tops: &mut [TopBuffer],
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        unsafe { scan_avx2(queries, chunk, dim, distance, tops) };
        return;
    }
    scan_portable(queries, chunk, dim, distance, tops);
}

/// Offers one tile's scores whose row has at least one at or under its threshold (the buffer
/// re-tests each score against its current threshold, which may have dropped meanwhile).
#[inline(always)]
fn offer_tile(
    tile: &[[f32; NR]; MR],
    q0: usize,
    row0: usize,
    tops: &mut [TopBuffer],
    thresholds: &mut [f32],
) {
    for (r, scores) in tile.iter().enumerate() {
        let q = q0 + r;
        let Some(top) = tops.get_mut(q) else { break };
        let t = thresholds[q];
        if scores.iter().fold(false, |any, s| any | (*s <= t)) {
            for (c, s) in scores.iter().enumerate() {
                top.offer(*s, (row0 + c) as u32);
            }
            thresholds[q] = top.threshold();
        }
    }
}

fn scan_portable(
    queries: &mut PackedQueries,
    chunk: &PackedBase,
    dim: usize,
    distance: Distance,
    tops: &mut [TopBuffer],
) {
    let PackedQueries { panels, thresholds } = queries;
    let mut tile = [[0.0f32; NR]; MR];
    for (bp, (b, terms)) in chunk
        .panels
        .chunks_exact(NR * dim)
        .zip(chunk.terms.chunks_exact(NR))
        .enumerate()
    {
        for (qp, a) in panels.chunks_exact(MR * dim).enumerate() {
            let mut acc = [[0.0f32; NR]; MR];
            for (ak, bk) in a.chunks_exact(MR).zip(b.chunks_exact(NR)) {
                for (row, x) in acc.iter_mut().zip(ak) {
                    for (v, y) in row.iter_mut().zip(bk) {
                        *v += x * y;
                    }
                }
            }
            let mut any = false;
            for (r, (row, out)) in acc.iter().zip(tile.iter_mut()).enumerate() {
                let t = thresholds[qp * MR + r];
                for ((o, s), term) in out.iter_mut().zip(row).zip(terms) {
                    *o = score(distance, *term, *s);
                    any |= *o <= t;
                }
            }
            if any {
                offer_tile(&tile, qp * MR, chunk.start + bp * NR, tops, thresholds);
            }
        }
    }
}

/// The tile with AVX2 and FMA: 12 accumulators of 8 lanes (6 queries × 16 rows), the scores
/// and their test against 6 broadcast thresholds in registers, one mask test per tile.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn scan_avx2(
    queries: &mut PackedQueries,
    chunk: &PackedBase,
    dim: usize,
    distance: Distance,
    tops: &mut [TopBuffer],
) {
    use std::arch::x86_64::*;

    let PackedQueries { panels, thresholds } = queries;
    let qpanels = panels.len() / (MR * dim);
    let bpanels = chunk.terms.len() / NR;
    debug_assert_eq!(chunk.panels.len(), bpanels * NR * dim);
    let two = _mm256_set1_ps(2.0);
    let sign = _mm256_set1_ps(-0.0);
    let mut tile = [[0.0f32; NR]; MR];
    for bp in 0..bpanels {
        // SAFETY (every pointer below): panel `bp` spans `NR * dim` floats of `chunk.panels`,
        // its terms `NR` floats of `chunk.terms`, query panel `qp` spans `MR * dim` floats of
        // `panels` and its thresholds `MR` floats; k < dim, lanes < NR, rows < MR.
        let b = unsafe { chunk.panels.as_ptr().add(bp * NR * dim) };
        let (t0, t1) = unsafe {
            let t = chunk.terms.as_ptr().add(bp * NR);
            (_mm256_loadu_ps(t), _mm256_loadu_ps(t.add(8)))
        };
        for qp in 0..qpanels {
            let a = unsafe { panels.as_ptr().add(qp * MR * dim) };
            let z = _mm256_setzero_ps();
            let (mut c00, mut c01, mut c10, mut c11, mut c20, mut c21) = (z, z, z, z, z, z);
            let (mut c30, mut c31, mut c40, mut c41, mut c50, mut c51) = (z, z, z, z, z, z);
            for k in 0..dim {
                unsafe {
                    let bk = b.add(k * NR);
                    let b0 = _mm256_loadu_ps(bk);
                    let b1 = _mm256_loadu_ps(bk.add(8));
                    let ak = a.add(k * MR);
                    // Query row `r` of the tile: one broadcast, two FMAs. Written out per
                    // row (not a loop over an array) so that all 12 accumulators stay in
                    // registers.
                    macro_rules! row {
                        ($r:expr, $lo:ident, $hi:ident) => {
                            let ar = _mm256_set1_ps(*ak.add($r));
                            $lo = _mm256_fmadd_ps(ar, b0, $lo);
                            $hi = _mm256_fmadd_ps(ar, b1, $hi);
                        };
                    }
                    row!(0, c00, c01);
                    row!(1, c10, c11);
                    row!(2, c20, c21);
                    row!(3, c30, c31);
                    row!(4, c40, c41);
                    row!(5, c50, c51);
                }
            }
            // Scores, with the same roundings as `score` (t − 2s by one FMA is the
            // same single rounding: 2s is exact).
            macro_rules! score {
                ($c:expr, $t:expr) => {
                    match distance {
                        Distance::Euclidean => _mm256_fnmadd_ps(two, $c, $t),
                        Distance::Angular => _mm256_xor_ps(_mm256_mul_ps($c, $t), sign),
                        Distance::Dot => _mm256_sub_ps($t, $c),
                    }
                };
            }
            let s = [
                [score!(c00, t0), score!(c01, t1)],
                [score!(c10, t0), score!(c11, t1)],
                [score!(c20, t0), score!(c21, t1)],
                [score!(c30, t0), score!(c31, t1)],
                [score!(c40, t0), score!(c41, t1)],
                [score!(c50, t0), score!(c51, t1)],
            ];
            let th = unsafe { thresholds.as_ptr().add(qp * MR) };
            let mut any = _mm256_setzero_ps();
            for (r, [s0, s1]) in s.iter().enumerate() {
                // Ordered compare: NaN scores (padding, NaN input) and NaN thresholds
                // (padding queries) never pass.
                let t = _mm256_set1_ps(unsafe { *th.add(r) });
                let pass = _mm256_or_ps(
                    _mm256_cmp_ps::<_CMP_LE_OQ>(*s0, t),
                    _mm256_cmp_ps::<_CMP_LE_OQ>(*s1, t),
                );
                any = _mm256_or_ps(any, pass);
            }
            if _mm256_movemask_ps(any) != 0 {
                for (out, [s0, s1]) in tile.iter_mut().zip(&s) {
                    unsafe {
                        _mm256_storeu_ps(out.as_mut_ptr(), *s0);
                        _mm256_storeu_ps(out.as_mut_ptr().add(8), *s1);
                    }
                }
                offer_tile(&tile, qp * MR, chunk.start + bp * NR, tops, thresholds);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groundtruth::bounds::ErrorBounds;
    use crate::groundtruth::{BaseSet, naive_knn};
    use crate::rng::SplitMix64;
    use crate::types::PointId;

    /// The candidates each query keeps after a scan of the whole base by `run`.
    fn candidates(
        base: &[f32],
        queries: &[f32],
        dim: usize,
        k: usize,
        run: fn(&mut PackedQueries, &PackedBase, usize, Distance, &mut [TopBuffer]),
    ) -> Vec<Vec<u32>> {
        let set = BaseSet {
            vectors: base,
            ids: None,
            dim,
        };
        let base_view = Base::All(&set);
        let n = base.len() / dim;
        let norms: Vec<f32> = base
            .chunks_exact(dim)
            .map(|x| crate::distance::dot(x, x))
            .collect();
        let max_norm2 = norms.iter().copied().fold(0.0f32, f32::max);
        let bounds = ErrorBounds::new(Distance::Euclidean, dim, max_norm2);
        let mut tops: Vec<TopBuffer> = queries
            .chunks_exact(dim)
            .map(|q| TopBuffer::new(k, bounds.slack(q)))
            .collect();
        let mut packed_queries = PackedQueries::new(queries, dim);
        let mut chunk = PackedBase::default();
        // Two chunks, the second ending in a partial panel.
        for (start, end) in [(0, 160), (160, n)] {
            chunk.pack(&base_view, start, end, None, Some(&norms));
            run(
                &mut packed_queries,
                &chunk,
                dim,
                Distance::Euclidean,
                &mut tops,
            );
        }
        tops.iter_mut()
            .map(|t| {
                let mut rows: Vec<u32> = t.candidates().iter().map(|c| c.1).collect();
                rows.sort_unstable();
                rows
            })
            .collect()
    }

    #[test]
    fn every_tile_keeps_the_true_neighbours() {
        // 13 queries (two panels and a partial one), 301 rows (a partial base panel), d = 37.
        let (n, nq, dim, k) = (301, 13, 37, 10);
        let mut rng = SplitMix64::new(5);
        let mut draw =
            |len: usize| -> Vec<f32> { (0..len).map(|_| rng.next_f32() * 2.0 - 1.0).collect() };
        let base = draw(n * dim);
        let queries = draw(nq * dim);
        let ids: Vec<PointId> = (0..n as PointId).collect();
        let portable = candidates(&base, &queries, dim, k, scan_portable);
        let dispatched = candidates(&base, &queries, dim, k, scan);
        for (q, query) in queries.chunks_exact(dim).enumerate() {
            let truth = naive_knn(&base, &ids, dim, query, Distance::Euclidean, k);
            for (id, _) in truth {
                for (name, kept) in [("portable", &portable[q]), ("dispatched", &dispatched[q])] {
                    assert!(
                        kept.binary_search(&(id as u32)).is_ok(),
                        "{name} scan dropped true neighbour {id} of query {q}"
                    );
                }
            }
            assert!(portable[q].len() >= k && dispatched[q].len() >= k);
        }
    }
}
