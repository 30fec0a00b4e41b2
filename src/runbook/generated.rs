//! Generated runbooks for the shapes big-ann-benchmarks' streaming track uses, named on the
//! command line with optional settings: `drift:clusters=8`, `sliding-window:window=20%`,
//! `expiry:rate=2000,lifetimes=1s/4s/never`.
//!
//! * **drift**: the data arrives cluster by cluster (k-means clusters of the train rows,
//!   largest first): build on cluster 0, then insert each next cluster and search.
//! * **sliding-window**: the collection keeps the newest `window` of the data: build on it,
//!   then repeatedly insert the next `slide` and delete the oldest `slide`, searching after
//!   each pair, until the data runs out.
//! * **expiry**: every point is deleted a fixed time after its insert: build on `build`, then
//!   one stream step inserts the rest at `rate` points per second with each insert given the
//!   `lifetimes` in turn (`never`: it stays), searched throughout; search again at the end.
//!
//! drift and sliding-window search between operations, as big-ann does; `--concurrent-writes`
//! turns their writes into stream steps.

use super::{
    ClusterPick, IdSelection, Lifetime, Lifetimes, OpMode, Position, Rate, Runbook, RunbookError,
    StepSpec, StreamInsert,
};

/// The names this module answers to.
pub const NAMES: &[&str] = &["drift", "sliding-window", "expiry"];

fn invalid(message: String) -> RunbookError {
    RunbookError::Invalid(message)
}

/// `name` or `name:key=value,key=value`; `None` when `name` is not a generated runbook.
pub fn generate(spec: &str) -> Option<Result<Runbook, RunbookError>> {
    let (name, settings) = spec.split_once(':').unwrap_or((spec, ""));
    if !NAMES.contains(&name) {
        return None;
    }
    Some(parse_settings(name, settings).and_then(|s| match name {
        "drift" => drift(&s),
        "sliding-window" => sliding_window(&s),
        _ => expiry(&s),
    }))
}

struct Settings<'a> {
    name: &'a str,
    pairs: Vec<(&'a str, &'a str)>,
}

impl Settings<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    fn number<T: std::str::FromStr>(&self, key: &str, default: T) -> Result<T, RunbookError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| {
                invalid(format!(
                    "`{}`: `{key}={v}` is not a valid number",
                    self.name
                ))
            }),
        }
    }

    /// A percentage like `20%`, as hundredths of the train set.
    fn percent(&self, key: &str, default: f64) -> Result<f64, RunbookError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .strip_suffix('%')
                .and_then(|p| p.parse::<f64>().ok())
                .filter(|p| *p > 0.0 && *p <= 100.0)
                .ok_or_else(|| {
                    invalid(format!(
                        "`{}`: `{key}={v}` is not a percentage like 20%",
                        self.name
                    ))
                }),
        }
    }
}

fn parse_settings<'a>(name: &'a str, text: &'a str) -> Result<Settings<'a>, RunbookError> {
    let allowed: &[&str] = match name {
        "drift" => &["clusters", "seed"],
        "sliding-window" => &["window", "slide"],
        _ => &["build", "rate", "lifetimes", "batch"],
    };
    let mut pairs = Vec::new();
    for part in text.split(',').filter(|p| !p.trim().is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| invalid(format!("`{name}`: `{part}` is not key=value")))?;
        let (k, v) = (k.trim(), v.trim());
        if !allowed.contains(&k) {
            return Err(invalid(format!(
                "`{name}` has no setting `{k}` (it takes {})",
                allowed.join(", ")
            )));
        }
        pairs.push((k, v));
    }
    Ok(Settings { name, pairs })
}

fn pct(p: f64) -> Position {
    Position::Percent(format!("{p}%"))
}

fn all() -> (Position, Position) {
    (Position::Row(0), Position::Percent("100%".into()))
}

fn drift(s: &Settings<'_>) -> Result<Runbook, RunbookError> {
    let clusters: usize = s.number("clusters", 8)?;
    let seed: u64 = s.number("seed", 0)?;
    if !(2..=1000).contains(&clusters) {
        return Err(invalid(format!(
            "`drift`: clusters={clusters}: give 2 to 1000"
        )));
    }
    let pick = |index| {
        Some(ClusterPick {
            index,
            of: clusters,
            seed,
        })
    };
    let (start, end) = all();
    let mut steps = vec![
        StepSpec::Build {
            start: start.clone(),
            end: end.clone(),
            cluster: pick(0),
        },
        StepSpec::Search,
    ];
    for c in 1..clusters {
        steps.push(StepSpec::Insert {
            start: start.clone(),
            end: end.clone(),
            cluster: pick(c),
            mode: OpMode::Batch,
            batch_size: None,
        });
        steps.push(StepSpec::Search);
    }
    Ok(Runbook {
        name: format!("drift-{clusters}"),
        steps,
    })
}

