//! The runbook's step kinds as a configuration meets them: build, write (insert, update,
//! delete), stream and search, each one function over the configuration under way
//! ([`ConfigPass`]), behind one dispatch.

use crate::engine::PointId;
use crate::params::{ParamMap, ParamMapExt};
use crate::results::warnings::Warning;
use crate::results::{MutationStep, SearchStep, Step, StreamStep};
use crate::runbook::{OpMode, Resolved, ResolvedStream};

use super::config::ConfigPass;
use super::levels::run_load;
use super::mutate::{self, MutationTarget, Write};
use super::search::{self, ActiveFilter, SearchTarget, StepContext};
use super::warnings::{check_search_warnings, push_warning, warn_full_scan};
use super::{RunError, build, push_step, stream};

/// Whether the result file is rewritten after a step: not after a build or write step that
/// was only replayed (the result is as the earlier attempt left it).
pub(super) enum AfterStep {
    Save,
    Skip,
}

impl ConfigPass<'_, '_> {
    /// Runs runbook step `si` (0-based) by its kind.
    pub(super) fn run_step(&mut self, si: usize, step: &Resolved) -> Result<AfterStep, RunError> {
        match step {
            Resolved::Build { ids } => self.build(ids),
            Resolved::Insert {
                ids,
                mode,
                batch_size,
            }
            | Resolved::Update {
                ids,
                mode,
                batch_size,
                ..
            }
            | Resolved::Delete {
                ids,
                mode,
                batch_size,
            } => self.write(si + 1, step, (ids, *mode, *batch_size)),
            Resolved::Stream(stream) => self.stream(si + 1, stream),
            Resolved::Search { .. } => self.search(si),
        }
    }

    /// A build step: creates the collection and loads `ids` (again, when replayed).
    fn build(&mut self, ids: &[PointId]) -> Result<AfterStep, RunError> {
        let (plan, dataset) = (self.scope.plan, self.scope.dataset);
        let replay = self.record < self.slot.done;
        plan.observer().message(&format!(
            "[{}] {} {} ({} vectors)",
            plan.entry.name,
            if replay {
                "rebuild (resuming)"
            } else {
                "build"
            },
            self.slot.build_params.label(),
            ids.len()
        ));
        let build = build::run_build(self.engine.as_mut(), &self.spec, self.scope, ids)?;
        let stored = dataset
            .element_type
            .stored_as(self.engine.stored_element_type());
        if let Some(types) = &mut self.result.element_type {
            types.record_engine(&stored);
        }
        let rows: Vec<usize> = ids.iter().map(|id| *id as usize).collect();
        self.live.upsert(ids, &rows);
        self.record += 1;
        self.changed = true;
        if replay {
            return Ok(AfterStep::Skip);
        }
        if build.index.may_full_scan {
            warn_full_scan(self.result, &build.index);
        }
        push_step(self.result, Step::Build(build));
        self.result.engine.details = self.engine.describe();
        Ok(AfterStep::Save)
    }

    /// An insert, update or delete step (replayed unmeasured when an earlier attempt has it):
    /// `ids` written in `mode`, `batch_size` at a time.
    fn write(
        &mut self,
        runbook_step: usize,
        step: &Resolved,
        (ids, mode, batch_size): (&[PointId], OpMode, Option<usize>),
    ) -> Result<AfterStep, RunError> {
        let replay = self.record < self.slot.done;
        let kind = step.kind();
        let insert_rows: Vec<usize>;
        let write = match step {
            Resolved::Insert { .. } => {
                insert_rows = ids.iter().map(|id| *id as usize).collect();
                Write::Upsert {
                    ids,
                    rows: &insert_rows,
                }
            }
            Resolved::Update { rows, .. } => Write::Upsert { ids, rows },
            _ => Write::Delete { ids },
        };
        // The live count after the step, for bytes per live vector.
        let live_after = match &write {
            Write::Upsert { .. } if kind == "insert" => self.live.live + ids.len(),
            Write::Upsert { .. } => self.live.live,
            Write::Delete { .. } => self.live.live.saturating_sub(ids.len()),
        };
        let plan = self.scope.plan;
        plan.observer().message(&format!(
            "[{}] {kind} {} points",
            plan.entry.name,
            ids.len()
        ));
        let target = MutationTarget {
            kind,
            runbook_step,
            write,
            mode,
            batch_size,
            live_before: &self.live,
            live_after,
        };
        let m = mutate::run_mutation(self.engine.as_mut(), self.scope, target)?;
        match step {
            Resolved::Insert { ids, .. } => {
                let rows: Vec<usize> = ids.iter().map(|id| *id as usize).collect();
                self.live.upsert(ids, &rows);
            }
            Resolved::Update { ids, rows, .. } => self.live.upsert(ids, rows),
            _ => self.live.delete(ids),
        }
        self.record += 1;
        self.after = kind;
        self.changed = false;
        if replay {
            return Ok(AfterStep::Skip);
        }
        self.record_write(m);
        Ok(AfterStep::Save)
    }

