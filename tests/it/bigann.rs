//! big-ann-benchmarks binary directories (`.fbin`, `.u8bin`, `.i8bin`, `.ibin`): written by
//! `dataset convert`, loaded back with the same vectors and truth, `--limit` and
//! `--max-queries` on them, `bench` end to end, and malformed files refused with one line.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{files_in, ragdbeval, stderr, stdout};
use ragdbeval::dataset::{self, Dataset, GroundTruthSource, LoadOptions, hdf5};
use ragdbeval::distance::Distance;
use ragdbeval::results::RunResult;
use ragdbeval::types::ElementType;
use ragdbeval::vectors::Vectors;

const GENERATED: &str = "gen:clustered:n=1500,dim=12,queries=30,seed=9";

fn load(spec: &str, limit: Option<usize>, max_queries: Option<usize>) -> Dataset {
    let opts = LoadOptions {
        gt_k: 20,
        limit,
        max_queries,
        ..LoadOptions::default()
    };
    dataset::load(spec, &opts).unwrap()
}

fn convert(cwd: &Path, args: &[&str]) -> Output {
    let mut all = vec!["dataset", "convert", "-q", "-k", "20"];
    all.extend_from_slice(args);
    ragdbeval(cwd, &all)
}

/// Runs `dataset convert` and expects it to succeed.
fn converted(cwd: &Path, source: &str, to: &str, out: &Path) {
    let done = convert(
        cwd,
        &["--dataset", source, "--to", to, "--out", path_str(out)],
    );
    assert!(done.status.success(), "{}", stderr(&done));
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A dataset whose components are all integers in 0..=255, as an HDF5 file with exact truth.
fn integer_dataset(path: &Path) -> Dataset {
    let mut state = 7u64;
    let mut next = || {
        // A plain LCG: the values only need to be spread over 0..=255.
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) % 256) as f32
    };
    let train = Vectors::new((0..800 * 8).map(|_| next()).collect(), 8).unwrap();
    let test = Vectors::new((0..25 * 8).map(|_| next()).collect(), 8).unwrap();
    let truth = dataset::compute_ground_truth(
        &train,
        &test,
        Distance::Euclidean,
        20,
        &ragdbeval::types::Silent,
    )
    .unwrap();
    hdf5::write(path, Distance::Euclidean, &train, &test, &truth).unwrap();
    load(path_str(path), None, None)
}

fn same_dataset(back: &Dataset, original: &Dataset) {
    assert_eq!(*back.train, *original.train);
    assert_eq!(back.test, original.test);
    assert_eq!(back.ground_truth_source, GroundTruthSource::File);
    assert_eq!(back.ground_truth, original.ground_truth, "same exact truth");
}

#[test]
fn fbin_and_u8bin_round_trips_keep_vectors_and_exact_truth() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    let fbin = d.join("gen-fbin");
    converted(d, GENERATED, "fbin", &fbin);
    let mut names: Vec<String> = files_in(&fbin)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["base.fbin", "gt.ibin", "query.fbin"]);
    // 8-byte header, then n × d f32.
    assert_eq!(
        std::fs::metadata(fbin.join("base.fbin")).unwrap().len(),
        8 + 1500 * 12 * 4
    );
    let back = load(path_str(&fbin), None, None);
    same_dataset(&back, &load(GENERATED, None, None));
    assert!(back.warnings.is_empty(), "{:?}", back.warnings);

    let h5 = d.join("ints.hdf5");
    let ints = integer_dataset(&h5);
    let u8dir = d.join("ints-u8");
    converted(d, path_str(&h5), "u8bin", &u8dir);
    assert_eq!(
        std::fs::metadata(u8dir.join("base.u8bin")).unwrap().len(),
        8 + 800 * 8
    );
    let back = load(path_str(&u8dir), None, None);
    same_dataset(&back, &ints);
    // The type is the file's; the values, held as f32, are exact: nothing to warn about.
    assert_eq!(back.element_type, ElementType::Uint8);
    assert!(back.warnings.is_empty(), "{:?}", back.warnings);
    assert_eq!(ints.element_type, ElementType::Float32, "an f32 HDF5 file");

    // And back to HDF5: the same dataset again.
    let again = d.join("again.hdf5");
    converted(d, path_str(&u8dir), "hdf5", &again);
    same_dataset(&load(path_str(&again), None, None), &ints);

    // `dataset info` names the format, types, shapes, sizes and hashes.
    let out = ragdbeval(d, &["dataset", "info", path_str(&u8dir)]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("big-ann-benchmarks"), "{text}");
    assert!(
        text.contains("base.u8bin  uint8  800 × 8  6408 bytes"),
        "{text}"
    );
    assert!(text.contains("25 queries, depth 20"), "{text}");
    assert!(
        text.contains("element type:  uint8 (held as f32 in memory: every value exact)"),
        "{text}"
    );
    assert!(!text.contains("warning:"), "{text}");
    assert_eq!(text.matches("bytes  sha256 ").count(), 3, "{text}");
}

