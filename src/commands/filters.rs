//! The filter options of `bench`: attributes and predicates made from them, and the exact
//! truth of every level at every search step.

use anyhow::{Context, bail};

use crate::cli::{BenchArgs, GtArgs};
use crate::dataset::Dataset;
use crate::filter::FilterSpec;
use crate::runbook::Resolved;
use crate::runner::FilterPlan;
use crate::runner::filtered_truth::filtered_truths;

/// The filter options as `bench` and `dataset gt` take them.
pub(super) struct FilterOptions<'a> {
    pub filters: &'a [String],
    pub sweep: Option<&'a str>,
    pub correlation: &'a str,
    pub seed: u64,
    pub attributes: Option<&'a std::path::Path>,
}

impl<'a> FilterOptions<'a> {
    pub fn of_bench(args: &'a BenchArgs) -> Self {
        FilterOptions {
            filters: &args.filters,
            sweep: args.filter_sweep.as_deref(),
            correlation: &args.filter_correlation,
            seed: args.filter_seed,
            attributes: args.attributes.as_deref(),
        }
    }

    pub fn of_gt(args: &'a GtArgs) -> Self {
        FilterOptions {
            filters: &args.filters,
            sweep: args.filter_sweep.as_deref(),
            correlation: &args.filter_correlation,
            seed: args.filter_seed,
            attributes: args.attributes.as_deref(),
        }
    }
}

/// Load levels cannot be filtered yet: refused rather than run unfiltered.
pub(super) fn check_bench(args: &BenchArgs) -> anyhow::Result<()> {
    if !args.filters.is_empty()
        && (!args.concurrency.is_empty() || !args.rate.is_empty() || args.rate_sweep)
    {
        bail!(
            "load levels (--concurrency, --rate, --rate-sweep) do not run filtered searches \
             yet: measure filtered search without them"
        );
    }
    Ok(())
}

/// The spec of the filter options, `None` without `--filter`.
pub(super) fn spec(args: &FilterOptions<'_>) -> anyhow::Result<Option<FilterSpec>> {
    if args.filters.is_empty() {
        if args.sweep.is_some() || args.attributes.is_some() || args.correlation != "none" {
            bail!(
                "--filter-sweep, --filter-correlation and --attributes need --filter (e.g. \
                 --filter label:0.01)"
            );
        }
        return Ok(None);
    }
    let levels = match args.sweep {
        None | Some("") => Vec::new(),
        Some(list) => list
            .split(',')
            .map(|v| {
                let x: f64 = v
                    .trim()
                    .parse()
                    .map_err(|_| anyhow::anyhow!("--filter-sweep: `{v}` is not a number"))?;
                if !(x > 0.0 && x <= 1.0) {
                    bail!("--filter-sweep: {x} is not a fraction in (0, 1]");
                }
                Ok(x)
            })
            .collect::<anyhow::Result<Vec<f64>>>()?,
    };
    Ok(Some(FilterSpec {
        filters: args.filters.to_vec(),
        sweep: args.sweep.is_some(),
        levels,
        correlation: args.correlation.to_string(),
        seed: args.seed,
        attributes: args.attributes.map(std::path::Path::to_path_buf),
    }))
}

/// Attributes, levels and their truths for `spec` on `ds`.
pub(super) fn plan(
    spec: &FilterSpec,
    ds: &Dataset,
    steps: &[Resolved],
    k: usize,
    cache_dir: &std::path::Path,
    quiet: bool,
) -> anyhow::Result<FilterPlan> {
    let setup = spec
        .setup(&ds.train, &ds.test, ds.attributes.as_ref())
        .context("--filter")?;
    let truths = filtered_truths(
        ds,
        steps,
        &setup,
        k,
        Some(cache_dir),
        &*crate::output::progress::terminal(quiet),
    )
    .context("computing the filtered ground truth")?;
    Ok(FilterPlan {
        setup,
        truths: truths.truths,
        selectivity: truths.selectivity,
    })
}
