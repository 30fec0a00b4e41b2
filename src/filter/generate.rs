//! Generated attributes and predicates with a chosen selectivity and correlation.
//!
//! Every generated filter orders the points by a key and cuts that order into equal runs:
//! - `label:S`: runs of `w = round(S·n)` points, each run one keyword value; each query asks
//!   for one full run, so exactly `w` points (a fraction S) pass. Points beyond the last full
//!   run get a value of their own that no query asks for.
//! - `tenant:T`: the same with `w = round(n / T)`: T tenants of equal size, one per query.
//! - `int-range:S`: the rank itself is an integer attribute `num`; each query asks for a
//!   window of `w` consecutive ranks, starting on a multiple of `w / 4` (so queries share
//!   windows, and their truth is computed once per window).
//!
//! The key decides the correlation between a query's predicate and its neighbours:
//! - `none`: a random permutation; each query picks its run or window at random;
//! - `positive`: the projection on a random direction; each query picks the run or window
//!   where its own projection falls, so the points that pass tend to be its near neighbours;
//! - `negative`: the same key; each query picks the run or window farthest from its own
//!   projection, so the points that pass tend to be far from it (the hard case for engines
//!   that search the graph first and filter after).
//!
//! Several filters (`--filter label:0.1 --filter int-range:0.5`) are a conjunction; each has
//! its own key. A sweep makes one level per selectivity of [`SWEEP`]: labels and tenants get
//! one field per level (`label_0` … `label_9`), ranges share `num`.

use std::str::FromStr;

use rayon::prelude::*;

use super::{
    Attributes, Column, Condition, FilterError, FilterLevel, FilterSetup, Predicate, invalid,
};
use crate::rng::SplitMix64;
use crate::vectors::Vectors;

/// The selectivity grid of `--filter-sweep`: fractions of points passing.
pub const SWEEP: [f64; 10] = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.99];

/// A generated filter kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Label,
    IntRange,
    Tenant,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Label => "label",
            Kind::IntRange => "int-range",
            Kind::Tenant => "tenant",
        }
    }
}

/// One `--filter` argument.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterArg {
    /// `label:0.01`, `int-range:0.1`, `tenant:1000`, or the kind alone (for a sweep).
    Generated { kind: Kind, amount: Option<f64> },
    /// `field=value` or `field=lo..hi` on attributes from a file.
    Literal(Condition),
}

impl FromStr for FilterArg {
    type Err = String;
    fn from_str(s: &str) -> Result<FilterArg, String> {
        let usage = "use label[:FRACTION], int-range[:FRACTION], tenant[:COUNT], FIELD=VALUE or \
                     FIELD=LO..HI";
        if let Some((field, value)) = s.split_once('=') {
            super::check_field_name(field).map_err(|e| e.to_string())?;
            if let Some((lo, hi)) = value.split_once("..") {
                let parse = |x: &str| {
                    x.trim().parse::<i64>().map_err(|_| {
                        format!(
                            "`{s}`: `{x}` is not an integer (a range is FIELD=LO..HI, HI excluded)"
                        )
                    })
                };
                let (gte, lt) = (parse(lo)?, parse(hi)?);
                if gte >= lt {
                    return Err(format!("`{s}`: the range is empty (LO must be below HI)"));
                }
                return Ok(FilterArg::Literal(Condition::Range {
                    field: field.to_string(),
                    gte,
                    lt,
                }));
            }
            return Ok(FilterArg::Literal(Condition::equals(field, value)));
        }
        let (name, amount) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let kind = match name {
            "label" => Kind::Label,
            "int-range" | "range" => Kind::IntRange,
            "tenant" => Kind::Tenant,
            _ => return Err(format!("unknown filter `{s}`: {usage}")),
        };
        let amount = match amount {
            None => None,
            Some(a) => {
                let v: f64 = a
                    .trim_end_matches('%')
                    .parse()
                    .map_err(|_| format!("`{s}`: `{a}` is not a number"))?;
                let v = if a.ends_with('%') { v / 100.0 } else { v };
                let ok = match kind {
                    Kind::Tenant => v >= 1.0 && v.fract() == 0.0 && v <= 1e9,
                    _ => v > 0.0 && v <= 1.0,
                };
                if !ok {
                    return Err(match kind {
                        Kind::Tenant => {
                            format!("`{s}`: the tenant count must be a whole number ≥ 1")
                        }
                        _ => format!(
                            "`{s}`: the selectivity must be a fraction in (0, 1], like 0.01 or 1%"
                        ),
                    });
                }
                Some(v)
            }
        };
        Ok(FilterArg::Generated { kind, amount })
    }
}

