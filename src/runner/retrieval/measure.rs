//! One search setting of a sparse or hybrid run: warm-up, the timed loop (a client-side hybrid
//! query is the dense search, the lexical search and the fusion, one after the other, all
//! timed), then the scoring. Every returned row is scored by its exact value, never by the
//! engine's: `−(query · row)` for a sparse search, `−(exact fused score)` for a hybrid one (0
//! for a row neither exact list holds), against the setting's exact counterpart.

use std::collections::HashMap;

use rayon::prelude::*;

use super::super::end_task;
use super::super::search::timed::{Answers, Queries, timed_calls};
use super::super::search::{LiveState, Measurement, timed_step};
use super::{Measured, RetrievalMode, Scope, SearchSetting};
use crate::engine::hybrid::{HybridEngine, HybridQuery};
use crate::engine::{Neighbor, PointId};
use crate::groundtruth::GroundTruth;
use crate::metrics::quality::{QueryInput, score_query, summarize};
use crate::params::ParamMap;
use crate::resources::{Sampler, Watch};
use crate::results::SearchStep;
use crate::runner::RunError;
use crate::sparse::fusion::fuse;

/// The two lists a client-side fusion reads, reused from query to query.
#[derive(Default)]
struct Scratch {
    dense: Vec<Neighbor>,
    lexical: Vec<Neighbor>,
}

/// Where a measurement sits in its run.
pub(super) struct Position<'a> {
    /// Among its configuration's search settings, from 0.
    pub index: usize,
    /// Among every measurement of the run, from 1 (the TREC run file's number).
    pub measurement: usize,
    /// The configuration's build setting.
    pub build: &'a ParamMap,
}

/// Measures `setting` on `engine` and scores it against `truth`.
pub(super) fn search(
    engine: &dyn HybridEngine,
    scope: Scope<'_>,
    setting: &SearchSetting,
    truth: &GroundTruth,
    position: &Position<'_>,
) -> Result<SearchStep, RunError> {
    let index = position.index;
    let plan = scope.plan;
    let nq = scope.lexical.queries.rows;
    let mut scratch = Scratch::default();
    let mut warmup = Vec::with_capacity(plan.warmup);
    let sampler = Sampler::start(
        Watch::with_engine(engine.server_pid()),
        plan.sample_interval,
    );
    let queries = Queries {
        count: nq,
        k: plan.k,
        warmup: plan.warmup,
    };
    let timed = timed_calls(
        queries,
        |q, out| call(engine, scope, setting, q, out, &mut scratch),
        plan.observer(),
        &mut warmup,
    );
    let resources = sampler.stop();
    let (answers, wall) = timed?;
    let distances = exact_distances(scope, setting, &answers);
    let k = plan.k;
    let measured = Measured {
        measurement: position.measurement,
        build: position.build,
        search: &setting.recorded,
        ids: &answers.ids,
        distances: &distances,
        k,
    };
    if let Some(sink) = &plan.answers {
        sink.take(&measured).map_err(RunError::Setup)?;
    }
    let per_query: Vec<_> = (0..nq)
        .map(|q| {
            let (returned_ids, returned_distances) = measured.answer(q);
            score_query(
                &QueryInput {
                    gt_ids: truth.ids_of(q),
                    gt_distances: truth.distances_of(q),
                    returned_ids,
                    returned_distances,
                },
                k,
                plan.relevant,
            )
        })
        .collect();
    let live = all_live(scope.lexical.base.rows);
    let end_task = scope
        .dataset
        .judgments
        .as_ref()
        .map(|j| end_task::score(j, k, &live, truth, |q| measured.answer(q)));
    let measurement = Measurement {
        queries: nq,
        batch: false,
        warmup_queries: plan.warmup,
        runbook_step: 2,
        after: "build",
        params: &setting.recorded,
        live_points: live.live,
        sidecar_step: index,
        first_after_change: index == 0,
    };
    Ok(SearchStep {
        quality: summarize(&per_query, k, plan.relevant),
        resources,
        end_task,
        ..timed_step(&measurement, &answers, wall, &warmup)
    })
}

/// One query of `setting`, its answer left in `out`.
fn call(
    engine: &dyn HybridEngine,
    scope: Scope<'_>,
    setting: &SearchSetting,
    q: usize,
    out: &mut Vec<Neighbor>,
    b: &mut Scratch,
) -> crate::engine::EngineResult<()> {
    let lexical = scope.lexical;
    let query = HybridQuery {
        sparse: lexical.queries.entries(q),
        text: lexical.query_texts.as_ref().map(|t| t[q].as_str()),
        dense: Some(scope.dataset.test.row(q)),
    };
    let k = scope.plan.k;
    match (scope.plan.mode, setting.fusion) {
        (RetrievalMode::Sparse, _) | (RetrievalMode::Hybrid, None) => {
            engine.search_lexical(&query, k, out)
        }
        (RetrievalMode::Hybrid, Some(f)) if f.in_engine => {
            engine.search_fused(&query, f.depth, f.fusion, k, out)
        }
        (RetrievalMode::Hybrid, Some(f)) => {
            engine.search_dense(scope.dataset.test.row(q), f.depth, &mut b.dense)?;
            engine.search_lexical(&query, f.depth, &mut b.lexical)?;
            let as_list = |v: &[Neighbor]| -> Vec<(PointId, f32)> {
                v.iter().map(|n| (n.id, n.score)).collect()
            };
            let fused = fuse(&as_list(&b.dense), &as_list(&b.lexical), f.fusion, k);
            out.clear();
            out.extend(fused.into_iter().map(|(id, score)| Neighbor {
                id,
                score: score as f32,
            }));
            Ok(())
        }
    }
}

/// Every base row live, as an id = row (build-search) run leaves them.
fn all_live(rows: usize) -> LiveState {
    LiveState {
        row_of: (0..rows).map(Some).collect(),
        previous_row: vec![None; rows],
        live: rows,
    }
}

/// The exact value of every returned row, as a distance (smaller is better); NaN for an id
/// that is no row.
fn exact_distances(scope: Scope<'_>, setting: &SearchSetting, answers: &Answers) -> Vec<f32> {
    let (k, lexical) = (scope.plan.k, scope.lexical);
    let nq = lexical.queries.rows;
    let rows = lexical.base.rows;
    (0..nq)
        .into_par_iter()
        .flat_map_iter(|q| {
            let row = &answers.ids[q * k..(q + 1) * k];
            let fused: Option<HashMap<PointId, f64>> = setting.fusion.map(|f| {
                let list = |gt: &GroundTruth| -> Vec<(PointId, f32)> {
                    gt.ids_of(q)
                        .iter()
                        .zip(gt.distances_of(q))
                        .take(f.depth)
                        .take_while(|(id, d)| **id != PointId::MAX && d.is_finite())
                        .map(|(id, d)| (*id, -d))
                        .collect()
                };
                let (dense, sparse) = (list(scope.truths.dense), list(&scope.truths.sparse));
                fuse(&dense, &sparse, f.fusion, usize::MAX)
                    .into_iter()
                    .collect()
            });
            let query = lexical.queries.entries(q);
            row.iter()
                .map(move |&id| match (&fused, (id as usize) < rows) {
                    (_, false) => f32::NAN,
                    (Some(scores), true) => -(scores.get(&id).copied().unwrap_or(0.0) as f32),
                    (None, true) => -(query.dot(&lexical.base.entries(id as usize)) as f32),
                })
                .collect::<Vec<f32>>()
        })
        .collect()
}
