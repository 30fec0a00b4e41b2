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

use super::base::{Base, push_centred};
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
/// (centred for euclidean), each row's squared norm as packed, and each row's score term,
/// NaN for padding.
#[derive(Default)]
pub(super) struct PackedBase {
    start: usize,
    panels: Vec<f32>,
    /// Squared norm of every real row as packed (centred), an f32 sum of its squares.
    norms2: Vec<f32>,
    terms: Vec<f32>,
}

impl PackedBase {
    /// Packs entries `start..end` of `base`, minus `centre` if given (the same f32 subtraction
    /// as `push_centred`), with their squared norms and the score terms of `distance` that
    /// follow from them, reusing the buffers. Panels are filled in parallel tasks of at least
    /// `panels_per_task` panels (`usize::MAX`: all on the calling thread).
    pub(super) fn pack(
        &mut self,
        base: &Base<'_>,
        start: usize,
        end: usize,
        centre: Option<&[f32]>,
        distance: Distance,
        panels_per_task: usize,
    ) {
        let dim = base.dim();
        let rows = end - start;
        let npanels = rows.div_ceil(NR);
        self.start = start;
        // Every slot of a real row is overwritten below; only padding needs zeroing.
        self.panels.resize(npanels * NR * dim, 0.0);
        self.panels.truncate(npanels * NR * dim);
        self.norms2.resize(npanels * NR, 0.0);
        self.norms2.truncate(npanels * NR);
        self.terms.clear();
        #[cfg(target_arch = "x86_64")]
        let simd = avx2_fma();
        self.panels
            .par_chunks_mut(NR * dim)
            .zip(self.norms2.par_chunks_mut(NR))
            .enumerate()
            .with_min_len(panels_per_task)
            .for_each(|(p, (panel, norms))| {
                let first = start + p * NR;
                // The next panel's rows, which may be scattered over a large matrix, are
                // requested while this one is packed.
                for e in (first + NR)..end.min(first + 2 * NR) {
                    prefetch(base.vector(e));
                }
                #[cfg(target_arch = "x86_64")]
                if simd && first + NR <= end {
                    let rows: [&[f32]; NR] = std::array::from_fn(|c| base.vector(first + c));
                    // SAFETY: the CPU has AVX2 and FMA (`avx2_fma`).
                    unsafe { pack_panel_avx2(&rows, centre, panel, norms) };
                    return;
                }
                pack_panel_portable(base, first, end, centre, panel, norms);
            });
        self.norms2.truncate(rows);
        // The per-row term of the score (see `score`).
        self.terms
            .extend(self.norms2.iter().map(|&n2| match distance {
                Distance::Euclidean => n2,
                Distance::Angular => {
                    let norm = n2.sqrt();
                    if norm > 0.0 { 1.0 / norm } else { 0.0 }
                }
                Distance::Dot => 0.0,
            }));
        self.terms.resize(npanels * NR, f32::NAN);
    }

    /// The largest squared norm of a packed row (centred), an f32 sum of squares (0 for none).
    pub(super) fn max_norm2(&self) -> f32 {
        self.norms2.iter().copied().fold(0.0, f32::max)
    }

    /// Squared norm of every real row as packed (centred), from the last [`PackedBase::pack`].
    #[cfg(test)]
    pub(super) fn norms2(&self) -> &[f32] {
        &self.norms2
    }

    pub(super) fn rows(&self) -> usize {
        self.terms.len()
    }
}

