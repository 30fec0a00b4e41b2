//! Sparse and hybrid runs (`bench --retrieval sparse|hybrid`): for each build setting, one
//! collection built from the dataset's sparse vectors (and texts; and dense vectors for a
//! hybrid run), then every search setting measured on it. The runbook is build-then-search:
//! the writes of the dense runbooks are not part of these runs.
//!
//! Each setting is scored against its exact counterpart: a sparse search against the exact
//! sparse top-k ([`crate::groundtruth::sparse::exact_sparse`]), a hybrid one against the same
//! fusion of the exact dense and exact sparse lists ([`exact_fused`]), so that "recall of the
//! hybrid against its exact counterpart" is defined, and, with judgments, on the retrieval
//! task beside the exact counterpart's own figures.

mod measure;

use std::time::{Duration, Instant};

use super::build::{Phase, TimedWrite, timed_build};
use super::cleanup::{WorkDirGuard, check_interrupt};
use super::{RunError, collection_name};
use crate::dataset::Dataset;
use crate::dataset::lexical::LexicalSet;
use crate::engine::ConnectOptions;
use crate::engine::hybrid::{
    DenseSide, HybridData, HybridEngine, HybridSpec, LexicalEntry, LexicalInput,
};
use crate::groundtruth::GroundTruth;
use crate::groundtruth::sparse::exact_fused;
use crate::params::{ParamMap, ParamValue};
use crate::results::run_files::RunFiles;
use crate::results::{BuildStep, ConfigRun, RunResult, Step};
use crate::sparse::fusion::Fusion;
use crate::types::{Progress, ProgressHandle, Silent};

/// What a run retrieves with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetrievalMode {
    /// The lexical side alone.
    Sparse,
    /// Dense and lexical, fused.
    Hybrid,
}

impl RetrievalMode {
    pub fn name(self) -> &'static str {
        match self {
            RetrievalMode::Sparse => "sparse",
            RetrievalMode::Hybrid => "hybrid",
        }
    }
}

/// How a hybrid setting fuses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusionSetting {
    pub fusion: Fusion,
    /// Results each of the two searches returns before fusion.
    pub depth: usize,
    /// Fused by the engine (Qdrant's prefetch + fusion query) instead of the client.
    pub in_engine: bool,
}

/// One search setting: what the engine is given, how a hybrid fuses, and what the result
/// records (both together).
#[derive(Debug, Clone)]
pub struct SearchSetting {
    pub engine: ParamMap,
    pub fusion: Option<FusionSetting>,
    pub recorded: ParamMap,
}

/// What to run.
pub struct RetrievalPlan {
    pub entry: &'static LexicalEntry,
    pub connect: ConnectOptions,
    pub mode: RetrievalMode,
    pub builds: Vec<ParamMap>,
    pub searches: Vec<SearchSetting>,
    pub k: usize,
    pub relevant: usize,
    pub warmup: usize,
    pub work_dir: std::path::PathBuf,
    pub keep_work_dir: bool,
    pub quiet: bool,
    pub progress: ProgressHandle,
    pub sample_interval: Duration,
    /// Where each measurement's answers go (`--trec-run` writes them as TREC run files).
    pub answers: Option<Box<dyn AnswerSink>>,
}

/// One measurement's answers, ranked by their exact distances.
pub struct Measured<'a> {
    /// Among every measurement of the run, from 1.
    pub measurement: usize,
    pub build: &'a ParamMap,
    /// The search setting as the result records it.
    pub search: &'a ParamMap,
    /// `k` ids per query, the unused places `PointId::MAX`.
    pub ids: &'a [crate::types::PointId],
    /// The exact distance of each id (the same layout).
    pub distances: &'a [f32],
    pub k: usize,
}

impl Measured<'_> {
    /// Query `q`'s answer: the ids it returned and their exact distances, without the
    /// padding of a short answer.
    pub fn answer(&self, q: usize) -> (&[crate::types::PointId], &[f32]) {
        let k = self.k.max(1);
        let row = &self.ids[q * k..(q + 1) * k];
        let n = row
            .iter()
            .take_while(|id| **id != crate::types::PointId::MAX)
            .count();
        (&row[..n], &self.distances[q * k..q * k + n])
    }

    /// Queries answered.
    pub fn queries(&self) -> usize {
        self.ids.len() / self.k.max(1)
    }
}

/// Receives the answers of every measurement as it ends.
pub trait AnswerSink {
    /// A failure (a file that cannot be written) stops the run with its message.
    fn take(&self, answers: &Measured<'_>) -> Result<(), String>;
}

impl RetrievalPlan {
    fn observer(&self) -> &dyn Progress {
        if self.quiet { &Silent } else { &*self.progress }
    }
}

/// The exact references: the dataset's dense truth and the exact sparse truth, both at least
/// as deep as the deepest fusion and as the run's k.
pub struct Truths<'a> {
    pub dense: &'a GroundTruth,
    pub sparse: GroundTruth,
}

impl Truths<'_> {
    /// The exact counterpart of `setting`: the sparse truth, or the fused one.
    fn of(&self, setting: &SearchSetting) -> GroundTruth {
        match setting.fusion {
            None => self.sparse.clone(),
            Some(f) => exact_fused(self.dense, &self.sparse, f.depth, f.fusion, self.sparse.k),
        }
    }
}

