//! `dataset gt`: the exact ground truth of a dataset written with its vectors to a file, or
//! of every search step of a runbook into the ground-truth cache.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};

use crate::cli::GtArgs;
use crate::commands::bench::{load_options, resolve_runbook};
use crate::dataset::{self, Dataset, LoadOptions, hdf5};
use crate::groundtruth::GroundTruth;
use crate::output::progress;
use crate::runner::ground_truth;

pub(super) fn gt(args: GtArgs) -> anyhow::Result<ExitCode> {
    let opts = load_options(&args.source, args.k, args.quiet)?;
    if let Some(name) = &args.runbook {
        return runbook_gt(&args, name, &opts);
    }
    let Some(out) = &args.out else {
        bail!("dataset gt needs --out FILE (or --runbook to precompute a runbook's ground truth)");
    };
    if args.sparse {
        return sparse_gt(&args, out, &opts);
    }
    file_gt(&args, out, opts)
}

/// A truth in big-ann-benchmarks' layout (`n, k` as u32, int32 ids, float32 distances), its
/// padding (`PointId::MAX`) as id −1.
fn write_padded_truth(out: &Path, truth: &GroundTruth) -> anyhow::Result<()> {
    let mut bytes = Vec::with_capacity(8 + truth.ids.len() * 8);
    for v in [truth.queries(), truth.k] {
        let v = u32::try_from(v).context("more queries than the format holds")?;
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    for &id in &truth.ids {
        let id = if id == crate::engine::PointId::MAX {
            -1
        } else {
            i32::try_from(id).context("a row id beyond the format's int32")?
        };
        bytes.extend_from_slice(&id.to_le_bytes());
    }
    for d in &truth.distances {
        bytes.extend_from_slice(&d.to_le_bytes());
    }
    crate::atomic::write_atomic(out, &bytes).with_context(|| format!("writing {}", out.display()))
}

/// `dataset gt --sparse`: the exact sparse top-k, in big-ann-benchmarks' format.
fn sparse_gt(args: &GtArgs, out: &Path, opts: &LoadOptions) -> anyhow::Result<ExitCode> {
    let ds = dataset::load(&args.source.dataset, opts)?;
    let Some(lexical) = &ds.lexical else {
        bail!(
            "dataset `{}` has no sparse vectors (a `sparse/` folder with base.csr and \
             queries.csr)",
            args.source.dataset
        );
    };
    let started = std::time::Instant::now();
    let truth = crate::groundtruth::sparse::exact_sparse(&lexical.base, &lexical.queries, args.k);
    let seconds = started.elapsed().as_secs_f64();
    write_padded_truth(out, &truth)?;
    println!(
        "exact sparse top-{} of {} queries over {} rows in {seconds:.3} s: {}",
        args.k,
        lexical.queries.rows,
        lexical.base.rows,
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `dataset gt --runbook`: every search step's truth (and, with `--filter`, every filter
/// level's) computed into the cache `bench` reads.
fn runbook_gt(args: &GtArgs, name: &str, opts: &LoadOptions) -> anyhow::Result<ExitCode> {
    // Load with the dataset's own ground truth (or compute it: the build-everything step
    // uses it), then cache every search step's.
    let ds = dataset::load(&args.source.dataset, opts)?;
    let runbook = resolve_runbook(name)?;
    let steps = runbook
        .resolve_on(&ds.train)
        .with_context(|| format!("runbook `{name}`"))?;
    let cache = ground_truth::cache_path(&opts.cache_dir, &ds, &steps, args.k);
    let started = std::time::Instant::now();
    ground_truth::step_truths(
        &ds,
        &steps,
        args.k,
        Some(&cache),
        &*progress::terminal(args.quiet),
    )?;
    println!(
        "ground truth for {} search step(s) of runbook `{}` (k={}) in {:.3} s, cached at {}",
        steps
            .iter()
            .filter(|s| matches!(s, crate::runbook::Resolved::Search { .. }))
            .count(),
        runbook.name,
        args.k,
        started.elapsed().as_secs_f64(),
        cache.path.display()
    );
    if let Some(spec) =
        crate::commands::filters::spec(&crate::commands::filters::FilterOptions::of_gt(args))?
    {
        let started = std::time::Instant::now();
        let setup = spec
            .setup(&ds.train, &ds.test, ds.attributes.as_ref())
            .context("--filter")?;
        let setup_s = started.elapsed().as_secs_f64();
        let started = std::time::Instant::now();
        let truths = crate::runner::filtered_truth::filtered_truths(
            &ds,
            &steps,
            &setup,
            args.k,
            Some(&opts.cache_dir),
            &*progress::terminal(args.quiet),
        )
        .context("computing the filtered ground truth")?;
        println!(
            "filtered ground truth for {} level(s) ({}) in {:.3} s (computed in {:.3} s on {} \
             threads, the rest finding and writing its cache; attributes and predicates made \
             in {setup_s:.3} s); mean passing points per query at the first search step: {:.0}",
            setup.levels.len(),
            setup
                .levels
                .iter()
                .map(|l| l.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            started.elapsed().as_secs_f64(),
            truths.computed.as_secs_f64(),
            rayon::current_num_threads(),
            truths
                .selectivity
                .first()
                .and_then(|s| s.iter().find(|x| **x > 0.0))
                .copied()
                .unwrap_or(0.0)
                * ds.train.len() as f64
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `dataset gt --out FILE`: the dataset's vectors and exact truth written to `out`.
fn file_gt(args: &GtArgs, out: &Path, mut opts: LoadOptions) -> anyhow::Result<ExitCode> {
    opts.compute_missing_gt = false;
    // The truth reads the rows through `Vectors::strided` and the output's writer copies
    // their bytes block by block: neither needs them as one slice.
    opts.train_in_place = true;
    let loading = std::time::Instant::now();
    let ds = dataset::load(&args.source.dataset, &opts)?;
    let load_s = loading.elapsed().as_secs_f64();
    let (gt, timings) = truth_and_file(args, &ds, out)?;
    let seconds = timings.truth_s;
    println!(
        "ground truth: k={} for {} queries over {} × {} ({}) in {seconds:.3} s on {} threads",
        gt.k,
        ds.test.len(),
        ds.train.len(),
        ds.train.dim(),
        ds.distance,
        rayon::current_num_threads()
    );
    // Where a whole run's time goes, for a user comparing it with another tool's: the load,
    // the vectors' writing when it comes first, the truth, and what is left to write once the
    // truth is known (the neighbours, the file's close and rename).
    let vectors = if args.write_first {
        format!("vectors written first {:.3} s", timings.written_first_s)
    } else {
        "vectors written alongside the truth".to_string()
    };
    println!(
        "phases: load {load_s:.3} s, {vectors}, truth {seconds:.3} s, finish {:.3} s",
        timings.finish_s
    );
    println!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}

/// Seconds spent in each phase of [`truth_and_file`].
struct GtTimings {
    /// From the start until the truth starts (the vectors' writing with `--write-first`).
    written_first_s: f64,
    truth_s: f64,
    /// What is left to write once the truth is known.
    finish_s: f64,
}

/// Computes the truth of `ds` and writes it with the vectors to `out`.
fn truth_and_file(
    args: &GtArgs,
    ds: &Dataset,
    out: &Path,
) -> anyhow::Result<(GroundTruth, GtTimings)> {
    // The vectors go into the output file (and on to disk) on their own thread while the
    // truth is computed: at 200k × 128 (100 MB) the flush alone took 0.13 s when it came
    // after the truth. That thread shares the cores with the truth: through the page cache it
    // took 0.1-0.15 s of the truth's 0.55 s on a VM whose new pages are host faults (free page
    // reporting), hence O_DIRECT in `hdf5::begin_write` (now 1-3 %). `--write-first` writes
    // the vectors before the truth instead, so that the time printed is the truth's alone.
    let writing = std::time::Instant::now();
    std::thread::scope(|scope| -> anyhow::Result<_> {
        let writer = scope.spawn(|| {
            lower_thread_priority();
            hdf5::begin_write(out, ds.distance, &ds.train, &ds.test)
        });
        let writer = if args.write_first {
            Written::Before(join_writer(writer, out)?)
        } else {
            Written::Alongside(writer)
        };
        let written_first_s = writing.elapsed().as_secs_f64();
        let started = std::time::Instant::now();
        let gt = dataset::compute_ground_truth(
            &ds.train,
            &ds.test,
            ds.distance,
            args.k,
            &*progress::terminal(args.quiet),
        );
        let truth_s = started.elapsed().as_secs_f64();
        let finishing = std::time::Instant::now();
        let pending = match writer {
            Written::Before(pending) => pending,
            Written::Alongside(writer) => join_writer(writer, out)?,
        };
        let gt = gt?;
        pending.finish(&gt)?;
        let finish_s = finishing.elapsed().as_secs_f64();
        Ok((
            gt,
            GtTimings {
                written_first_s,
                truth_s,
                finish_s,
            },
        ))
    })
}

/// Where the output's vectors are when the truth starts (see `--write-first`).
enum Written<'scope> {
    /// Already in the file.
    Before(hdf5::PendingWrite),
    /// Being written on this thread while the truth is computed.
    Alongside(
        std::thread::ScopedJoinHandle<'scope, Result<hdf5::PendingWrite, dataset::DatasetError>>,
    ),
}

/// Waits for the thread writing `out`'s vectors.
fn join_writer(
    writer: std::thread::ScopedJoinHandle<'_, Result<hdf5::PendingWrite, dataset::DatasetError>>,
    out: &std::path::Path,
) -> anyhow::Result<hdf5::PendingWrite> {
    let pending = writer
        .join()
        .map_err(|_| anyhow::anyhow!("the thread writing {} panicked", out.display()))??;
    Ok(pending)
}

/// Gives the calling thread the lowest CPU priority (on Linux a thread's nice value is its
/// own; elsewhere nothing changes). The output's vectors are written beside the truth, and
/// writing them takes CPU (0.25 s through the page cache at 200k × 128 on the 2-core VM this
/// was measured on, before they were written with O_DIRECT): at equal priority that time came
/// out of the truth's threads whenever every core was busy; at nice 19 the writer runs where
/// they leave a core idle, and after.
fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid has no preconditions; setpriority only reads its arguments, and a
    // refusal (an unprivileged process may always lower its own priority) changes no value.
    unsafe {
        let tid = libc::gettid();
        let _ = libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
    }
}
