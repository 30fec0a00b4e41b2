//! What a setting costs, from measured figures and the prices the user gives
//! (`report --price-per-hour`, `--ram-price`, `--storage-price`, or `--prices FILE`):
//!
//! - dollars per million queries = price per hour ÷ (QPS × 3600) × 10⁶, at the QPS the
//!   setting was measured at (its step's clients, the machine the engine ran on);
//! - memory dollars per month = the engine's memory once built, GiB × price per GiB-month;
//! - storage dollars per month = the collection's total footprint, GiB × price per GiB-month.
//!
//! A figure whose price or measurement is missing is absent, never zero. docs/metrics.md has
//! the formulas; `cost.csv` every setting's figures; the page and report.md rank, at each
//! recall level, each engine's cheapest setting by dollars per million queries.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Group, SearchPoint, slug};
use crate::export::ExportError;

/// Bytes in a GiB, the unit memory and storage are priced in.
const GIB: f64 = (1u64 << 30) as f64;
/// Bytes in the MB (MiB) the memory figures are kept in.
const MIB: f64 = (1u64 << 20) as f64;

/// The prices of one engine's machine (USD). Each may be absent: its figure then is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// The machine, per hour.
    pub per_hour: Option<f64>,
    /// Memory, per GiB and month.
    pub ram_gib_month: Option<f64>,
    /// Storage, per GiB and month.
    pub storage_gib_month: Option<f64>,
}

impl Price {
    /// `self`'s prices, and `fallback`'s where `self` has none.
    fn or(self, fallback: Price) -> Price {
        Price {
            per_hour: self.per_hour.or(fallback.per_hour),
            ram_gib_month: self.ram_gib_month.or(fallback.ram_gib_month),
            storage_gib_month: self.storage_gib_month.or(fallback.storage_gib_month),
        }
    }

    fn is_empty(&self) -> bool {
        *self == Price::default()
    }
}

/// The prices of a report: one for every engine, and any engine's own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices {
    pub default: Price,
    /// By engine name (`[engine.pgvector]`).
    pub engine: BTreeMap<String, Price>,
}

/// A prices file as written: the default prices at the top, an engine's in its table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PricesFile {
    per_hour: Option<f64>,
    ram_gib_month: Option<f64>,
    storage_gib_month: Option<f64>,
    #[serde(default)]
    engine: BTreeMap<String, Price>,
}

#[derive(Debug, thiserror::Error)]
pub enum PricesError {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{what} must be a price in USD of zero or more, not {value}")]
    Invalid { what: String, value: f64 },
}

impl Prices {
    /// Reads a prices file (TOML: `per_hour`, `ram_gib_month`, `storage_gib_month` at the top
    /// for every engine, and in `[engine.NAME]` tables for one).
    pub fn load(path: &Path) -> Result<Prices, PricesError> {
        let text = std::fs::read_to_string(path).map_err(|source| PricesError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Prices::parse(&text).map_err(|e| match e {
            PricesError::Parse { message, .. } => PricesError::Parse {
                path: path.to_path_buf(),
                message,
            },
            other => other,
        })
    }

    /// Prices from a prices file's text.
    pub fn parse(text: &str) -> Result<Prices, PricesError> {
        let file: PricesFile = toml::from_str(text).map_err(|e| PricesError::Parse {
            path: PathBuf::new(),
            message: e.message().to_string(),
        })?;
        let prices = Prices {
            default: Price {
                per_hour: file.per_hour,
                ram_gib_month: file.ram_gib_month,
                storage_gib_month: file.storage_gib_month,
            },
            engine: file.engine,
        };
        prices.check()?;
        Ok(prices)
    }

    /// The file's prices with the ones given as options in their place.
    pub fn with_defaults(mut self, given: Price) -> Result<Prices, PricesError> {
        self.default = given.or(self.default);
        self.check()?;
        Ok(self)
    }

    /// Whether any price was given at all.
    pub fn is_empty(&self) -> bool {
        self.default.is_empty() && self.engine.values().all(Price::is_empty)
    }

    fn check(&self) -> Result<(), PricesError> {
        let named = std::iter::once(("", &self.default))
            .chain(self.engine.iter().map(|(n, p)| (n.as_str(), p)));
        for (engine, p) in named {
            for (key, value) in [
                ("per_hour", p.per_hour),
                ("ram_gib_month", p.ram_gib_month),
                ("storage_gib_month", p.storage_gib_month),
            ] {
                if let Some(v) = value.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                    let what = if engine.is_empty() {
                        key.to_string()
                    } else {
                        format!("engine.{engine}.{key}")
                    };
                    return Err(PricesError::Invalid { what, value: v });
                }
            }
        }
        Ok(())
    }

