//! The exact k-NN kernel: blocked SGEMM scoring that selects candidates within the rounding
//! bound, then the exact re-rank of those candidates with `Distance::between`.

use std::sync::atomic::{AtomicUsize, Ordering};

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

pub(super) fn knn(
    base: &Base<'_>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    blocks: Blocking,
    on_progress: &(dyn Fn(usize) + Sync),
) -> GroundTruth {
    knn_blocked(base, queries, distance, k, blocks, on_progress).0
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
    knn_blocked(base, queries, distance, k, Blocking::Spread, on_progress)
}

fn knn_blocked(
    base: &Base<'_>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    blocks: Blocking,
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