    /// A measured write step's warnings and record.
    fn record_write(&mut self, m: MutationStep) {
        if m.index.may_full_scan {
            warn_full_scan(self.result, &m.index);
        }
        if m.stale_hits > 0 {
            push_warning(
                self.result,
                Warning::StaleHits {
                    count: m.stale_hits,
                },
            );
        }
        // The read-after-write probes have already searched the changed index, so the
        // next search is not a cold start (`changed` is off): only one after a build is.
        push_step(self.result, Step::Mutation(m));
    }

    /// A stream step: measured, or replayed (its writes applied) when an earlier attempt has it.
    fn stream(
        &mut self,
        runbook_step: usize,
        stream: &ResolvedStream,
    ) -> Result<AfterStep, RunError> {
        let replay = self.record < self.slot.done;
        self.record += 1;
        self.after = "stream";
        self.changed = false;
        if replay {
            stream::replay(self.engine.as_mut(), self.scope.dataset, stream)?;
            self.apply_stream(stream);
            return Ok(AfterStep::Save);
        }
        let plan = self.scope.plan;
        // One search-parameter set per stream: the configuration's own when the
        // runbook is swept (see `configurations`), else the only one.
        let params = plan
            .searches
            .get(self.slot.stream_set.unwrap_or(0))
            .cloned()
            .unwrap_or_default();
        self.engine
            .set_search_params(&params)
            .map_err(RunError::engine("set search parameters"))?;
        plan.observer().message(&format!(
            "[{}] stream: {} writes{} with {} searchers",
            plan.entry.name,
            stream.ops.len(),
            stream
                .rate
                .map(|r| format!(" at {r:.0}/s"))
                .unwrap_or_else(|| " as fast as possible".into()),
            stream.searchers
        ));
        let mut step = stream::run_stream(
            self.engine.as_ref(),
            self.scope,
            &params,
            stream,
            runbook_step,
        )?;
        self.apply_stream(stream);
        step.live_points = self.live.live;
        report_stream(plan, &step);
        if step.stale_hits > 0 {
            push_warning(
                self.result,
                Warning::StaleHits {
                    count: step.stale_hits,
                },
            );
        }
        push_step(self.result, Step::Stream(step));
        Ok(AfterStep::Save)
    }

    /// Brings the live state past a stream step's writes.
    fn apply_stream(&mut self, stream: &ResolvedStream) {
        for op in &stream.ops {
            match op.row {
                Some(row) => self.live.upsert(&[op.id], &[row]),
                None => self.live.delete(&[op.id]),
            }
        }
    }

