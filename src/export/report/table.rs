//! The report's comparison table of a dataset: its header and rows, and the notes said once
//! above it (warnings every run carries, what the sizes are, what each engine's index figure
//! holds) instead of on every row.

use super::{Group, TABLE_METRICS, TASK_METRICS, metric, stem};
use crate::results::RunResult;
use crate::results::warnings::Warning;

/// Whether any search of the group was repeated (`--repeat`): the table then shows the
/// median QPS with its interval.
fn repeated(group: &Group<'_>) -> bool {
    group.points.iter().any(|p| p.search.repeats.is_some())
}

/// Whether some search of the group was scored against relevance judgments: the table then
/// shows the retrieval-task columns.
fn has_task(group: &Group<'_>) -> bool {
    group.points.iter().any(|p| p.search.end_task.is_some())
}

/// The comparison table's header.
pub fn table_header(group: &Group<'_>) -> Vec<String> {
    let mut h = vec![
        "engine".to_string(),
        "setting".into(),
        "step".into(),
        "run".into(),
    ];
    let header = |k: &&str| metric(k).map_or_else(|| (*k).to_string(), |m| m.header.to_string());
    h.extend(TABLE_METRICS.iter().map(header));
    if has_task(group) {
        h.extend(TASK_METRICS.iter().map(header));
    }
    if repeated(group) {
        h.push("QPS median [95% CI], CV".into());
    }
    h.push("warnings".into());
    h
}

/// A warning's kind, as the result file names it (`few_queries`).
fn warning_kind(w: &Warning) -> String {
    serde_json::to_value(w)
        .ok()
        .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(String::from))
        .unwrap_or_else(|| "warning".into())
}

/// The warning kinds of a run, deduplicated, in order (`few_queries`, `noisy_measurement`).
fn warning_kinds(run: &RunResult) -> Vec<String> {
    let mut kinds: Vec<String> = Vec::new();
    for w in &run.warnings {
        let kind = warning_kind(w);
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds
}

impl Group<'_> {
    /// Warning kinds every run of the group carries, each with its distinct texts: said once
    /// above the table instead of on every row.
    pub fn common_warnings(&self) -> Vec<(String, Vec<String>)> {
        let Some(((_, first), rest)) = self.runs.split_first() else {
            return Vec::new();
        };
        warning_kinds(first)
            .into_iter()
            .filter(|kind| rest.iter().all(|(_, r)| warning_kinds(r).contains(kind)))
            .map(|kind| {
                let mut texts: Vec<String> = Vec::new();
                for (_, run) in &self.runs {
                    for w in run.warnings.iter().filter(|w| warning_kind(w) == kind) {
                        let text = w.to_string();
                        if !texts.contains(&text) {
                            texts.push(text);
                        }
                    }
                }
                (kind, texts)
            })
            .collect()
    }

    /// The lines said once above the table: warnings every run carries, what the sizes are
    /// and their floor, what each engine's index figure holds.
    pub fn notes(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .common_warnings()
            .into_iter()
            .map(|(kind, texts)| {
                let shown: Vec<&str> = texts.iter().take(3).map(String::as_str).collect();
                let more = match texts.len().saturating_sub(3) {
                    0 => String::new(),
                    n => format!("; {n} more (see each run)"),
                };
                format!("Every run carries {kind}: {}{more}.", shown.join("; "))
            })
            .collect();
        let floor = self.raw.map_or_else(String::new, |r| {
            format!(
                " Raw vectors: {}: the floor a total per vector is read against.",
                r.describe()
            )
        });
        out.push(format!(
            "Sizes are totals: everything the collection costs after the step the row follows \
             (vectors, index, WAL or log, metadata), the size that compares across engines.{floor}"
        ));
        out.push(format!(
            "What each engine's own index figure holds (index_mb in results.csv, not comparable \
             across engines): {}.",
            self.index_contents().join("; ")
        ));
        out.extend(self.unequal_collections());
        out
    }

    /// A warning when the runs' searches right after their builds see different numbers of
    /// points (runbooks that load a different share of the base before the build): the plots
    /// draw those searches, and their figures then describe different collections.
    fn unequal_collections(&self) -> Option<String> {
        let mut per_run: Vec<(&str, usize)> = Vec::new();
        for p in self.points.iter().filter(|p| p.after_build) {
            if !per_run.iter().any(|(run, _)| *run == p.run) {
                per_run.push((&p.run, p.search.live_points));
            }
        }
        let first = per_run.first()?.1;
        if per_run.iter().all(|(_, n)| *n == first) {
            return None;
        }
        let listed: Vec<String> = per_run
            .iter()
            .map(|(run, n)| format!("{run} {n}"))
            .collect();
        Some(format!(
            "Warning: the runs search collections of different sizes right after their builds \
             (points: {}), so the plots, which draw those searches, compare different \
             collections: run them with the same runbook (e.g. --runbook build-search) to \
             compare them.",
            listed.join(", ")
        ))
    }

    /// Per engine, what its index figure holds: `pgvector: graph + vectors`.
    fn index_contents(&self) -> Vec<String> {
        self.engines
            .iter()
            .map(|engine| {
                let mut holds: Vec<&str> = Vec::new();
                for p in self
                    .points
                    .iter()
                    .filter(|p| &p.engine == engine && p.has_index)
                {
                    let h = p.index_holds.unwrap_or("not recorded");
                    if !holds.contains(&h) {
                        holds.push(h);
                    }
                }
                if holds.is_empty() {
                    holds.push("no index figure");
                }
                format!("{engine}: {}", holds.join(" / "))
            })
            .collect()
    }
}

/// The comparison table's rows of a group.
pub fn table_rows(group: &Group<'_>) -> Vec<Vec<String>> {
    let repeated = repeated(group);
    let task = has_task(group);
    let common: Vec<String> = group
        .common_warnings()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    group
        .points
        .iter()
        .map(|p| {
            let mut r = vec![
                p.engine.clone(),
                p.setting.clone(),
                format!("{} (after {})", p.runbook_step, p.after),
                p.run.clone(),
            ];
            r.extend(p.cells.iter().cloned());
            if task {
                r.extend(p.task_cells.iter().cloned());
            }
            if repeated {
                r.push(
                    p.search
                        .repeats
                        .as_ref()
                        .and_then(|rep| rep.figure("qps"))
                        .map_or_else(
                            || "-".into(),
                            |f| {
                                let ci = f.ci95.map_or_else(String::new, |(lo, hi)| {
                                    format!(" [{lo:.0}, {hi:.0}]")
                                });
                                let cv = f.cv.map_or_else(String::new, |cv| {
                                    format!(", {:.1} %", cv * 100.0)
                                });
                                format!("{:.0}{ci}{cv}", f.median)
                            },
                        ),
                );
            }
            let kinds = group
                .runs
                .iter()
                .find(|(path, _)| stem(path) == p.run)
                .map_or_else(Vec::new, |(_, run)| warning_kinds(run))
                .into_iter()
                .filter(|k| !common.contains(k))
                .collect::<Vec<_>>()
                .join(", ");
            r.push(match (p.invalid, kinds.is_empty()) {
                (true, true) => "INVALID (possible full scan)".to_string(),
                (true, false) => format!("INVALID (possible full scan): {kinds}"),
                (false, _) => kinds,
            });
            r
        })
        .collect()
}

/// "1,234 QPS" or "not reached (max recall 0.871)".
pub fn at_recall_cell(qps: Option<f64>, max_recall: f64) -> String {
    match qps {
        Some(q) => format!("{q:.0}"),
        None => format!("not reached (max recall {max_recall:.3})"),
    }
}