/// Whether the AVX2/FMA tile and packing run here (detected once, then cached by std).
#[inline]
fn avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Hints the CPU to start loading `row` into the cache (no effect where unsupported).
#[inline(always)]
pub fn prefetch(row: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // One request per 64-byte line of the row.
        for line in row.chunks(16) {
            // SAFETY: a prefetch is a hint on a valid address; it never faults.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = row;
}

/// Packs the panel of entries `first..first + NR` (those from `end` on are zero padding) one
/// coordinate at a time, and their squared norms.
fn pack_panel_portable(
    base: &Base<'_>,
    first: usize,
    end: usize,
    centre: Option<&[f32]>,
    panel: &mut [f32],
    norms: &mut [f32],
) {
    let dim = base.dim();
    let mut row = Vec::with_capacity(dim);
    for (c, norm) in norms.iter_mut().enumerate() {
        let e = first + c;
        row.clear();
        if e < end {
            push_centred(&mut row, base.vector(e), centre);
        } else {
            row.resize(dim, 0.0);
        }
        for (k, x) in row.iter().enumerate() {
            panel[k * NR + c] = *x;
        }
        *norm = crate::distance::dot(&row, &row);
    }
}

/// [`pack_panel_portable`] for a full panel with AVX2: each 8 × 8 block of coordinates is
/// loaded row-wise (centred by one subtraction, as `push_centred` does), transposed in
/// registers and stored as 8 contiguous coordinate rows, the squares summed on the way.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn pack_panel_avx2(
    rows: &[&[f32]; NR],
    centre: Option<&[f32]>,
    panel: &mut [f32],
    norms: &mut [f32],
) {
    use std::arch::x86_64::*;

    let dim = rows[0].len();
    debug_assert!(rows.iter().all(|r| r.len() == dim));
    debug_assert!(panel.len() == NR * dim && norms.len() == NR);
    debug_assert!(centre.is_none_or(|m| m.len() == dim));
    let blocks = dim / 8;
    for half in 0..2 {
        let rows8 = &rows[half * 8..half * 8 + 8];
        let mut sq = _mm256_setzero_ps();
        for kb in 0..blocks {
            let k0 = kb * 8;
            // SAFETY: k0 + 8 <= dim, the length of every row and of the centre; the stores
            // write coordinates k0..k0 + 8 of lanes half*8..half*8 + 8, inside the panel.
            unsafe {
                let m = centre.map(|m| _mm256_loadu_ps(m.as_ptr().add(k0)));
                let load = |r: &[f32]| {
                    let x = _mm256_loadu_ps(r.as_ptr().add(k0));
                    match m {
                        Some(m) => _mm256_sub_ps(x, m),
                        None => x,
                    }
                };
                let (r0, r1, r2, r3) = (
                    load(rows8[0]),
                    load(rows8[1]),
                    load(rows8[2]),
                    load(rows8[3]),
                );
                let (r4, r5, r6, r7) = (
                    load(rows8[4]),
                    load(rows8[5]),
                    load(rows8[6]),
                    load(rows8[7]),
                );
                let (t0, t1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
                let (t2, t3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
                let (t4, t5) = (_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5));
                let (t6, t7) = (_mm256_unpacklo_ps(r6, r7), _mm256_unpackhi_ps(r6, r7));
                let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
                let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
                let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
                let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
                let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
                let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
                let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
                let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
                let cols = [
                    _mm256_permute2f128_ps::<0x20>(u0, u4),
                    _mm256_permute2f128_ps::<0x20>(u1, u5),
                    _mm256_permute2f128_ps::<0x20>(u2, u6),
                    _mm256_permute2f128_ps::<0x20>(u3, u7),
                    _mm256_permute2f128_ps::<0x31>(u0, u4),
                    _mm256_permute2f128_ps::<0x31>(u1, u5),
                    _mm256_permute2f128_ps::<0x31>(u2, u6),
                    _mm256_permute2f128_ps::<0x31>(u3, u7),
                ];
                let out = panel.as_mut_ptr().add(k0 * NR + half * 8);
                for (j, col) in cols.iter().enumerate() {
                    _mm256_storeu_ps(out.add(j * NR), *col);
                    sq = _mm256_fmadd_ps(*col, *col, sq);
                }
            }
        }
        let mut lanes = [0.0f32; 8];
        // SAFETY: `lanes` holds 8 floats.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), sq) };
        // The coordinates after the last whole block of 8, one at a time.
        for (c, row) in rows8.iter().enumerate() {
            let mut sum = lanes[c];
            for k in blocks * 8..dim {
                let x = match centre {
                    Some(m) => row[k] - m[k],
                    None => row[k],
                };
                panel[k * NR + half * 8 + c] = x;
                sum += x * x;
            }
            norms[half * 8 + c] = sum;
        }
    }
}

/// Base rows to request from memory while a chunk is scanned, a few per tile: the rows of
/// the next chunk, scattered over a large matrix, then reach the cache while the product runs
/// instead of stalling their packing (which otherwise waits on each row's memory latency).
pub(super) struct ReadAhead<'r, 'b> {
    base: &'r Base<'b>,
    next: usize,
    end: usize,
    per_tile: usize,
}

impl<'r, 'b> ReadAhead<'r, 'b> {
    /// Entries `rows` of `base`, spread over `tiles` tiles of the coming scan.
    pub(super) fn new(base: &'r Base<'b>, rows: std::ops::Range<usize>, tiles: usize) -> Self {
        ReadAhead {
            base,
            next: rows.start,
            end: rows.end,
            per_tile: rows.len().div_ceil(tiles.max(1)),
        }
    }

    /// Requests the rows that fall to one tile.
    #[inline(always)]
    fn step(&mut self) {
        let stop = self.end.min(self.next + self.per_tile);
        while self.next < stop {
            prefetch(self.base.vector(self.next));
            self.next += 1;
        }
    }
}

/// Offers every score of the packed queries against the packed chunk to `tops` (one per real
/// query row, in order), keeping `queries.thresholds` equal to each buffer's threshold, and
/// requests the rows of `ahead` on the way.
pub(super) fn scan(
    queries: &mut PackedQueries,
    chunk: &PackedBase,
    dim: usize,
    distance: Distance,
    tops: &mut [TopBuffer],
    ahead: Option<&mut ReadAhead<'_, '_>>,
) {
    #[cfg(target_arch = "x86_64")]
    if avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        unsafe { scan_avx2(queries, chunk, dim, distance, tops, ahead) };
        return;
    }
    scan_portable(queries, chunk, dim, distance, tops, ahead);
}