/// Whether the points that pass are the query's near neighbours, far ones, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Correlation {
    #[default]
    None,
    Positive,
    Negative,
}

impl FromStr for Correlation {
    type Err = String;
    fn from_str(s: &str) -> Result<Correlation, String> {
        match s {
            "none" => Ok(Correlation::None),
            "positive" => Ok(Correlation::Positive),
            "negative" => Ok(Correlation::Negative),
            _ => Err(format!(
                "unknown correlation `{s}`: use none, positive or negative"
            )),
        }
    }
}

impl Correlation {
    pub fn as_str(self) -> &'static str {
        match self {
            Correlation::None => "none",
            Correlation::Positive => "positive",
            Correlation::Negative => "negative",
        }
    }
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct FilterRequest {
    pub args: Vec<FilterArg>,
    pub sweep: bool,
    /// The selectivities a sweep measures (usually [`SWEEP`]).
    pub levels: Vec<f64>,
    pub correlation: Correlation,
    pub seed: u64,
}

/// The points' order under one key, and where each query falls in it.
struct Ranking {
    /// `rank[id]`: position of point `id` in the key order.
    rank: Vec<usize>,
    /// Position each query's key would take among the points' (`None` without correlation).
    query_rank: Option<Vec<usize>>,
}

fn ranking(train: &Vectors, queries: &Vectors, correlation: Correlation, seed: u64) -> Ranking {
    let n = train.len();
    let mut rng = SplitMix64::new(seed);
    if correlation == Correlation::None {
        // Fisher-Yates: a uniformly random order.
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let mut rank = vec![0; n];
        for (pos, id) in order.into_iter().enumerate() {
            rank[id] = pos;
        }
        return Ranking {
            rank,
            query_rank: None,
        };
    }
    let direction: Vec<f32> = (0..train.dim()).map(|_| rng.next_gaussian()).collect();
    let project = |x: &[f32]| -> f32 { x.iter().zip(&direction).map(|(a, b)| a * b).sum() };
    let keys: Vec<f32> = (0..n)
        .into_par_iter()
        .map(|i| project(train.row(i)))
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.par_sort_unstable_by(|a, b| keys[*a].total_cmp(&keys[*b]).then(a.cmp(b)));
    let mut rank = vec![0; n];
    let mut sorted = Vec::with_capacity(n);
    for (pos, id) in order.into_iter().enumerate() {
        rank[id] = pos;
        sorted.push(keys[id]);
    }
    let query_rank = queries
        .iter()
        .map(|q| {
            let k = project(q);
            sorted.partition_point(|x| x.total_cmp(&k).is_lt())
        })
        .collect();
    Ranking {
        rank,
        query_rank: Some(query_rank),
    }
}

/// Which of `runs` equal runs query `q` asks for.
fn pick_run(
    ranking: &Ranking,
    q: usize,
    w: usize,
    runs: usize,
    correlation: Correlation,
    rng: &mut SplitMix64,
) -> usize {
    let own = |qr: &Vec<usize>| (qr[q] / w).min(runs - 1);
    match (&ranking.query_rank, correlation) {
        (Some(qr), Correlation::Positive) => own(qr),
        (Some(qr), Correlation::Negative) => {
            if own(qr) < runs / 2 || runs == 1 {
                runs - 1
            } else {
                0
            }
        }
        _ => rng.below(runs as u64) as usize,
    }
}

/// Points per run for a selectivity on `n` points (at least one).
fn run_width(selectivity: f64, n: usize) -> usize {
    ((selectivity * n as f64).round() as usize).clamp(1, n.max(1))
}

