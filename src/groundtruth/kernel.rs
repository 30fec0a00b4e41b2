//! The exact k-NN kernel: blocked SGEMM scoring that selects candidates within the rounding
//! bound, then the exact re-rank of those candidates with `Distance::between`.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use super::GroundTruth;
use super::base::{Base, base_mean, push_centred};
use super::bounds::ErrorBounds;
use super::top::TopBuffer;
use crate::distance::{Distance, dot};
use crate::types::PointId;

/// Queries per SGEMM block: large enough that each pass over the base serves many queries.
const QUERY_BLOCK: usize = 256;
/// Base vectors per SGEMM block: the score tile (`QUERY_BLOCK × BASE_BLOCK` floats) stays in L2.
const BASE_BLOCK: usize = 1024;
/// Bytes of base vectors every query block scans before the next chunk: a base up to this
/// size is one chunk (each query block streams it alone, as before), a larger one is read
/// from memory or disk once per chunk for all query blocks.
const BASE_CHUNK_BYTES: usize = 256 << 20;

/// A block of queries on its way through the scan.
struct QueryBlock {
    /// The queries as the SGEMM sees them (centred for euclidean), row-major.
    scored: Vec<f32>,
    /// Candidates kept so far, one buffer per query.
    tops: Vec<TopBuffer>,
}

/// Base rows per chunk of at most `chunk_bytes` (see [`BASE_CHUNK_BYTES`]), a whole number
/// of SGEMM blocks.
fn chunk_rows(n: usize, dim: usize, chunk_bytes: usize) -> usize {
    let row_bytes = dim.max(1) * std::mem::size_of::<f32>();
    if n.saturating_mul(row_bytes) <= chunk_bytes {
        return n.max(1);
    }
    (chunk_bytes / row_bytes / BASE_BLOCK).max(1) * BASE_BLOCK
}

pub(super) fn knn(
    base: &Base<'_>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    blocks: Blocking,
    on_progress: &(dyn Fn(usize) + Sync),
) -> GroundTruth {
    knn_blocked(
        base,
        queries,
        distance,
        k,
        blocks,
        BASE_CHUNK_BYTES,
        on_progress,
    )
    .0
}

/// How the queries of one call are split into SGEMM blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Blocking {
    /// Several blocks per thread, so that one call keeps every core busy.
    Spread,
    /// As few blocks as possible (each base block is gathered once per query block): for
    /// many small calls that the caller runs in parallel.
    Fewest,
}

/// [`knn`], also returning how many candidates were re-ranked exactly over all queries (the
/// cost of the error bound; tests check it stays near k per query).
#[cfg(test)]
pub(super) fn knn_counted(
    base: &Base<'_>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    on_progress: &(dyn Fn(usize) + Sync),
) -> (GroundTruth, usize) {
    knn_blocked(
        base,
        queries,
        distance,
        k,
        Blocking::Spread,
        BASE_CHUNK_BYTES,
        on_progress,
    )
}

/// [`knn`] with base chunks of `chunk_bytes` (rounded to whole SGEMM blocks), so that tests
/// reach the chunked scan of a base larger than memory on small data.
#[cfg(test)]
pub(super) fn knn_in_chunks(
    base: &Base<'_>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    chunk_bytes: usize,
    on_progress: &(dyn Fn(usize) + Sync),
) -> GroundTruth {
    knn_blocked(
        base,
        queries,
        distance,
        k,
        Blocking::Spread,
        chunk_bytes,
        on_progress,
    )
    .0
}

