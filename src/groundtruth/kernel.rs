//! The exact k-NN kernel: blocked f32 scoring (the fused tiles of `tile`) that selects
//! candidates within the rounding bound, then the exact re-rank of those candidates with
//! `Distance::between`.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use super::GroundTruth;
use super::base::{Base, push_centred, sampled_mean};
use super::bounds::{ErrorBounds, norm2};
use super::tile::{NR, PackedBase, PackedQueries, ReadAhead, prefetch, scan, tiles};
use super::top::TopBuffer;
use crate::distance::Distance;
use crate::types::PointId;

/// Queries per block: each pass over the base serves this many queries (their packed
/// panels, 128 KB at d = 128, stay in L2 while a base panel streams through L1).
const QUERY_BLOCK: usize = 256;
/// Bytes of packed base per chunk: packed once, then scanned by every query block (so every
/// base row is read once from memory or disk), small enough to stay in the last-level cache
/// while the query blocks pass over it.
const BASE_CHUNK_BYTES: usize = 4 << 20;

/// How many candidates ahead the exact re-rank requests a row (see `knn_counted`).
const RERANK_AHEAD: usize = 16;

/// A block of queries on its way through the scan.
struct QueryBlock {
    /// The queries as the scoring sees them (centred for euclidean), packed for the tile,
    /// with each query's current threshold.
    packed: PackedQueries,
    /// Squared norm of each (centred) query, from which its slack follows.
    norms2: Vec<f64>,
    /// Candidates kept so far, one buffer per query.
    tops: Vec<TopBuffer>,
}

impl QueryBlock {
    /// Widens every query's slack to `bounds` (a larger base norm is about to be scored),
    /// keeping the packed thresholds equal to the buffers'.
    fn widen(&mut self, bounds: &ErrorBounds) {
        for (q, (top, q2)) in self.tops.iter_mut().zip(&self.norms2).enumerate() {
            top.widen(bounds.slack_for(*q2));
            self.packed.thresholds[q] = top.threshold();
        }
    }
}

/// Base rows per packed chunk of at most `chunk_bytes` (see [`BASE_CHUNK_BYTES`]), a whole
/// number of tile panels.
fn chunk_rows(n: usize, dim: usize, chunk_bytes: usize) -> usize {
    let row_bytes = dim.max(1) * std::mem::size_of::<f32>();
    let rows = (chunk_bytes / row_bytes / NR).max(1) * NR;
    rows.min(n.div_ceil(NR) * NR).max(NR)
}

/// How one call of the kernel runs; [`Default`] serves one large call.
pub(super) struct KnnOptions<'s> {
    pub(super) blocks: Blocking,
    /// Bytes of packed base per chunk (see [`BASE_CHUNK_BYTES`]).
    pub(super) chunk_bytes: usize,
    /// The euclidean centre, where the caller already has the base mean (else it is
    /// computed here; any centre is correct, the mean keeps the bound small).
    pub(super) centre: Option<&'s [f32]>,
    /// A packing buffer to reuse, for many small calls on one thread.
    pub(super) packed: Option<&'s mut PackedBase>,
    /// Whether the rows of the next chunk are requested from memory while a chunk is scanned
    /// (for a selection scattered over a matrix much larger than the cache, with one query
    /// block: a contiguous base is read ahead by the hardware).
    pub(super) read_ahead: bool,
}

impl Default for KnnOptions<'_> {
    fn default() -> Self {
        KnnOptions {
            blocks: Blocking::Spread,
            chunk_bytes: BASE_CHUNK_BYTES,
            centre: None,
            packed: None,
            read_ahead: false,
        }
    }
}

/// How the queries of one call are split into blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Blocking {
    /// Several blocks per thread, so that one call keeps every core busy.
    Spread,
    /// As few blocks as possible, and all of the call on the calling thread: for many small
    /// calls that the caller runs in parallel.
    OneThread,
}

pub(super) fn knn(
    base: &Base<'_>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    options: KnnOptions<'_>,
    on_progress: &(dyn Fn(usize) + Sync),
) -> GroundTruth {
    knn_counted(base, queries, distance, k, options, on_progress).0
}

