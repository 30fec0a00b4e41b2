//! The series the report's plots hold over time and load: latency CDFs, load levels, stream
//! seconds and the runbook timeline, built from a group's points for `plots.rs`.

use super::chart::{Series, colour};
use super::{Group, SearchPoint};
use crate::params::ParamMapExt;

/// Points per CDF line: enough for the shape, small enough for the page.
const CDF_POINTS: usize = 200;

/// One CDF line per after-build setting with per-query latencies (at most 12, the first ones).
pub(super) fn latency_cdfs(group: &Group<'_>) -> Vec<Series> {
    super::latencies(group)
        .into_iter()
        .take(12)
        .map(|(i, ms)| {
            let p = &group.points[i];
            let n = ms.len();
            let step = (n / CDF_POINTS).max(1);
            let mut points: Vec<(f64, f64)> = (0..n)
                .step_by(step)
                .map(|j| (ms[j], (j + 1) as f64 / n as f64))
                .collect();
            if points.last().is_some_and(|l| l.1 < 1.0) {
                points.push((ms[n - 1], 1.0));
            }
            let engine = group
                .engines
                .iter()
                .position(|e| e == &p.engine)
                .unwrap_or(0);
            Series::joined(
                format!("{} {}", p.engine, p.setting),
                colour(engine),
                p.invalid,
                points,
            )
        })
        .collect()
}

impl Group<'_> {
    /// One series per (run, search setting) of load levels, closed or open loop.
    pub(super) fn load_series(
        &self,
        open_loop: bool,
        xy: impl Fn(&crate::results::load::LoadLevel) -> Option<(f64, f64)>,
    ) -> Vec<Series> {
        let mut out = Vec::new();
        for p in &self.points {
            let levels: Vec<(f64, f64)> = p
                .search
                .load
                .iter()
                .filter(|l| (l.kind == "open") == open_loop)
                .filter_map(&xy)
                .collect();
            if levels.is_empty() {
                continue;
            }
            let engine = self
                .engines
                .iter()
                .position(|e| e == &p.engine)
                .unwrap_or(0);
            out.push(Series::joined(
                format!("{} {}", p.engine, p.setting),
                colour(engine),
                p.invalid,
                levels,
            ));
        }
        out
    }

    /// A figure per second of every stream step, one series per run and step.
    pub(super) fn stream_series(&self, y: fn(&crate::results::StreamSecond) -> f64) -> Vec<Series> {
        let mut out = Vec::new();
        for (path, run) in &self.runs {
            let engine = self
                .engines
                .iter()
                .position(|e| *e == run.series_name())
                .unwrap_or(0);
            for config in &run.configs {
                for step in config.streams() {
                    // Seconds without searches have no recall or latency to draw.
                    let points: Vec<(f64, f64)> = step
                        .timeline
                        .iter()
                        .filter(|s| s.searches > 0 || s.points_written > 0)
                        .map(|s| (s.second as f64 + 0.5, y(s)))
                        .collect();
                    if points.is_empty() {
                        continue;
                    }
                    let label = format!(
                        "{} {} step {} [{}]",
                        run.series_name(),
                        config.build_params.label(),
                        step.runbook_step,
                        super::stem(path)
                    );
                    out.push(Series::joined(label, colour(engine), false, points));
                }
            }
        }
        out
    }

    /// A figure at each runbook step, one series per run and search setting.
    pub(super) fn timeline(&self, y: fn(&SearchPoint) -> f64) -> Vec<Series> {
        let mut out: Vec<Series> = Vec::new();
        for p in &self.points {
            let label = format!("{} {} [{}]", p.engine, p.setting, p.run);
            let point = (p.runbook_step as f64, y(p));
            match out.iter_mut().find(|s| s.label == label) {
                Some(s) => s.points.push(point),
                None => {
                    let engine = self
                        .engines
                        .iter()
                        .position(|e| e == &p.engine)
                        .unwrap_or(0);
                    out.push(Series::joined(
                        label,
                        colour(engine),
                        p.invalid,
                        vec![point],
                    ));
                }
            }
        }
        out
    }
}