fn knn_blocked(
    base: &Base<'_>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    blocks: Blocking,
    chunk_bytes: usize,
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
    let qblock = match blocks {
        Blocking::Spread => QUERY_BLOCK.min(nq.div_ceil(threads * 4)).max(8),
        Blocking::Fewest => QUERY_BLOCK.min(nq),
    };

    // One state per query block: its (centred) queries and the candidates kept so far.
    let mut states: Vec<QueryBlock> = queries
        .chunks(qblock * dim)
        .map(|qs| {
            // The SGEMM sees centred queries; the exact re-rank below uses the originals.
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
            let tops = scored
                .chunks_exact(dim)
                .map(|q| TopBuffer::new(k, bounds.slack(q)))
                .collect();
            QueryBlock { scored, tops }
        })
        .collect();

    // The base is scanned in chunks, every query block over one chunk before the next: a
    // base larger than memory (a mapped file) is then read from disk once, not once per
    // query block. A base that fits in one chunk is scanned as a whole by each block.
    let chunk = chunk_rows(n, dim, chunk_bytes);
    // Query × base rows scored so far: progress in query-equivalents is this over n.
    let scanned = AtomicU64::new(0);
    let mut c0 = 0;
    while c0 < n {
        let c1 = n.min(c0 + chunk);
        states.par_iter_mut().for_each(|state| {
            let qn = state.tops.len();
            let mut scores = vec![0.0f32; qn * BASE_BLOCK];
            let mut gathered = Vec::new();
            let mut b0 = c0;
            while b0 < c1 {
                let bn = BASE_BLOCK.min(c1 - b0);
                let bs = base.block(b0, b0 + bn, centre, &mut gathered);
                // scores[qn × bn] = scored[qn × dim] · bsᵀ[dim × bn]
                // SAFETY: the pointers and strides describe the live slices above exactly:
                // `scored` is qn×dim row-major, `bs` is bn×dim row-major (read as its
                // transpose), `scores` has room for qn×bn with row stride bn.
                unsafe {
                    matrixmultiply::sgemm(
                        qn,
                        dim,
                        bn,
                        1.0,
                        state.scored.as_ptr(),
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
                for (qi, top) in state.tops.iter_mut().enumerate() {
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
            let rows = (qn * (c1 - c0)) as u64;
            let total = scanned.fetch_add(rows, Ordering::Relaxed) + rows;
            on_progress((total / n as u64) as usize);
        });
        c0 = c1;
    }

    // Exact re-ranking of every kept candidate, on the original vectors, in base order: a
    // mapped base is then swept forward once (read-ahead helps) instead of being faulted in
    // at random, which under memory pressure re-reads far more than it uses.
    let mut pairs: Vec<(u32, u32)> = Vec::new(); // (base entry, query)
    for (b, state) in states.iter_mut().enumerate() {
        for (qi, top) in state.tops.iter_mut().enumerate() {
            let q = (b * qblock + qi) as u32;
            pairs.extend(top.candidates().iter().map(|&(_, entry)| (entry, q)));
        }
    }
    drop(states);
    pairs.par_sort_unstable();
    let exact: Vec<f32> = pairs
        .par_iter()
        .map(|&(entry, q)| {
            let q = q as usize;
            distance.between(
                &queries[q * dim..(q + 1) * dim],
                base.vector(entry as usize),
            )
        })
        .collect();
    // Grouped by query (a counting sort), then each query's candidates sorted by
    // (distance, id).
    let mut starts = vec![0usize; nq + 1];
    for &(_, q) in &pairs {
        starts[q as usize + 1] += 1;
    }
    for q in 0..nq {
        starts[q + 1] += starts[q];
    }
    let mut by_query: Vec<(f32, PointId)> = vec![(0.0, 0); pairs.len()];
    let mut fill = starts.clone();
    for (&(entry, q), &d) in pairs.iter().zip(&exact) {
        let slot = &mut fill[q as usize];
        by_query[*slot] = (d, base.id(entry as usize));
        *slot += 1;
    }
    let reranked = pairs.len();
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
        .for_each(|((ids_out, dists_out), exact)| {
            exact.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            for (slot, (d, id)) in exact.iter().take(k).enumerate() {
                ids_out[slot] = *id;
                dists_out[slot] = *d;
            }
        });
    let gt = GroundTruth {
        k,
        ids,
        distances: dists,
    };
    (gt, reranked)
}