/// [`knn`], also returning how many candidates were re-ranked exactly over all queries (the
/// cost of the error bound; tests check it stays near k per query).
pub(super) fn knn_counted(
    base: &Base<'_>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    options: KnnOptions<'_>,
    on_progress: &(dyn Fn(usize) + Sync),
) -> (GroundTruth, usize) {
    let KnnOptions {
        blocks,
        chunk_bytes,
        centre: given_centre,
        packed: reused,
        read_ahead,
    } = options;
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
    let centre = match (distance, given_centre) {
        (Distance::Euclidean, Some(c)) => Some(std::borrow::Cow::Borrowed(c)),
        (Distance::Euclidean, None) => Some(std::borrow::Cow::Owned(sampled_mean(base))),
        (Distance::Angular | Distance::Dot, _) => None,
    };
    let centre = centre.as_deref();

    // The rounding bound needs the largest norm of the rows scored so far (see
    // `ErrorBounds`): it starts at 0 and grows as chunks are packed.
    let mut max_norm2 = 0.0f32;
    let mut bounds = ErrorBounds::new(distance, dim, max_norm2);

    // Keep several blocks per thread so both cores stay busy on small query sets.
    let threads = rayon::current_num_threads().max(1);
    let qblock = match blocks {
        Blocking::Spread => QUERY_BLOCK.min(nq.div_ceil(threads * 4)).max(8),
        Blocking::OneThread => QUERY_BLOCK.min(nq),
    };

    // One state per query block: its (centred) queries and the candidates kept so far.
    let mut states = query_blocks(queries, dim, qblock, k, centre, &bounds);

    // The base is packed one chunk at a time (its norms summed by the packing) and every
    // query block scans the chunk before the next is packed: each base row is read (from
    // memory, or from disk for a mapped base) and packed once in all.
    let chunk_len = chunk_rows(n, dim, chunk_bytes);
    // Tasks no smaller than this: a call whose caller runs many in parallel stays on its
    // thread (work split off would be stolen by a thread busy with its own call, away from
    // the cache that holds this call's rows).
    let one_thread = blocks == Blocking::OneThread;
    let min_len = if one_thread { usize::MAX } else { 1 };
    let panels_per_task = if one_thread { usize::MAX } else { 16 };
    let mut own_packed = PackedBase::default();
    let packed = reused.unwrap_or(&mut own_packed);
    // Query × base rows scored so far: progress in query-equivalents is this over n.
    let scanned = AtomicU64::new(0);
    let mut c0 = 0;
    while c0 < n {
        let c1 = n.min(c0 + chunk_len);
        packed.pack(base, c0, c1, centre, distance, panels_per_task);
        let chunk: &PackedBase = packed;
        let widened = chunk.max_norm2() > max_norm2;
        if widened {
            max_norm2 = chunk.max_norm2();
            bounds = ErrorBounds::new(distance, dim, max_norm2);
        }
        let bounds = &bounds;
        let next = c1..n.min(c1 + chunk_len);
        states.par_iter_mut().enumerate().for_each(|(b, state)| {
            if widened {
                state.widen(bounds);
            }
            // One block requests the next chunk's rows (see `KnnOptions::read_ahead`).
            let mut ahead = (read_ahead && b == 0 && !next.is_empty())
                .then(|| ReadAhead::new(base, next.clone(), tiles(&state.packed, chunk)));
            scan(
                &mut state.packed,
                chunk,
                dim,
                distance,
                &mut state.tops,
                ahead.as_mut(),
            );
            let rows = (state.tops.len() * (c1 - c0)) as u64;
            let total = scanned.fetch_add(rows, Ordering::Relaxed) + rows;
            on_progress((total / n as u64) as usize);
        });
        debug_assert_eq!(packed.rows(), (c1 - c0).div_ceil(NR) * NR);
        c0 = c1;
    }

    // Exact re-ranking of every kept candidate, on the original vectors, in base order: a
    // mapped base is then swept forward once (read-ahead helps) instead of being faulted in
    // at random, which under memory pressure re-reads far more than it uses.
    let pairs = candidate_pairs(states, qblock, one_thread);
    let exact = exact_distances(base, queries, distance, &pairs, min_len);
    let reranked = pairs.len();
    let gt = best_per_query(base, &pairs, &exact, nq, k, min_len);
    (gt, reranked)
}