    /// The prices of an engine's series (`bm25 sparse` is priced as `bm25`).
    pub fn of(&self, series: &str) -> Price {
        let engine = series.split(' ').next().unwrap_or(series);
        self.engine
            .get(series)
            .or_else(|| self.engine.get(engine))
            .copied()
            .unwrap_or_default()
            .or(self.default)
    }
}

/// A setting's cost figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    pub usd_per_million_queries: Option<f64>,
    pub memory_usd_month: Option<f64>,
    pub storage_usd_month: Option<f64>,
}

/// Dollars per million queries at `qps` on a machine of `per_hour`.
pub fn usd_per_million_queries(per_hour: f64, qps: f64) -> Option<f64> {
    (qps.is_finite() && qps > 0.0).then(|| per_hour / (qps * 3600.0) * 1e6)
}

/// The cost of one setting at `price`.
pub fn cost(p: &SearchPoint<'_>, price: Price) -> Cost {
    Cost {
        usd_per_million_queries: price
            .per_hour
            .and_then(|h| usd_per_million_queries(h, p.qps)),
        memory_usd_month: price
            .ram_gib_month
            .zip(p.memory)
            .map(|(gib_month, m)| m.mb * MIB / GIB * gib_month),
        storage_usd_month: price
            .storage_gib_month
            .zip(p.total_bytes)
            .map(|(gib_month, bytes)| bytes as f64 / GIB * gib_month),
    }
}

/// An engine at one recall level: its cheapest setting that reaches it.
pub struct Cheapest<'a> {
    pub level: f64,
    pub engine: &'a str,
    pub best: Option<(&'a SearchPoint<'a>, Cost)>,
    pub max_recall: Option<f64>,
}

/// Per recall level, each engine's cheapest measured setting: with one price per engine, its
/// fastest, so the rows are [`super::ranking::ranking`]'s, priced and ordered by USD per
/// million queries (engines without a price for queries after those with one, then those
/// that never reach the level).
pub fn ranking<'a>(group: &'a Group<'a>, prices: &Prices) -> Vec<Cheapest<'a>> {
    let mut rows: Vec<Cheapest<'a>> = super::ranking::ranking(group)
        .into_iter()
        .map(|r| Cheapest {
            level: r.level,
            engine: r.engine,
            best: r.best.map(|p| (p, cost(p, prices.of(r.engine)))),
            max_recall: r.max_recall,
        })
        .collect();
    let key = |r: &Cheapest| match r.best {
        Some((_, c)) => (0, c.usd_per_million_queries.unwrap_or(f64::INFINITY)),
        None => (1, -super::ranking::unreached_key(r.max_recall)),
    };
    // Stable: the levels stay in their order, and within one the cheapest comes first.
    rows.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        a.level
            .total_cmp(&b.level)
            .then(ka.0.cmp(&kb.0))
            .then(ka.1.total_cmp(&kb.1))
    });
    rows
}

/// The ranking's columns.
pub const HEADER: [&str; 9] = [
    "recall ≥",
    "rank",
    "engine",
    "USD per 1M queries",
    "QPS",
    "recall",
    "setting",
    "memory USD/month",
    "storage USD/month",
];

/// A dollar figure: four significant digits, `-` when absent.
pub fn usd(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) if v > 0.0 => format!("{v:.*}", (3 - v.log10().floor() as i32).max(0) as usize),
        Some(v) => format!("{v}"),
        None => "-".into(),
    }
}

