//! One configuration's pass through the runbook: its working directory and engine, the checks
//! made before the first build, then each runbook step in order (see [`super::steps`]).

use crate::engine::{CollectionSpec, VectorEngine};
use crate::params::ParamMap;
use crate::results::RunResult;
use crate::runbook::Resolved;

use super::cleanup::{CloseOnInterrupt, WorkDirGuard, check_interrupt};
use super::plan::{BenchPlan, RunScope};
use super::search::LiveState;
use super::steps::AfterStep;
use super::{RunError, collection_name, stream};

/// Which configuration runs, and how much of it an earlier attempt already recorded.
#[derive(Clone, Copy)]
pub(super) struct ConfigSlot<'a> {
    /// Position among [`super::configurations`].
    pub index: usize,
    /// The search-parameter set of its stream steps, when the runbook is run once per set.
    pub stream_set: Option<usize>,
    pub build_params: &'a ParamMap,
    /// Records already in the result (a resumed run).
    pub done: usize,
}

/// A configuration under way: what its steps read, the engine they drive, the result they
/// add to, and what one step leaves for the next.
pub(super) struct ConfigPass<'a, 'r> {
    pub scope: RunScope<'a>,
    pub slot: ConfigSlot<'a>,
    pub spec: CollectionSpec,
    pub engine: CloseOnInterrupt,
    pub result: &'r mut RunResult,
    /// What the engine should hold now.
    pub live: LiveState,
    /// Kind of the step the next search follows.
    pub after: &'static str,
    /// No search has touched the index since it was built: the next one is the cold start.
    pub changed: bool,
    /// Records this configuration has produced so far, counting the kept ones.
    pub record: usize,
}

/// Runs one build configuration through the runbook. The first `done` records are already
/// in the result (a resumed run): their build and write steps are replayed to bring the
/// engine's collection to the state they left it in, without being measured again, and their
/// searches are skipped. Without `files` (a `--repeat-build` trial), nothing is saved.
pub(super) fn run_config(
    scope: RunScope<'_>,
    result: &mut RunResult,
    slot: ConfigSlot<'_>,
) -> Result<(), RunError> {
    let plan = scope.plan;
    let (work_dir, _cleanup) = WorkDirGuard::create(
        &plan.work_dir,
        plan.entry.name,
        slot.index,
        plan.keep_work_dir,
    )?;

    let engine = open_engine(plan, result)?;
    let spec = collection_spec(scope, slot.build_params, work_dir);
    if slot.index == 0 {
        check_before_first_build(plan, engine.as_ref(), &spec)?;
    }
    let mut pass = ConfigPass {
        scope,
        slot,
        spec,
        engine,
        result,
        live: LiveState::empty(scope.dataset.train.len()),
        after: "build",
        changed: true,
        record: 0,
    };
    for (si, step) in plan.steps.iter().enumerate() {
        check_interrupt()?;
        let then = pass.run_step(si, step)?;
        if let (AfterStep::Save, Some(files)) = (then, scope.files) {
            files.save(pass.result)?;
        }
    }
    pass.result.engine.details = pass.engine.describe();
    pass.engine.close().map_err(RunError::engine("close"))?;
    Ok(())
}

/// Opens the engine, records what it is, and rejects bad search parameters before any time
/// is spent on a build.
fn open_engine(plan: &BenchPlan, result: &mut RunResult) -> Result<CloseOnInterrupt, RunError> {
    let mut engine = CloseOnInterrupt {
        engine: (plan.entry.open)(&plan.connect).map_err(RunError::engine("open"))?,
        embedded: plan.entry.embedded(),
    };
    result.engine.version = engine.version();
    result.engine.in_process = plan.entry.embedded();
    for params in &plan.searches {
        engine
            .set_search_params(params)
            .map_err(RunError::engine("check search parameters"))?;
    }
    Ok(engine)
}

/// The collection a configuration builds: sized for every point the runbook writes.
fn collection_spec(
    scope: RunScope<'_>,
    build_params: &ParamMap,
    work_dir: std::path::PathBuf,
) -> CollectionSpec {
    let (plan, dataset) = (scope.plan, scope.dataset);
    CollectionSpec {
        name: collection_name(&dataset.name),
        dim: dataset.train.dim(),
        distance: dataset.distance,
        expected_points: plan
            .steps
            .iter()
            .map(|s| match s {
                Resolved::Build { ids } | Resolved::Insert { ids, .. } => ids.len(),
                _ => 0,
            })
            .sum(),
        build_params: build_params.clone(),
        work_dir,
        attributes: plan.filters.as_ref().map(|f| f.setup.attributes.clone()),
        element_type: dataset.element_type,
    }
}

/// Rejects a bad value anywhere in a build sweep before the first build: a typo in the last
/// configuration must not cost the user the hours of the ones before it. Stream steps and
/// filters the engine cannot run are refused here too.
fn check_before_first_build(
    plan: &BenchPlan,
    engine: &dyn VectorEngine,
    spec: &CollectionSpec,
) -> Result<(), RunError> {
    for params in &plan.builds {
        let candidate = CollectionSpec {
            build_params: params.clone(),
            ..spec.clone()
        };
        engine
            .check_build_params(&candidate)
            .map_err(RunError::engine("check build parameters"))?;
    }
    // Writes after the build need an index that takes them: a static one says so here.
    let writes = plan.steps.iter().any(|s| {
        matches!(
            s,
            Resolved::Insert { .. }
                | Resolved::Update { .. }
                | Resolved::Delete { .. }
                | Resolved::Stream(_)
        )
    });
    if writes {
        for params in &plan.builds {
            let candidate = CollectionSpec {
                build_params: params.clone(),
                ..spec.clone()
            };
            engine
                .check_writes(&candidate)
                .map_err(RunError::engine("check the runbook's writes"))?;
        }
    }
    // A stream step needs writes beside searches: an engine that cannot do both at once
    // says so here, before any build, instead of serialising them silently.
    for (si, step) in plan.steps.iter().enumerate() {
        if let Resolved::Stream(_) = step {
            stream::writer_of(engine, si + 1)?;
            if plan.filters.is_some() {
                return Err(RunError::Setup(format!(
                    "runbook step {} is a stream step, which does not search with \
                     --filter yet; drop --filter or the stream step",
                    si + 1
                )));
            }
        }
    }
    // An engine that cannot express a predicate refuses it here, before any build.
    if let Some(f) = &plan.filters {
        for level in &f.setup.levels {
            if let Some(p) = level.predicates.first() {
                engine
                    .check_filter(&f.setup.attributes, p)
                    .map_err(RunError::engine("check filter"))?;
            }
        }
    }
    Ok(())
}
