//! `dataset make`, `dataset subset` and `dataset convert`: the subcommands that write a
//! dataset (generated, cut down or converted) in one of the layouts ragdbeval reads.

use std::process::ExitCode;

use anyhow::{Context, bail};

use crate::cli::{ConvertArgs, ConvertFormat, MakeArgs, SubsetArgs};
use crate::commands::bench::load_options;
use crate::dataset::{self, Dataset, LoadOptions, bigann, hdf5};
use crate::output::progress;
use crate::synthetic::{SyntheticKind, SyntheticSpec};

pub(super) fn make(args: MakeArgs) -> anyhow::Result<ExitCode> {
    let kind = match args.kind.as_str() {
        "uniform" => SyntheticKind::Uniform,
        "clustered" => SyntheticKind::Clustered,
        other => bail!("unknown kind `{other}`: use uniform or clustered"),
    };
    if args.n == 0 || args.dim == 0 || args.queries == 0 {
        bail!("-n, --dim and --queries must be at least 1");
    }
    let spec = SyntheticSpec {
        kind,
        n: args.n,
        queries: args.queries,
        dim: args.dim,
        distance: args.distance.parse()?,
        seed: args.seed,
        clusters: args.clusters,
        spread: SyntheticSpec::demo().spread,
        ..SyntheticSpec::demo()
    };
    let opts = LoadOptions {
        gt_k: args.k,
        quiet: args.quiet,
        progress: progress::terminal(args.quiet),
        ..LoadOptions::default()
    };
    let ds = dataset::load(&spec.to_string(), &opts)?;
    write_dataset(&ds, &args.out)
}

pub(super) fn subset(args: SubsetArgs) -> anyhow::Result<ExitCode> {
    if args.source.limit.is_none() {
        bail!("subset needs --limit N (the number of train vectors to keep)");
    }
    let opts = load_options(&args.source, args.k, args.quiet)?;
    // With --limit the loader already recomputes the ground truth for the kept vectors.
    let ds = dataset::load(&args.source.dataset, &opts)?;
    write_dataset(&ds, &args.out)
}

/// `dataset convert`: the dataset as loaded (after --limit / --max-queries, truth computed if
/// the source has none) in big-ann's or ann-benchmarks' layout.
pub(super) fn convert(args: ConvertArgs) -> anyhow::Result<ExitCode> {
    let opts = load_options(&args.source, args.k, args.quiet)?;
    let ds = dataset::load(&args.source.dataset, &opts)?;
    let elem = match args.to {
        ConvertFormat::Fbin => bigann::ElementType::Float32,
        ConvertFormat::U8bin => bigann::ElementType::Uint8,
        ConvertFormat::I8bin => bigann::ElementType::Int8,
        ConvertFormat::Hdf5 => return write_dataset(&ds, &args.out),
        ConvertFormat::Vdbbench => return write_vdbbench(&ds, &args.out),
    };
    bigann::write_dataset(&args.out, elem, &ds.train, &ds.test, &ds.ground_truth)?;
    println!(
        "wrote {} ({}: {} × {}, {} queries, ground truth depth {}; {})",
        args.out.display(),
        elem.name(),
        ds.train.len(),
        ds.train.dim(),
        ds.test.len(),
        ds.ground_truth.k,
        bigann::dataset_file_names(elem).join(", ")
    );
    Ok(ExitCode::SUCCESS)
}

/// `dataset convert --to vdbbench`: a VectorDBBench directory (`train.parquet`,
/// `test.parquet`, `neighbors.parquet`) written into a hidden temporary directory next to
/// `out` and renamed into place, so a failure leaves nothing.
fn write_vdbbench(ds: &Dataset, out: &std::path::Path) -> anyhow::Result<ExitCode> {
    if out.is_file() || std::fs::read_dir(out).is_ok_and(|mut d| d.next().is_some()) {
        bail!(
            "{}: already exists and is not an empty directory; give a new path",
            out.display()
        );
    }
    let tmp = crate::atomic::staging_dir(out).with_context(|| out.display().to_string())?;
    let ids: Vec<i64> = ds.ground_truth.ids.iter().map(|&i| i as i64).collect();
    let neighbors = (ds.ground_truth.k > 0).then_some((ds.ground_truth.k, ids.as_slice()));
    dataset::vdbbench::write_dir(tmp.path(), &ds.train, &ds.test, neighbors)?;
    let kept = tmp.keep();
    if let Err(e) = std::fs::remove_dir(out).or_else(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Ok(())
        } else {
            Err(e)
        }
    }) {
        let _ = std::fs::remove_dir_all(&kept);
        return Err(e).with_context(|| out.display().to_string());
    }
    if let Err(e) = std::fs::rename(&kept, out) {
        let _ = std::fs::remove_dir_all(&kept);
        return Err(e).with_context(|| out.display().to_string());
    }
    println!(
        "wrote {} (VectorDBBench: train.parquet {} × {}, test.parquet {} queries{})",
        out.display(),
        ds.train.len(),
        ds.train.dim(),
        ds.test.len(),
        if neighbors.is_some() {
            format!(", neighbors.parquet depth {}", ds.ground_truth.k)
        } else {
            String::new()
        }
    );
    // The files carry no metric: a reader takes it from the directory's name.
    let (inferred, _) = dataset::vdbbench::metric_of(out);
    if inferred != ds.distance {
        println!(
            "note: VectorDBBench files carry no metric and this directory's name reads as {}; \
             load it with --distance {}",
            inferred, ds.distance
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes a loaded dataset (vectors and its ground truth) in the ann-benchmarks layout.
fn write_dataset(ds: &Dataset, out: &std::path::Path) -> anyhow::Result<ExitCode> {
    hdf5::write(out, ds.distance, &ds.train, &ds.test, &ds.ground_truth)?;
    println!(
        "wrote {} ({} × {}, {} queries, ground truth depth {})",
        out.display(),
        ds.train.len(),
        ds.train.dim(),
        ds.test.len(),
        ds.ground_truth.k
    );
    Ok(ExitCode::SUCCESS)
}
