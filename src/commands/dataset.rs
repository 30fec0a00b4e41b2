//! `ragdbeval dataset ...`: list, info, download, make, gt, subset, convert, qrels.

use std::process::ExitCode;

use anyhow::{Context, bail};

use super::bench::{load_options, resolve_runbook};
use crate::cli::{
    ConvertArgs, ConvertFormat, DatasetCommand, GtArgs, MakeArgs, QrelsArgs, SubsetArgs,
};
use crate::dataset::{self, Dataset, LoadOptions, bigann, download, hdf5, registry};
use crate::groundtruth::difficulty::{Difficulty, MEAN_SAMPLE_SEED};
use crate::groundtruth::{BaseSet, exact_knn};
use crate::output::progress;
use crate::runner::ground_truth;
use crate::synthetic::{SyntheticKind, SyntheticSpec};

pub fn run(cmd: DatasetCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        DatasetCommand::List { data_dir } => list(data_dir),
        DatasetCommand::Info {
            target,
            data_dir,
            k,
        } => info(&target, data_dir, k),
        DatasetCommand::Download {
            name,
            data_dir,
            quiet,
        } => {
            let known = registry::find(&name).with_context(|| {
                format!("unknown dataset `{name}`; run `ragdbeval dataset list`")
            })?;
            let cache = data_dir.unwrap_or_else(dataset::default_cache_dir);
            let dest = cache.join(known.local());
            if download::missing(known, &cache).is_empty() {
                println!("{} is already cached at {}", known.name, dest.display());
            } else {
                download::download(known, &cache, &*progress::terminal(quiet))?;
                println!("downloaded {} to {}", known.name, dest.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        DatasetCommand::Make(args) => make(args),
        DatasetCommand::Gt(args) => gt(args),
        DatasetCommand::Subset(args) => subset(args),
        DatasetCommand::Convert(args) => convert(args),
        DatasetCommand::Qrels(args) => qrels(args),
    }
}

fn list(data_dir: Option<std::path::PathBuf>) -> anyhow::Result<ExitCode> {
    let cache = data_dir.unwrap_or_else(dataset::default_cache_dir);
    println!(
        "{:<34} {:<18} {:<11} {:<7} {:>5} {:>10} {:>7} {:<9} {:<6} aliases",
        "name", "source", "format", "type", "dim", "train", "test", "distance", "cached"
    );
    for d in registry::KNOWN {
        let cached = download::missing(d, &cache).is_empty();
        println!(
            "{:<34} {:<18} {:<11} {:<7} {:>5} {:>10} {:>7} {:<9} {:<6} {}",
            d.name,
            d.layout.publisher(),
            d.layout.format(),
            d.elem.name(),
            d.dim,
            d.train,
            d.test.map_or_else(|| "?".to_string(), |t| t.to_string()),
            d.distance.as_str(),
            if cached { "yes" } else { "no" },
            d.aliases.join(", ")
        );
        if !d.note.is_empty() {
            println!("    note: {}", d.note);
        }
    }
    println!(
        "\ncache: {} (set RAGDBEVAL_DATA_DIR or --data-dir to change)",
        cache.display()
    );
    println!(
        "test `?`: not published; known once the files are read. VectorDBBench sets download \
         as a directory of Parquet files, big-ann-benchmarks sets as a directory of binary \
         files (the 1M/10M/100M ones as a prefix of the 1B file). `dataset info NAME` shows \
         an entry's URLs. type: the published component type (ragdbeval computes in f32)."
    );
    println!(
        "also: any .hdf5 path, a TEXMEX, VectorDBBench or big-ann-benchmarks directory, \
         `demo`, or \
         gen:KIND:key=value,..."
    );
    Ok(ExitCode::SUCCESS)
}

fn info(target: &str, data_dir: Option<std::path::PathBuf>, k: usize) -> anyhow::Result<ExitCode> {
    let path = std::path::Path::new(target);
    let cache = data_dir.clone().unwrap_or_else(dataset::default_cache_dir);
    if !path.exists()
        && let Some(known) = registry::find(target)
        && !print_registry_entry(known, &cache)
    {
        return Ok(ExitCode::SUCCESS);
    }
    if path.is_file() {
        let layout = hdf5::layout(path)?;
        println!("{}", path.display());
        for (name, shape, dtype) in &layout.datasets {
            println!("  dataset {name:<10} {shape:?} {dtype}");
        }
        for (name, value) in &layout.attributes {
            println!("  attr    {name:<10} {value}");
        }
    }
    if path.is_dir()
        && let Some(files) = dataset::vdbbench::find_files(path)?
    {
        println!("{}: VectorDBBench layout (Parquet)", path.display());
        for file in files.all() {
            let bytes = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
            let rows = dataset::vdbbench::row_count(file)?;
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            println!(
                "  {name:<32} {rows:>12} rows {:>10.1} MB",
                bytes as f64 / 1e6
            );
        }
    }
    if path.is_dir()
        && let Some(files) = bigann::find_files(path)?
    {
        print_bigann_files(path, &files)?;
    }
    let opts = LoadOptions {
        cache_dir: data_dir.unwrap_or_else(dataset::default_cache_dir),
        offline: true,
        quiet: false,
        progress: progress::terminal(false),
        compute_missing_gt: false,
        ..LoadOptions::default()
    };
    let ds = dataset::load(target, &opts)?;
    print_summary(&ds);
    print_difficulty(&ds, k);
    Ok(ExitCode::SUCCESS)
}

/// `dataset info NAME`: the registry's facts and each file's URL and cache path. Returns
/// whether every file is cached (else there is nothing to load).
fn print_registry_entry(known: &registry::KnownDataset, cache: &std::path::Path) -> bool {
    println!(
        "{} ({}, {})",
        known.name,
        known.layout.publisher(),
        known.source()
    );
    println!(
        "  format: {}, {} components, {} × {}, {} queries, {}",
        known.layout.format(),
        known.elem.name(),
        known.train,
        known.dim,
        known
            .test
            .map_or_else(|| "? (not published)".to_string(), |t| t.to_string()),
        known.distance
    );
    if !known.note.is_empty() {
        println!("  note:   {}", known.note);
    }
    let checksum = match known.layout {
        registry::Layout::VectorDbBench { .. } => {
            "each file checked against the server's ETag (its MD5)"
        }
        _ => "none published: the SHA-256 of each downloaded file is recorded in the result",
    };
    println!("  checksum: {checksum}");
    let missing = download::missing(known, cache);
    println!("  files, in the order the dataset's SHA-256 hashes them:");
    for f in known.files() {
        let dest = cache.join(&f.local);
        let state = if dest.is_file() { "cached" } else { "missing" };
        println!("    {state:<7} {}: {}", f.role, f.fetch_hint(&dest));
        if dest.is_file() && dest.extension().is_some_and(|e| e == "spmat") {
            match dataset::spmat::read_header(&dest) {
                Ok((rows, cols, nnz)) => println!(
                    "            {rows} rows × {cols} tags, {nnz} entries (header checked \
                     against the file size; not used by --filter)"
                ),
                Err(e) => println!("            unreadable: {e}"),
            }
        }
    }
    if !missing.is_empty() {
        println!(
            "not cached: `ragdbeval dataset download {}` fetches {} file(s)",
            known.name,
            missing.len()
        );
    }
    missing.is_empty()
}

/// The distribution of the queries' RC and LID at `k` (defined values only; undefined ones
/// are counted).
fn print_difficulty(ds: &Dataset, k: usize) {
    // Without a stored truth (a generated set, a TEXMEX directory without one) the exact
    // top-k is computed here: the figures need nothing deeper.
    let computed;
    let truth = if ds.ground_truth.queries() == 0 {
        computed = exact_knn(
            &BaseSet {
                vectors: ds.train.as_flat(),
                ids: None,
                dim: ds.train.dim(),
            },
            ds.test.as_flat(),
            ds.distance,
            k,
            &|_| {},
        );
        println!("difficulty:    exact top-{k} computed for it (no stored ground truth)");
        &computed
    } else {
        &ds.ground_truth
    };
    let difficulty = Difficulty::compute(&ds.train, &ds.test, ds.distance, truth, k);
    let depth = if k > truth.k {
        format!(" (truth depth {}: k-th = deepest)", truth.k)
    } else {
        String::new()
    };
    println!(
        "difficulty at k = {k}{depth}, mean distance over {} base points{}:",
        difficulty.mean_over,
        if difficulty.mean_over < ds.train.len() {
            format!(" (sample, seed {MEAN_SAMPLE_SEED:#x})")
        } else {
            String::new()
        }
    );
    println!(
        "  {:<4} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9}",
        "", "mean", "min", "p25", "median", "p75", "max", "undefined"
    );
    for (name, d) in [("RC", difficulty.rc()), ("LID", difficulty.lid())] {
        println!(
            "  {name:<4} {:>10.4} {:>10.4} {:>10.4} {:>10.4} {:>10.4} {:>10.4} {:>9}",
            d.mean, d.min, d.p25, d.median, d.p75, d.max, d.undefined
        );
    }
}

fn print_summary(ds: &Dataset) {
    println!("name:          {}", ds.name);
    println!("train:         {} × {}", ds.train.len(), ds.train.dim());
    println!("test:          {}", ds.test.len());
    println!("distance:      {}", ds.distance);
    println!(
        "element type:  {}{}",
        ds.element_type,
        if ds.element_type == crate::types::ElementType::Float32 {
            ""
        } else {
            " (held as f32 in memory: every value exact)"
        }
    );
    println!(
        "ground truth:  depth {} ({:?})",
        ds.ground_truth.k, ds.ground_truth_source
    );
    println!("sha256:        {}", ds.sha256);
    if ds.files.len() > 1 {
        println!(
            "files:         (path, bytes, SHA-256; the SHA-256 above hashes these hex digests \
             concatenated in this order)"
        );
        for f in &ds.files {
            println!("  {}  {}  {}", f.path, f.bytes, f.sha256);
        }
    }
    for warning in &ds.warnings {
        println!("warning:       {warning}");
    }
}

/// `dataset info` of a big-ann directory: each file's role, type, shape, size and SHA-256,
/// from its checked header (the rows are read by the load that follows).
fn print_bigann_files(dir: &std::path::Path, files: &bigann::BigannFiles) -> anyhow::Result<()> {
    println!("{}", dir.display());
    println!("  format: big-ann-benchmarks binary (no metric stored: euclidean unless --distance)");
    for (role, path, elem) in files.roles() {
        let header = bigann::read_file_header(path, elem)?;
        let bytes = std::fs::metadata(path)
            .with_context(|| path.display().to_string())?
            .len();
        let sha256 = dataset::file_sha256(path, &crate::types::Silent)?;
        let (kind, shape) = match elem {
            Some(elem) => (
                elem.name().to_string(),
                format!("{} × {}", header.rows, header.cols),
            ),
            None => (
                "int32 ids + float32 distances".to_string(),
                format!("{} queries, depth {}", header.rows, header.cols),
            ),
        };
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        println!("  {role:<12} {name}  {kind}  {shape}  {bytes} bytes  sha256 {sha256}");
    }
    Ok(())
}

fn make(args: MakeArgs) -> anyhow::Result<ExitCode> {
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

fn gt(args: GtArgs) -> anyhow::Result<ExitCode> {
    let mut opts = load_options(&args.source, args.k, args.quiet)?;
    if let Some(name) = &args.runbook {
        // Load with the dataset's own ground truth (or compute it: the build-everything step
        // uses it), then cache every search step's.
        let ds = dataset::load(&args.source.dataset, &opts)?;
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
        if let Some(spec) = super::filters::spec(&super::filters::FilterOptions::of_gt(&args))? {
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
        return Ok(ExitCode::SUCCESS);
    }
    let Some(out) = &args.out else {
        bail!("dataset gt needs --out FILE (or --runbook to precompute a runbook's ground truth)");
    };
    opts.compute_missing_gt = false;
    // The truth reads the rows through `Vectors::strided` and the output's writer copies
    // their bytes block by block: neither needs them as one slice.
    opts.train_in_place = true;
    let loading = std::time::Instant::now();
    let ds = dataset::load(&args.source.dataset, &opts)?;
    let load_s = loading.elapsed().as_secs_f64();
    // The vectors go into the output file (and on to disk) on their own thread while the
    // truth is computed: at 200k × 128 (100 MB) the flush alone took 0.13 s when it came
    // after the truth. That thread shares the cores with the truth: through the page cache it
    // took 0.1-0.15 s of the truth's 0.55 s on a VM whose new pages are host faults (free page
    // reporting), hence O_DIRECT in `hdf5::begin_write` (now 1-3 %). `--write-first` writes
    // the vectors before the truth instead, so that the time printed is the truth's alone.
    let writing = std::time::Instant::now();
    let (gt, seconds, (written_first_s, finish_s)) =
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
            let seconds = started.elapsed().as_secs_f64();
            let finishing = std::time::Instant::now();
            let pending = match writer {
                Written::Before(pending) => pending,
                Written::Alongside(writer) => join_writer(writer, out)?,
            };
            let gt = gt?;
            pending.finish(&gt)?;
            let finish_s = finishing.elapsed().as_secs_f64();
            Ok((gt, seconds, (written_first_s, finish_s)))
        })?;
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
        format!("vectors written first {written_first_s:.3} s")
    } else {
        "vectors written alongside the truth".to_string()
    };
    println!("phases: load {load_s:.3} s, {vectors}, truth {seconds:.3} s, finish {finish_s:.3} s");
    println!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
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

/// The deepest ground truth ragdbeval computes (as `bench` and `dataset gt`).
const MAX_QRELS_K: usize = 1000;

/// `dataset qrels`: the dataset's exact ground truth (loaded or computed as `bench` does,
/// so the truth a `--runbook build-search` run is scored against) as TREC qrels.
fn qrels(args: QrelsArgs) -> anyhow::Result<ExitCode> {
    if args.k > MAX_QRELS_K {
        bail!(
            "-k {} is above {MAX_QRELS_K}, the deepest ground truth ragdbeval computes",
            args.k
        );
    }
    // Before the ground truth is computed, not after.
    crate::export::trec::check_writable(&args.out)?;
    // The depth `bench` loads and caches truths at by default (--gt-k 100), so that both
    // share the dataset's computed truth and the runbook's cached step truths.
    let depth = args.k.clamp(100, MAX_QRELS_K);
    let opts = load_options(&args.source, depth, args.quiet)?;
    let ds = dataset::load(&args.source.dataset, &opts)
        .with_context(|| format!("loading dataset `{}`", args.source.dataset))?;
    if let Some(name) = &args.runbook {
        return runbook_qrels(&args, name, &ds, &opts, depth);
    }
    if ds.ground_truth.k < args.k {
        bail!(
            "the dataset's ground truth has depth {} but -k asks for {}; recompute it with \
             `ragdbeval dataset gt --dataset {} -k {} --out FILE`",
            ds.ground_truth.k,
            args.k,
            args.source.dataset,
            args.k
        );
    }
    let lines = crate::export::trec::write_qrels_file(&args.out, &ds.ground_truth, args.k)?;
    println!(
        "qrels: the {} nearest neighbours of {} queries of {} ({lines} judgments), wrote {}",
        args.k,
        ds.test.len(),
        ds.name,
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `dataset qrels --runbook`: the truth of each search step of the runbook (the live points
/// at that step), one qrels file each.
fn runbook_qrels(
    args: &QrelsArgs,
    name: &str,
    ds: &Dataset,
    opts: &LoadOptions,
    depth: usize,
) -> anyhow::Result<ExitCode> {
    let runbook = resolve_runbook(name)?;
    let steps = runbook
        .resolve_on(&ds.train)
        .with_context(|| format!("runbook `{name}`"))?;
    let cache = ground_truth::cache_path(&opts.cache_dir, ds, &steps, depth);
    let truths = ground_truth::step_truths(
        ds,
        &steps,
        depth,
        Some(&cache),
        &*progress::terminal(args.quiet),
    )
    .context("computing the ground truth of the runbook's search steps")?;
    let searched: Vec<(usize, &crate::groundtruth::GroundTruth)> = steps
        .iter()
        .zip(&truths)
        .enumerate()
        .filter(|(_, (step, _))| matches!(step, crate::runbook::Resolved::Search { .. }))
        .filter_map(|(i, (_, truth))| truth.as_deref().map(|t| (i + 1, t)))
        .collect();
    if searched.is_empty() {
        bail!("runbook `{name}` has no search step");
    }
    for (n, (runbook_step, truth)) in searched.iter().enumerate() {
        let path = crate::export::trec::run_path(&args.out, n + 1, searched.len() > 1);
        let lines = crate::export::trec::write_qrels_file(&path, truth, args.k)?;
        println!(
            "qrels of runbook step {runbook_step} (search {} of {}): {lines} judgments, wrote {}",
            n + 1,
            searched.len(),
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn subset(args: SubsetArgs) -> anyhow::Result<ExitCode> {
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
fn convert(args: ConvertArgs) -> anyhow::Result<ExitCode> {
    let opts = load_options(&args.source, args.k, args.quiet)?;
    let ds = dataset::load(&args.source.dataset, &opts)?;
    let elem = match args.to {
        ConvertFormat::Fbin => bigann::ElementType::F32,
        ConvertFormat::U8bin => bigann::ElementType::U8,
        ConvertFormat::I8bin => bigann::ElementType::I8,
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
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(parent).with_context(|| parent.display().to_string())?;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempdir_in(parent)
        .with_context(|| parent.display().to_string())?;
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