/// Tiles of one scan of `queries` over `chunk` (for [`ReadAhead::new`]).
pub(super) fn tiles(queries: &PackedQueries, chunk: &PackedBase) -> usize {
    queries.thresholds.len() / MR * (chunk.rows() / NR)
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
    mut ahead: Option<&mut ReadAhead<'_, '_>>,
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
            if let Some(ahead) = ahead.as_deref_mut() {
                ahead.step();
            }
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
    mut ahead: Option<&mut ReadAhead<'_, '_>>,
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
            if let Some(ahead) = ahead.as_deref_mut() {
                ahead.step();
            }
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
        run: fn(
            &mut PackedQueries,
            &PackedBase,
            usize,
            Distance,
            &mut [TopBuffer],
            Option<&mut ReadAhead<'_, '_>>,
        ),
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
        // Two chunks, the second ending in a partial panel; the first scan requests the
        // second chunk's rows (more rows than tiles in one, fewer in the other).
        for (start, end) in [(0, 160), (160, n)] {
            chunk.pack(&base_view, start, end, None, Distance::Euclidean, 16);
            let mut ahead = (end < n)
                .then(|| ReadAhead::new(&base_view, end..n, tiles(&packed_queries, &chunk)));
            run(
                &mut packed_queries,
                &chunk,
                dim,
                Distance::Euclidean,
                &mut tops,
                ahead.as_mut(),
            );
            if let Some(ahead) = ahead {
                assert_eq!(ahead.next, n, "every row ahead was requested");
            }
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
    fn packing_with_simd_matches_the_portable_packing() {
        // d = 37 (four blocks of 8 and a tail of 5) and d = 128; with and without a centre;
        // 50 rows: three full panels and a partial one (portable in both).
        let mut rng = SplitMix64::new(9);
        for dim in [37, 128] {
            let base: Vec<f32> = (0..50 * dim).map(|_| rng.next_f32() * 8.0 - 3.0).collect();
            let centre: Vec<f32> = (0..dim).map(|_| rng.next_f32()).collect();
            let set = BaseSet {
                vectors: &base,
                ids: None,
                dim,
            };
            let view = Base::All(&set);
            for c in [None, Some(centre.as_slice())] {
                let mut packed = PackedBase::default();
                packed.pack(&view, 1, 50, c, Distance::Euclidean, 1);
                let mut panels = vec![0.0f32; packed.panels.len()];
                let mut norms = vec![0.0f32; panels.len() / dim];
                for (p, (panel, norm)) in panels
                    .chunks_mut(NR * dim)
                    .zip(norms.chunks_mut(NR))
                    .enumerate()
                {
                    pack_panel_portable(&view, 1 + p * NR, 50, c, panel, norm);
                }
                assert_eq!(packed.panels, panels, "d = {dim}, centre {}", c.is_some());
                assert_eq!(packed.norms2().len(), 49);
                for (got, want) in packed.norms2().iter().zip(&norms) {
                    assert!((got - want).abs() <= 1e-5 * want, "{got} vs {want}");
                }
                assert_eq!(
                    packed.max_norm2(),
                    packed.norms2().iter().copied().fold(0.0, f32::max)
                );
                assert!(
                    packed.terms[49..].iter().all(|t| t.is_nan()),
                    "padding terms"
                );
            }
        }
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