    /// A search step (runbook step `si + 1`). Unfiltered: one measurement per parameter set;
    /// filtered: one per level and parameter set, each against the truth of its level.
    fn search(&mut self, si: usize) -> Result<AfterStep, RunError> {
        let plan = self.scope.plan;
        let runbook_step = si + 1;
        let levels: Vec<Option<usize>> = match &plan.filters {
            Some(f) => (0..f.levels()).map(Some).collect(),
            None => vec![None],
        };
        for level in levels {
            let truths = match (level, &plan.filters) {
                (Some(l), Some(f)) => &f.truths[l],
                _ => &plan.truths,
            };
            let gt = truths.get(si).and_then(|t| t.as_ref()).ok_or_else(|| {
                RunError::Setup(format!("no ground truth for runbook step {runbook_step}"))
            })?;
            let active = match (level, &plan.filters) {
                (Some(l), Some(f)) => Some(ActiveFilter {
                    index: l,
                    level: &f.setup.levels[l],
                    attributes: &f.setup.attributes,
                    selectivity: f.selectivity[l][si],
                }),
                _ => None,
            };
            for params in &plan.searches {
                self.record += 1;
                if self.record <= self.slot.done {
                    self.changed = false;
                    continue;
                }
                self.measure_search(runbook_step, params, gt, active.as_ref())?;
            }
        }
        Ok(AfterStep::Save)
    }

    /// One search measurement: its timed queries, then its load levels, warnings and record,
    /// and the result saved.
    fn measure_search(
        &mut self,
        runbook_step: usize,
        params: &ParamMap,
        gt: &crate::groundtruth::GroundTruth,
        filter: Option<&ActiveFilter<'_>>,
    ) -> Result<(), RunError> {
        let (plan, ci) = (self.scope.plan, self.slot.index);
        self.engine
            .set_search_params(params)
            .map_err(RunError::engine("set search parameters"))?;
        let position = StepContext {
            config_index: ci,
            step_index: self.result.configs.last().map_or(0, |c| c.steps.len()),
            runbook_step,
            after: self.after,
            first_after_change: self.changed,
        };
        self.changed = false;
        let target = SearchTarget {
            params,
            gt,
            live: &self.live,
            filter,
            position: &position,
        };
        let mut step = search::run_search(self.engine.as_ref(), self.scope, &target)?;
        report_search(plan, self.after, params, &step);
        if !plan.load.is_empty() {
            let label = format!("c{ci}-s{runbook_step}-{}", params.label());
            run_load(
                self.engine.as_ref(),
                self.scope.dataset,
                plan,
                &mut step,
                &label,
                self.result,
            )?;
        }
        check_search_warnings(self.result, &step, plan.entry.embedded());
        push_step(self.result, Step::Search(step));
        if let Some(files) = self.scope.files {
            files.save(self.result)?;
        }
        Ok(())
    }
}

/// The one-line message of a search measurement.
fn report_search(plan: &super::BenchPlan, after: &str, params: &ParamMap, step: &SearchStep) {
    let filtered = step
        .filter
        .as_ref()
        .map(|f| {
            format!(
                " [{}: {} violations, {} short]",
                f.name, f.violations, f.short_results
            )
        })
        .unwrap_or_default();
    let recall = match step.quality.recall {
        r if r.is_nan() => "– (nothing to find)".to_string(),
        r => format!("{r:.4}"),
    };
    plan.observer().message(&format!(
        "[{}] search after {after} {}{filtered}: recall {recall}, {:.0} QPS, p99 {:.3} ms",
        plan.entry.name,
        params.label(),
        step.qps,
        step.latency.p99_ms
    ));
}

/// The one-line message of a stream step.
fn report_stream(plan: &super::BenchPlan, step: &StreamStep) {
    let f = &step.freshness;
    let mut left_out = String::new();
    if f.overtaken > 0 {
        left_out += &format!(", {} overtaken by a later write", f.overtaken);
    }
    if f.unobservable > 0 {
        left_out += &format!(
            "; {} writes left out that no search can reveal",
            f.unobservable
        );
    }
    plan.observer().message(&format!(
        "[{}] stream: recall {:.4}, {} stale hits, {:.0} QPS, p99 {:.3} ms; \
         writes {:.0} points/s, p99 {:.3} ms; visible after p50 {:.3} ms, \
         gone after p50 {:.3} ms ({} of {} samples seen{left_out})",
        plan.entry.name,
        step.recall,
        step.stale_hits,
        step.qps,
        step.latency.p99_ms,
        step.write_points_per_s,
        step.write_latency.p99_ms,
        f.put_delay.p50_ms,
        f.delete_delay.p50_ms,
        f.puts_seen + f.deletes_seen,
        f.samples
    ));
}