/// The ranking as table cells.
pub fn cells(rows: &[Cheapest<'_>]) -> Vec<Vec<String>> {
    super::ranking::level_rows(
        rows,
        HEADER.len(),
        |r| (r.level, r.engine, r.max_recall),
        |r| {
            r.best.map(|(p, c)| {
                vec![
                    usd(c.usd_per_million_queries),
                    format!("{:.0}", p.qps),
                    format!("{:.4}", p.recall),
                    p.setting.clone(),
                    usd(c.memory_usd_month),
                    usd(c.storage_usd_month),
                ]
            })
        },
    )
}

/// The prices a group's cost figures were made with, as one sentence.
pub fn describe(prices: &Prices) -> String {
    let one = |p: &Price| {
        let parts: Vec<String> = [
            p.per_hour.map(|v| format!("{v} USD per hour")),
            p.ram_gib_month
                .map(|v| format!("{v} USD per GiB of memory a month")),
            p.storage_gib_month
                .map(|v| format!("{v} USD per GiB of storage a month")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() {
            "no price".to_string()
        } else {
            parts.join(", ")
        }
    };
    let mut text = format!("Prices: {}", one(&prices.default));
    for (engine, p) in &prices.engine {
        text.push_str(&format!("; {engine}: {}", one(&p.or(prices.default))));
    }
    text.push_str(
        ". A month is 730 hours. Memory is the engine's once built (an in-process engine's is \
         the ragdbeval process's); storage is the collection's total footprint.",
    );
    text
}

/// The HTML id of a dataset's cost ranking.
pub fn html_id(group: &Group<'_>) -> String {
    format!("cost-{}", slug(group.dataset))
}

/// `cost.csv`: every search right after a build, of every dataset, with its cost figures
/// (empty where a price or a measurement is missing).
pub fn csv(groups: &[Group<'_>], prices: &Prices) -> Result<String, ExportError> {
    let figure = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    let records = groups.iter().flat_map(|g| {
        g.points.iter().filter(|p| p.after_build).map(move |p| {
            let price = prices.of(&p.engine);
            let c = cost(p, price);
            vec![
                g.dataset.to_string(),
                p.run.clone(),
                p.engine.clone(),
                p.setting.clone(),
                p.search.runbook_step.to_string(),
                p.recall.to_string(),
                p.qps.to_string(),
                figure(price.per_hour),
                figure(c.usd_per_million_queries),
                figure(p.memory.map(|m| m.mb)),
                figure(price.ram_gib_month),
                figure(c.memory_usd_month),
                p.total_bytes.map_or_else(String::new, |b| b.to_string()),
                figure(price.storage_gib_month),
                figure(c.storage_usd_month),
            ]
        })
    });
    crate::export::csv_text("cost.csv", &CSV_HEADER, records)
}

const CSV_HEADER: [&str; 15] = [
    "dataset",
    "run",
    "engine",
    "setting",
    "runbook_step",
    "recall",
    "qps",
    "usd_per_hour",
    "usd_per_million_queries",
    "memory_mb",
    "usd_per_gib_month_memory",
    "memory_usd_per_month",
    "total_bytes",
    "usd_per_gib_month_storage",
    "storage_usd_per_month",
];

/// The group's cost ranking as Markdown, after the sentence naming the prices.
pub fn markdown(group: &Group<'_>, prices: &Prices) -> String {
    let mut out = format!(
        "Cost: each engine's cheapest measured setting at each recall level. {}\n\n| {} |\n|{}\n",
        describe(prices),
        HEADER.join(" | "),
        "---|".repeat(HEADER.len())
    );
    for r in cells(&ranking(group, prices)) {
        out.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_million_queries_at_1000_qps_on_a_dollar_an_hour() {
        // 10⁶ queries take 1000 s: 1000/3600 of a dollar.
        let c = usd_per_million_queries(1.0, 1000.0).unwrap();
        assert!((c - 0.277_777_777_777_777_8).abs() < 1e-15, "{c}");
        assert_eq!(usd_per_million_queries(1.0, 0.0), None);
        assert_eq!(usd_per_million_queries(1.0, f64::NAN), None);
    }

    #[test]
    fn an_engine_price_falls_back_to_the_default_field_by_field() {
        let prices = Prices::parse(
            "per_hour = 0.5\nram_gib_month = 4.0\n[engine.pgvector]\nper_hour = 1.25\n",
        )
        .unwrap();
        let pg = prices.of("pgvector");
        assert_eq!(pg.per_hour, Some(1.25));
        assert_eq!(pg.ram_gib_month, Some(4.0));
        assert_eq!(pg.storage_gib_month, None);
        assert_eq!(prices.of("bm25 sparse").per_hour, Some(0.5));
        let given = Price {
            per_hour: Some(2.0),
            ..Price::default()
        };
        let both = prices.with_defaults(given).unwrap();
        assert_eq!(both.of("exact").per_hour, Some(2.0));
        assert_eq!(both.of("pgvector").per_hour, Some(1.25));
    }

    #[test]
    fn bad_prices_are_refused_by_name() {
        let e = Prices::parse("[engine.redis]\nper_hour = -1.0\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("engine.redis.per_hour") && e.contains("-1"),
            "{e}"
        );
        let e = Prices::parse("per_hours = 1.0\n").unwrap_err().to_string();
        assert!(e.contains("per_hours"), "{e}");
    }

    #[test]
    fn dollar_figures_keep_four_digits() {
        assert_eq!(usd(Some(0.277_777)), "0.2778");
        assert_eq!(usd(Some(12.345_67)), "12.35");
        assert_eq!(usd(Some(1234.5)), "1234");
        assert_eq!(usd(Some(0.0)), "0");
        assert_eq!(usd(None), "-");
    }
}