fn sliding_window(s: &Settings<'_>) -> Result<Runbook, RunbookError> {
    let window = s.percent("window", 20.0)?;
    let slide = s.percent("slide", 10.0)?;
    if slide > window || window >= 100.0 {
        return Err(invalid(format!(
            "`sliding-window`: window={window}% and slide={slide}%: the slide must not exceed \
             the window, and the window must leave data to slide into"
        )));
    }
    let mut steps = vec![
        StepSpec::Build {
            start: Position::Row(0),
            end: pct(window),
            cluster: None,
        },
        StepSpec::Search,
    ];
    // Positions in hundredths, kept exact by stepping an integer count of slides.
    let mut slides = 0u32;
    loop {
        let (from, to) = (
            window + slide * slides as f64,
            window + slide * (slides + 1) as f64,
        );
        if to > 100.0 + 1e-9 {
            break;
        }
        steps.push(StepSpec::Insert {
            start: pct(from),
            end: pct(to),
            cluster: None,
            mode: OpMode::Batch,
            batch_size: None,
        });
        steps.push(StepSpec::Delete {
            ids: IdSelection::Range {
                start: pct(slide * slides as f64),
                end: pct(slide * (slides + 1) as f64),
            },
            mode: OpMode::Batch,
            batch_size: None,
        });
        steps.push(StepSpec::Search);
        slides += 1;
    }
    Ok(Runbook {
        name: format!("sliding-window-{window}-{slide}"),
        steps,
    })
}

fn expiry(s: &Settings<'_>) -> Result<Runbook, RunbookError> {
    let build = s.percent("build", 20.0)?;
    let rate: f64 = s.number("rate", 2000.0)?;
    let batch: usize = s.number("batch", 10)?;
    if !(rate.is_finite() && rate > 0.0) || batch == 0 || build >= 100.0 {
        return Err(invalid(format!(
            "`expiry`: rate={rate}, batch={batch}, build={build}%: give a positive rate and \
             batch, and a build below 100%"
        )));
    }
    let lifetimes: Vec<Lifetime> = s
        .get("lifetimes")
        .unwrap_or("1s/4s/never")
        .split('/')
        .map(|l| {
            let value = match l.trim().parse::<u64>() {
                Ok(n) => toml::Value::Integer(n as i64),
                Err(_) => toml::Value::String(l.trim().to_string()),
            };
            value
                .try_into::<Lifetime>()
                .map_err(|e| invalid(format!("`expiry`: lifetimes: `{l}`: {}", e.message())))
        })
        .collect::<Result<_, _>>()?;
    Ok(Runbook {
        name: "expiry".into(),
        steps: vec![
            StepSpec::Build {
                start: Position::Row(0),
                end: pct(build),
                cluster: None,
            },
            StepSpec::Search,
            StepSpec::Stream {
                insert: Some(StreamInsert {
                    start: pct(build),
                    end: Position::Percent("100%".into()),
                    cluster: None,
                    expire_after: Some(Lifetimes::Each(lifetimes)),
                }),
                update: None,
                delete: None,
                rate: Some(Rate(rate)),
                batch_size: Some(batch),
                searchers: None,
            },
            StepSpec::Search,
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sliding_window_keeps_the_newest_window() {
        let rb = generate("sliding-window:window=20%,slide=10%")
            .unwrap()
            .unwrap();
        let steps = rb.resolve(1000).unwrap();
        // Build, search, then 8 × (insert, delete, search).
        assert_eq!(steps.len(), 2 + 8 * 3);
        let Some(super::super::Resolved::Search { live }) = steps.last() else {
            panic!("the last step is not a search");
        };
        let ids: Vec<_> = live.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, (800..1000).collect::<Vec<_>>());
    }

    #[test]
    fn expiry_and_drift_resolve_and_bad_settings_say_what_is_wrong() {
        let rb = generate("expiry:rate=1000,lifetimes=50/never")
            .unwrap()
            .unwrap();
        let steps = rb.resolve(1000).unwrap();
        let super::super::Resolved::Stream(s) = &steps[2] else {
            panic!("step 3 is not a stream");
        };
        // Half the 800 inserts expire 50 writes later, except those among the last 50 writes
        // (about 50 × 2/3 inserts there, half of them mortal): they outlive the step.
        let deletes = s.ops.iter().filter(|op| op.row.is_none()).count();
        assert!((375..400).contains(&deletes), "{deletes}");
        let drift = generate("drift:clusters=4").unwrap().unwrap();
        assert_eq!(drift.clusterings(), [(4, 0)]);
        assert_eq!(drift.steps.len(), 8);
        for (spec, needle) in [
            ("drift:clusters=1", "2 to 1000"),
            ("drift:k=3", "no setting `k`"),
            ("sliding-window:window=5%,slide=10%", "must not exceed"),
            ("expiry:lifetimes=soon", "lifetimes"),
        ] {
            let message = generate(spec).unwrap().unwrap_err().to_string();
            assert!(message.contains(needle), "{spec}: {message}");
        }
        assert!(generate("churn.toml").is_none());
    }
}
