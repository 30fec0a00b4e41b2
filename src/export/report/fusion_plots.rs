//! The fusion sweeps of hybrid runs: for each hybrid series, its retrieval-task NDCG@10
//! (recall against the exact counterpart on a dataset without judgments) against the fusion
//! parameter its settings sweep, RRF's k or the convex weight α, one curve per combination of
//! its other search parameters.

use super::chart::{Axes, Series, colour};
use super::plots::{Plot, add_plot};
use super::{Group, SearchPoint};
use crate::export::ExportError;
use crate::params::{ParamMap, ParamValue};

/// The figure a fusion curve shows: task NDCG@10 where there are judgments.
fn figure(p: &SearchPoint) -> f64 {
    p.search
        .end_task
        .as_ref()
        .and_then(|t| t.metrics.get("ndcg@10").copied())
        .unwrap_or(p.recall)
}

fn number(v: &ParamValue) -> Option<f64> {
    match v {
        ParamValue::Int(i) => Some(*i as f64),
        ParamValue::Float(x) => Some(*x),
        _ => None,
    }
}

/// One curve per engine series and per setting of the other search parameters.
fn curves(group: &Group<'_>, param: &str) -> Vec<Series> {
    let mut out = Vec::new();
    for (i, engine) in group.engines.iter().enumerate() {
        let mut by_rest: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for p in group
            .points
            .iter()
            .filter(|p| &p.engine == engine && p.after_build)
        {
            let params = &p.search.search_params;
            let Some(x) = params.get(param).and_then(number) else {
                continue;
            };
            let mut rest: ParamMap = params.clone();
            rest.remove(param);
            let rest = crate::params::ParamMapExt::label(&rest);
            match by_rest.iter_mut().find(|(r, _)| *r == rest) {
                Some((_, pts)) => pts.push((x, figure(p))),
                None => by_rest.push((rest, vec![(x, figure(p))])),
            }
        }
        for (rest, mut points) in by_rest.into_iter().filter(|(_, pts)| pts.len() > 1) {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            out.push(Series::joined(
                format!("{engine} {rest}"),
                colour(i),
                false,
                points,
            ));
        }
    }
    out
}

/// The RRF-k and α plots, when some hybrid series sweeps them.
pub(super) fn fusion_plots(out: &mut Vec<Plot>, group: &Group<'_>) -> Result<(), ExportError> {
    let name = group.dataset;
    let judged = group.points.iter().any(|p| p.search.end_task.is_some());
    let y = if judged {
        "NDCG@10 (retrieval task)"
    } else {
        "recall against the exact fusion"
    };
    for (file, param, axis) in [
        ("fusion-rrf-k", "rrf_k", "RRF k"),
        (
            "fusion-alpha",
            "alpha",
            "α, the dense weight of the convex fusion",
        ),
    ] {
        add_plot(
            out,
            file,
            format!("{name}: hybrid retrieval, {y} against {axis} (one curve per other setting)"),
            format!("{name}: {y} vs {axis}"),
            Axes::new(axis, y).recall_y(),
            &curves(group, param),
        )?;
    }
    Ok(())
}