/// Runs `plan`, adding one configuration per build setting to `result` and saving it after
/// every step.
pub fn run(
    plan: &RetrievalPlan,
    dataset: &Dataset,
    lexical: &LexicalSet,
    truths: &Truths<'_>,
    result: &mut RunResult,
    files: &RunFiles,
) -> Result<(), RunError> {
    files.save(result)?;
    for (ci, build) in plan.builds.iter().enumerate() {
        let mut recorded = build.clone();
        recorded.insert("retrieval".into(), ParamValue::Str(plan.mode.name().into()));
        result.configs.push(ConfigRun {
            build_params: recorded,
            stream_search_params: None,
            steps: Vec::new(),
            error: None,
        });
        let scope = Scope {
            plan,
            dataset,
            lexical,
            truths,
        };
        if let Err(e) = run_config(scope, ci, build, result, files) {
            if let Some(c) = result.configs.last_mut() {
                c.error = Some(crate::secret::redact(&e.to_string()));
            }
            return Err(e);
        }
    }
    Ok(())
}

/// What every step of a run reads.
#[derive(Clone, Copy)]
struct Scope<'a> {
    plan: &'a RetrievalPlan,
    dataset: &'a Dataset,
    lexical: &'a LexicalSet,
    truths: &'a Truths<'a>,
}

fn run_config(
    scope: Scope<'_>,
    index: usize,
    build: &ParamMap,
    result: &mut RunResult,
    files: &RunFiles,
) -> Result<(), RunError> {
    let plan = scope.plan;
    let (work_dir, _cleanup) =
        WorkDirGuard::create(&plan.work_dir, plan.entry.name, index, plan.keep_work_dir)?;
    let mut engine = (plan.entry.open)(&plan.connect).map_err(RunError::engine("open"))?;
    result.engine.version = engine.version();
    result.engine.in_process = plan.entry.embedded;
    check_capabilities(engine.as_ref(), scope)?;
    for s in &plan.searches {
        engine
            .set_search_params(&s.engine)
            .map_err(RunError::engine("check search parameters"))?;
    }
    let spec = HybridSpec {
        name: collection_name(&scope.dataset.name),
        dense: (plan.mode == RetrievalMode::Hybrid).then(|| DenseSide {
            dim: scope.dataset.train.dim(),
            distance: scope.dataset.distance,
        }),
        sparse_dim: scope.lexical.base.cols,
        expected_points: scope.lexical.base.rows,
        build_params: build.clone(),
        work_dir,
    };
    let step = build_collection(engine.as_mut(), &spec, scope)?;
    push(result, Step::Build(step));
    files.save(result)?;
    for (si, setting) in plan.searches.iter().enumerate() {
        check_interrupt()?;
        engine
            .set_search_params(&setting.engine)
            .map_err(RunError::engine("set search parameters"))?;
        let truth = scope.truths.of(setting);
        let position = measure::Position {
            index: si,
            measurement: index * plan.searches.len() + si + 1,
            build,
        };
        let step = measure::search(engine.as_ref(), scope, setting, &truth, &position)?;
        push(result, Step::Search(step));
        files.save(result)?;
    }
    result.engine.details = engine.describe();
    engine.close().map_err(RunError::engine("close"))
}

/// Refuses, before any build, a run the engine cannot do: hybrid without a dense side, fusion
/// in an engine that has none, text retrieval on a dataset without texts.
fn check_capabilities(engine: &dyn HybridEngine, scope: Scope<'_>) -> Result<(), RunError> {
    let caps = engine.capabilities();
    let name = engine.name();
    if scope.plan.mode == RetrievalMode::Hybrid && !caps.dense {
        return Err(RunError::Setup(format!(
            "{name} has no dense vectors to fuse with: run it with --retrieval sparse"
        )));
    }
    if !caps.engine_rrf
        && scope
            .plan
            .searches
            .iter()
            .any(|s| s.fusion.is_some_and(|f| f.in_engine))
    {
        return Err(RunError::Setup(format!(
            "{name} does not fuse inside the engine: use --search-param fusion_in=client"
        )));
    }
    if caps.lexical == LexicalInput::Text
        && (scope.lexical.base_texts.is_none() || scope.lexical.query_texts.is_none())
    {
        return Err(RunError::Setup(format!(
            "{name} analyses text, and the dataset has no texts/ folder: `ragdbeval embed \
             --sparse bm25` writes it"
        )));
    }
    Ok(())
}

fn push(result: &mut RunResult, step: Step) {
    if let Some(c) = result.configs.last_mut() {
        c.steps.push(step);
    }
}

/// Creates the collection and loads every base row in batches, then waits for the index.
fn build_collection(
    engine: &mut dyn HybridEngine,
    spec: &HybridSpec,
    scope: Scope<'_>,
) -> Result<BuildStep, RunError> {
    let plan = scope.plan;
    engine.create(spec).map_err(RunError::engine("create"))?;
    let data = HybridData {
        sparse: &scope.lexical.base,
        texts: scope.lexical.base_texts.as_deref(),
        dense: spec.dense.map(|_| &*scope.dataset.train),
    };
    let phase = Phase {
        observer: plan.observer(),
        quiet: plan.quiet,
        sample_interval: plan.sample_interval,
    };
    let chunk = plan.connect.batch_size.max(1);
    timed_build(
        engine,
        phase,
        scope.lexical.base.rows,
        chunk,
        |engine, rows| {
            let t = Instant::now();
            engine
                .insert(&data, rows)
                .map_err(RunError::engine("bulk insert"))?;
            Ok(TimedWrite {
                call: t.elapsed(),
                untimed: Duration::ZERO,
            })
        },
    )
}