/// One generated attribute: a filter kind at one selectivity, stored under `field`.
struct GeneratedField<'a> {
    kind: Kind,
    field: &'a str,
    selectivity: f64,
}

/// Adds the attribute of one generated filter at one selectivity and returns each query's
/// condition on it.
fn generated(
    attributes: &mut Attributes,
    GeneratedField {
        kind,
        field,
        selectivity,
    }: GeneratedField<'_>,
    ranking: &Ranking,
    queries: usize,
    correlation: Correlation,
    rng: &mut SplitMix64,
) -> Result<Vec<Condition>, FilterError> {
    let n = attributes.len();
    let w = run_width(selectivity, n);
    let runs = (n / w).max(1);
    match kind {
        Kind::Label | Kind::Tenant => {
            if attributes.field_index(field).is_none() {
                // Run `r` is value `r`; the points past the last full run share value `runs`.
                let codes: Vec<u32> = ranking
                    .rank
                    .iter()
                    .map(|r| (r / w).min(runs) as u32)
                    .collect();
                let dictionary = (0..=runs).map(|r| r.to_string()).collect();
                attributes.push(field, Column::Keyword { dictionary, codes })?;
            }
            Ok((0..queries)
                .map(|q| {
                    Condition::equals(
                        field,
                        pick_run(ranking, q, w, runs, correlation, rng).to_string(),
                    )
                })
                .collect())
        }
        Kind::IntRange => {
            if attributes.field_index(field).is_none() {
                let values = ranking.rank.iter().map(|r| *r as i64).collect();
                attributes.push(field, Column::Integer(values))?;
            }
            // Windows start on a grid of a quarter window, so that queries share windows
            // (the filtered truth searches each distinct window's points once) while a
            // window still sits within a quarter of its width of where the query asks.
            let step = (w / 4).max(1);
            let snap = |start: usize| ((start / step) * step).min(n - w);
            Ok((0..queries)
                .map(|q| {
                    let start = snap(match (&ranking.query_rank, correlation) {
                        (Some(qr), Correlation::Positive) => qr[q].saturating_sub(w / 2).min(n - w),
                        (Some(qr), Correlation::Negative) => {
                            if qr[q] < n / 2 {
                                n - w
                            } else {
                                0
                            }
                        }
                        _ => rng.below((n - w + 1) as u64) as usize,
                    });
                    Condition::range(field, start as i64..(start + w) as i64)
                })
                .collect())
        }
    }
}

fn level_name(kind: Kind, selectivity: f64) -> String {
    match kind {
        Kind::Tenant => format!("tenant 1/{}", (1.0 / selectivity).round()),
        _ => format!("{} {}%", kind.as_str(), selectivity * 100.0),
    }
}

/// Makes the attributes and the levels of `request` on top of `attributes` (from a file, or
/// empty for `train.len()` points).
pub fn generate(
    train: &Vectors,
    queries: &Vectors,
    request: &FilterRequest,
    mut attributes: Attributes,
) -> Result<FilterSetup, FilterError> {
    let n = train.len();
    if n == 0 {
        return Err(invalid("a filtered search needs points"));
    }
    if attributes.len() != n {
        return Err(invalid(format!(
            "the attributes cover {} points, the dataset has {n}",
            attributes.len()
        )));
    }
    let mut rng = SplitMix64::new(request.seed ^ 0x5eed_f117);
    let vectors = Points { train, queries };
    let levels = if request.sweep {
        sweep_levels(vectors, request, &mut attributes, &mut rng)?
    } else {
        vec![conjunction_level(
            vectors,
            request,
            &mut attributes,
            &mut rng,
        )?]
    };
    // Every literal condition must name an attribute of the right kind.
    for level in &levels {
        if let Some(p) = level.predicates.first() {
            p.compile(&attributes)?;
        }
    }
    Ok(FilterSetup {
        attributes: std::sync::Arc::new(attributes),
        levels,
    })
}

/// The dataset's points and queries, which the generated keys rank.
#[derive(Clone, Copy)]
struct Points<'a> {
    train: &'a Vectors,
    queries: &'a Vectors,
}