#[test]
fn limit_and_max_queries_read_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let set = d.join("set");
    converted(d, GENERATED, "fbin", &set);
    let full = load(GENERATED, None, None);

    // Fewer queries: the stored truth is kept, cut to them.
    let few = load(path_str(&set), None, Some(7));
    assert_eq!(few.test.len(), 7);
    assert_eq!(few.test.as_flat(), &full.test.as_flat()[..7 * 12]);
    assert_eq!(few.ground_truth_source, GroundTruthSource::File);
    assert_eq!(few.ground_truth.ids, full.ground_truth.ids[..7 * 20]);

    // Fewer base rows: the prefix, and the truth recomputed for it.
    let prefix = load(path_str(&set), Some(400), Some(7));
    assert_eq!(prefix.train.len(), 400);
    assert_eq!(prefix.train.as_flat(), &full.train.as_flat()[..400 * 12]);
    assert_eq!(prefix.ground_truth_source, GroundTruthSource::Computed);
    assert_eq!(
        prefix.ground_truth,
        load(GENERATED, Some(400), Some(7)).ground_truth
    );
    assert!(prefix.ground_truth.ids.iter().all(|&id| id < 400));

    // A NaN in the last base row: the whole file is refused, but a prefix without it loads,
    // because the rows past --limit are never read (validation would see them otherwise).
    let base = set.join("base.fbin");
    let mut bytes = std::fs::read(&base).unwrap();
    let last = bytes.len() - 4;
    bytes[last..].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(&base, bytes).unwrap();
    let opts = LoadOptions {
        gt_k: 20,
        ..LoadOptions::default()
    };
    let err = dataset::load(path_str(&set), &opts)
        .unwrap_err()
        .to_string();
    assert!(err.contains("vector 1499 has a non-finite value"), "{err}");
    assert_eq!(load(path_str(&set), Some(1499), None).train.len(), 1499);

    // A limit above the file is refused with the file's row count.
    let out = ragdbeval(
        d,
        &argv![
            "dataset convert -q --dataset",
            path_str(&set),
            "--limit 1501 --to fbin --out x"
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--limit 1501 is larger than the train set (1500"),
        "{}",
        stderr(&out)
    );
    assert!(!d.join("x").exists());
}

#[test]
fn bench_exact_on_a_bigann_directory_has_recall_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let h5 = d.join("ints.hdf5");
    integer_dataset(&h5);
    let set = d.join("ints-u8");
    converted(d, path_str(&h5), "u8bin", &set);
    let out = ragdbeval(
        d,
        &argv![
            "bench --db exact -q --warmup 0 --runbook build-search --dataset",
            path_str(&set),
            "--name u8"
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let result = d.join("results/u8.json");
    let r = RunResult::load(&result).unwrap();
    let search = r.configs[0].searches().next().unwrap();
    assert_eq!(search.quality.recall, 1.0);
    let types = r.element_type.expect("element types recorded");
    assert_eq!(types.dataset, "uint8");
    assert_eq!(
        types.engine.as_deref(),
        Some("uint8"),
        "exact keeps the values"
    );
}

/// Runs `args`, expects the failure contract: exit 2, one `error:` line, no panic; returns it.
fn fails(cwd: &Path, args: &[&str]) -> String {
    let out = ragdbeval(cwd, args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.starts_with("error: "), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// A valid big-ann directory of float vectors (base 50 × 4, 5 queries, truth k = 3).
fn valid_set(root: &Path, name: &str) -> PathBuf {
    let set = root.join(name);
    let out = ragdbeval(
        root,
        &argv![
            "dataset convert -q -k 3 --dataset gen:uniform:n=50,dim=4,queries=5,seed=1 --to fbin --out",
            path_str(&set)
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    set
}

/// Every way to use a broken directory: bench (no result left), convert (no output left),
/// info.
fn refused_everywhere(root: &Path, set: &Path, wants: &[&str]) {
    let out = root.join("out");
    for args in [
        vec!["bench", "--db", "exact", "-q", "--dataset", path_str(set)],
        vec![
            "dataset",
            "convert",
            "-q",
            "--dataset",
            path_str(set),
            "--to",
            "hdf5",
            "--out",
            path_str(&out),
        ],
        vec!["dataset", "info", path_str(set)],
    ] {
        let err = fails(root, &args);
        for want in wants {
            assert!(err.contains(want), "{args:?}: `{want}` missing from {err}");
        }
        assert!(files_in(&root.join("results")).is_empty());
        assert!(!out.exists());
    }
}

fn patch(path: &Path, offset: usize, value: u32) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_truncated_fbin_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let set = valid_set(dir.path(), "truncated");
    let base = set.join("base.fbin");
    let bytes = std::fs::read(&base).unwrap();
    std::fs::write(&base, &bytes[..bytes.len() - 5]).unwrap();
    refused_everywhere(
        dir.path(),
        &set,
        &[
            "base.fbin",
            "50 rows × 4 dimensions",
            "808 bytes",
            "803 bytes",
            "truncated",
        ],
    );
}

#[test]
fn a_header_claiming_more_rows_than_the_file_holds_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let set = valid_set(dir.path(), "claims");
    // 4 billion rows claimed: refused from the size alone, nothing allocated.
    patch(&set.join("query.fbin"), 0, 4_000_000_000);
    refused_everywhere(
        dir.path(),
        &set,
        &["query.fbin", "4000000000 rows × 4 dimensions", "88 bytes"],
    );
}

#[test]
fn ground_truth_whose_k_disagrees_with_its_size_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let set = valid_set(dir.path(), "gt");
    patch(&set.join("gt.ibin"), 4, 5);
    refused_everywhere(
        dir.path(),
        &set,
        &[
            "gt.ibin",
            "k = 5",
            "208 bytes",
            "but the file has 128 bytes",
            "fits k = 3",
        ],
    );
}

#[test]
fn a_u8bin_with_dimension_zero_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("dim0");
    std::fs::create_dir(&set).unwrap();
    let header = |rows: u32, dim: u32| [rows.to_le_bytes(), dim.to_le_bytes()].concat();
    std::fs::write(set.join("base.u8bin"), header(10, 0)).unwrap();
    let mut query = header(1, 2);
    query.extend_from_slice(&[1, 2]);
    std::fs::write(set.join("query.u8bin"), query).unwrap();
    refused_everywhere(dir.path(), &set, &["base.u8bin", "dimension 0"]);
}

#[test]
fn an_empty_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let set = valid_set(dir.path(), "empty");
    std::fs::write(set.join("base.fbin"), b"").unwrap();
    refused_everywhere(
        dir.path(),
        &set,
        &[
            "base.fbin",
            "file of 0 bytes is shorter than the 8-byte header",
        ],
    );
}

#[test]
fn converting_non_integers_to_u8bin_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("u8");
    let err = fails(
        dir.path(),
        &argv![
            "dataset convert -q --dataset",
            GENERATED,
            "--to u8bin --out",
            path_str(&out)
        ],
    );
    assert!(
        err.contains("cannot write the base vectors as uint8: vector 0"),
        "{err}"
    );
    assert!(!out.exists());
    assert!(
        files_in(dir.path()).is_empty(),
        "{:?}",
        files_in(dir.path())
    );

    // Over an existing directory: refused, the directory untouched.
    let set = valid_set(dir.path(), "kept");
    let err = fails(
        dir.path(),
        &argv![
            "dataset convert -q --dataset",
            GENERATED,
            "--to fbin --out",
            path_str(&set)
        ],
    );
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(
        std::fs::metadata(set.join("base.fbin")).unwrap().len(),
        8 + 50 * 16
    );
}