/// One state per query block of `qblock` queries: the queries as the scoring sees them
/// (centred on `centre`, if any) and an empty candidate buffer per query.
#[inline]
fn query_blocks(
    queries: &[f32],
    dim: usize,
    qblock: usize,
    k: usize,
    centre: Option<&[f32]>,
    bounds: &ErrorBounds,
) -> Vec<QueryBlock> {
    queries
        .chunks(qblock * dim)
        .map(|qs| {
            // The scoring sees centred queries; the exact re-rank below uses the originals.
            let scored = match centre {
                Some(_) => {
                    let mut centred = Vec::with_capacity(qs.len());
                    for q in qs.chunks_exact(dim) {
                        push_centred(&mut centred, q, centre);
                    }
                    centred
                }
                None => qs.to_vec(),
            };
            let norms2: Vec<f64> = scored.chunks_exact(dim).map(norm2).collect();
            let tops = norms2
                .iter()
                .map(|q2| TopBuffer::new(k, bounds.slack_for(*q2)))
                .collect();
            QueryBlock {
                packed: PackedQueries::new(&scored, dim),
                norms2,
                tops,
            }
        })
        .collect()
}

/// Every kept candidate as (base entry, query), in base order; the query blocks are freed
/// before the sort.
#[inline]
fn candidate_pairs(
    mut states: Vec<QueryBlock>,
    qblock: usize,
    one_thread: bool,
) -> Vec<(u32, u32)> {
    let mut pairs: Vec<(u32, u32)> = Vec::new(); // (base entry, query)
    for (b, state) in states.iter_mut().enumerate() {
        for (qi, top) in state.tops.iter_mut().enumerate() {
            let q = (b * qblock + qi) as u32;
            pairs.extend(top.candidates().iter().map(|&(_, entry)| (entry, q)));
        }
    }
    drop(states);
    if one_thread {
        pairs.sort_unstable();
    } else {
        pairs.par_sort_unstable();
    }
    pairs
}

/// The exact distance of each (base entry, query) pair, on the original vectors.
#[inline]
fn exact_distances(
    base: &Base<'_>,
    queries: &[f32],
    distance: Distance,
    pairs: &[(u32, u32)],
    min_len: usize,
) -> Vec<f32> {
    let dim = base.dim();
    pairs
        .par_iter()
        .enumerate()
        .with_min_len(min_len)
        .map(|(i, &(entry, q))| {
            // The candidates' rows are scattered over the base (over the whole matrix for a
            // row selection): the row a few candidates ahead is requested now, once.
            if let Some(&(ahead, _)) = pairs.get(i + RERANK_AHEAD)
                && pairs[i + RERANK_AHEAD - 1].0 != ahead
            {
                prefetch(base.vector(ahead as usize));
            }
            let q = q as usize;
            distance.between(
                &queries[q * dim..(q + 1) * dim],
                base.vector(entry as usize),
            )
        })
        .collect()
}

/// The k best of each query's re-ranked candidates, by (distance, id); slots beyond a
/// query's candidates stay `PointId::MAX` at infinity.
#[inline]
fn best_per_query(
    base: &Base<'_>,
    pairs: &[(u32, u32)],
    exact: &[f32],
    nq: usize,
    k: usize,
    min_len: usize,
) -> GroundTruth {
    // Grouped by query (a counting sort), then each query's candidates sorted by
    // (distance, id).
    let mut starts = vec![0usize; nq + 1];
    for &(_, q) in pairs {
        starts[q as usize + 1] += 1;
    }
    for q in 0..nq {
        starts[q + 1] += starts[q];
    }
    let mut by_query: Vec<(f32, PointId)> = vec![(0.0, 0); pairs.len()];
    let mut fill = starts.clone();
    for (&(entry, q), &d) in pairs.iter().zip(exact) {
        let slot = &mut fill[q as usize];
        by_query[*slot] = (d, base.id(entry as usize));
        *slot += 1;
    }
    let mut per_query: Vec<&mut [(f32, PointId)]> = Vec::with_capacity(nq);
    let mut rest = by_query.as_mut_slice();
    for q in 0..nq {
        let (mine, tail) = rest.split_at_mut(starts[q + 1] - starts[q]);
        per_query.push(mine);
        rest = tail;
    }
    let mut ids = vec![PointId::MAX; nq * k];
    let mut dists = vec![f32::INFINITY; nq * k];
    ids.par_chunks_mut(k)
        .zip(dists.par_chunks_mut(k))
        .zip(per_query.into_par_iter())
        .with_min_len(min_len)
        .for_each(|((ids_out, dists_out), exact)| {
            exact.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            for (slot, (d, id)) in exact.iter().take(k).enumerate() {
                ids_out[slot] = *id;
                dists_out[slot] = *d;
            }
        });
    GroundTruth {
        k,
        ids,
        distances: dists,
    }
}