/// One level per selectivity of the sweep, each on its own field (ranges share `num`).
fn sweep_levels(
    Points { train, queries }: Points<'_>,
    request: &FilterRequest,
    attributes: &mut Attributes,
    rng: &mut SplitMix64,
) -> Result<Vec<FilterLevel>, FilterError> {
    let [FilterArg::Generated { kind, amount: None }] = request.args.as_slice() else {
        return Err(invalid(
            "--filter-sweep takes exactly one --filter kind without a selectivity \
             (label, int-range or tenant)",
        ));
    };
    let ranking = ranking(train, queries, request.correlation, request.seed);
    let mut levels = Vec::new();
    for (i, s) in request.levels.iter().enumerate() {
        let field = match kind {
            Kind::IntRange => "num".to_string(),
            _ => format!("{}_{i}", kind.as_str().replace('-', "_")),
        };
        let conditions = generated(
            attributes,
            GeneratedField {
                kind: *kind,
                field: &field,
                selectivity: *s,
            },
            &ranking,
            queries.len(),
            request.correlation,
            rng,
        )?;
        levels.push(FilterLevel {
            name: level_name(*kind, *s),
            target_selectivity: Some(*s),
            predicates: conditions
                .into_iter()
                .map(|c| Predicate { all: vec![c] })
                .collect(),
        });
    }
    Ok(levels)
}

/// The one level of the `--filter` arguments: every query's predicate is their conjunction.
fn conjunction_level(
    Points { train, queries }: Points<'_>,
    request: &FilterRequest,
    attributes: &mut Attributes,
    rng: &mut SplitMix64,
) -> Result<FilterLevel, FilterError> {
    if request.args.is_empty() {
        return Err(invalid("no filter given"));
    }
    let nq = queries.len();
    let mut predicates = vec![Predicate::default(); nq];
    let mut names = Vec::new();
    let mut target = Some(1.0);
    for (j, arg) in request.args.iter().enumerate() {
        match arg {
            FilterArg::Literal(c) => {
                for p in &mut predicates {
                    p.all.push(c.clone());
                }
                names.push(c.to_string());
                target = None;
            }
            FilterArg::Generated { kind, amount } => {
                let Some(amount) = amount else {
                    return Err(invalid(format!(
                        "--filter {} needs a {} (e.g. {}), or --filter-sweep",
                        kind.as_str(),
                        if *kind == Kind::Tenant {
                            "tenant count"
                        } else {
                            "selectivity"
                        },
                        if *kind == Kind::Tenant {
                            "tenant:1000"
                        } else {
                            "label:0.01"
                        }
                    )));
                };
                let selectivity = match kind {
                    Kind::Tenant => 1.0 / amount,
                    _ => *amount,
                };
                let field = match kind {
                    Kind::Label => "label",
                    Kind::IntRange => "num",
                    Kind::Tenant => "tenant",
                };
                if request.args[..j]
                    .iter()
                    .any(|a| matches!(a, FilterArg::Generated { kind: k, .. } if k == kind))
                {
                    return Err(invalid(format!(
                        "--filter {} is given twice",
                        kind.as_str()
                    )));
                }
                let ranking = ranking(
                    train,
                    queries,
                    request.correlation,
                    request.seed.wrapping_add(j as u64 + 1),
                );
                let conditions = generated(
                    attributes,
                    GeneratedField {
                        kind: *kind,
                        field,
                        selectivity,
                    },
                    &ranking,
                    nq,
                    request.correlation,
                    rng,
                )?;
                for (p, c) in predicates.iter_mut().zip(conditions) {
                    p.all.push(c);
                }
                names.push(level_name(*kind, selectivity));
                target = target.map(|t| t * selectivity);
            }
        }
    }
    // With independent keys the selectivities multiply; correlated conjunctions only
    // have a measured selectivity.
    if request.args.len() > 1 && request.correlation != Correlation::None {
        target = None;
    }
    Ok(FilterLevel {
        name: names.join(" AND "),
        target_selectivity: target,
        predicates,
    })
}
