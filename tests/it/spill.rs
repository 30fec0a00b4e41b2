//! Train sets too large for memory: Parquet, HDF5 and 8-bit big-ann rows decoded into a spill
//! file and memory-mapped give the same dataset as reading them into memory, a second load
//! maps the spill without decoding again, and `--limit` spills only the rows it keeps.
//! (The threshold is set to 0 bytes here, so that every train set spills.)

use std::path::{Path, PathBuf};

use ragdbeval::dataset::{self, Dataset, GroundTruthSource, LoadOptions, bigann, hdf5, vdbbench};
use ragdbeval::distance::Distance;
use ragdbeval::vectors::Vectors;

fn opts(cache: &Path, spill_above: Option<u64>, limit: Option<usize>) -> LoadOptions {
    LoadOptions {
        gt_k: 10,
        cache_dir: cache.to_path_buf(),
        spill_above,
        limit,
        ..LoadOptions::default()
    }
}

fn load(source: &Path, o: &LoadOptions) -> Dataset {
    dataset::load(source.to_str().unwrap(), o).unwrap()
}

fn spill_files(cache: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(cache.join("mapped"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// Loads `source` in memory, then spilled twice (written, then mapped again), then spilled
/// with `--limit 150`, and checks each against the in-memory load.
fn spills_like_memory(source: &Path, cache: &Path) {
    let memory = load(source, &opts(cache, None, None));
    assert!(!memory.train.is_mapped());
    assert!(spill_files(cache).is_empty(), "nothing spilled by default");

    let spilled = load(source, &opts(cache, Some(0), None));
    assert!(spilled.train.is_mapped(), "{}", source.display());
    assert_eq!(*spilled.train, *memory.train);
    assert_eq!(spilled.test, memory.test);
    assert_eq!(spilled.ground_truth, memory.ground_truth);
    assert_eq!(spilled.ground_truth_source, memory.ground_truth_source);
    assert_eq!(spilled.sha256, memory.sha256);
    let files = spill_files(cache);
    let fbin: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "fbin"))
        .collect();
    assert_eq!(fbin.len(), 1, "one spill file and its note: {files:?}");
    assert!(
        files
            .iter()
            .all(|f| !f.to_string_lossy().ends_with(".partial")),
        "{files:?}"
    );
    // The spill is a big-ann .fbin anyone can read.
    let read_back = bigann::read_vectors(fbin[0], bigann::ElementType::Float32, None).unwrap();
    assert_eq!(read_back.vectors, *memory.train);

    // A second load maps the same file: not rewritten.
    let written = std::fs::metadata(fbin[0]).unwrap().modified().unwrap();
    let again = load(source, &opts(cache, Some(0), None));
    assert!(again.train.is_mapped());
    assert_eq!(*again.train, *memory.train);
    assert_eq!(
        std::fs::metadata(fbin[0]).unwrap().modified().unwrap(),
        written
    );

    // `--limit` spills only the rows it keeps, and the truth is computed over them.
    let limited = load(source, &opts(cache, Some(0), Some(150)));
    assert!(limited.train.is_mapped());
    assert_eq!(limited.train.len(), 150);
    assert_eq!(
        limited.train.as_flat(),
        &memory.train.as_flat()[..150 * memory.train.dim()]
    );
    assert_eq!(limited.ground_truth_source, GroundTruthSource::Computed);
    let in_memory_limited = load(source, &opts(cache, None, Some(150)));
    assert_eq!(limited.ground_truth, in_memory_limited.ground_truth);
    assert_eq!(
        spill_files(cache)
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "fbin"))
            .count(),
        2
    );
}

fn generated(n: usize) -> Dataset {
    let spec = format!("gen:uniform:n={n},dim=6,queries=7,seed=3");
    dataset::load(
        &spec,
        &LoadOptions {
            gt_k: 10,
            ..LoadOptions::default()
        },
    )
    .unwrap()
}

#[test]
fn a_vectordbbench_directory_spills_to_the_same_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sift_tiny_300");
    let ds = generated(300);
    let ids: Vec<i64> = ds.ground_truth.ids.iter().map(|&i| i as i64).collect();
    vdbbench::write_dir(&dir, &ds.train, &ds.test, Some((ds.ground_truth.k, &ids))).unwrap();
    spills_like_memory(&dir, &tmp.path().join("cache"));
}

#[test]
fn an_hdf5_file_spills_to_the_same_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("tiny.hdf5");
    let ds = generated(300);
    hdf5::write(
        &path,
        Distance::Euclidean,
        &ds.train,
        &ds.test,
        &ds.ground_truth,
    )
    .unwrap();
    spills_like_memory(&path, &tmp.path().join("cache"));
}

#[test]
fn a_u8bin_base_is_widened_into_a_spill() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bytes");
    let byte = |i: usize| ((i * 37 + 11) % 256) as f32;
    let train = Vectors::new((0..300 * 8).map(byte).collect(), 8).unwrap();
    let test = Vectors::new((0..9 * 8).map(|i| byte(i * 5 + 3)).collect(), 8).unwrap();
    let truth = dataset::compute_ground_truth(
        &train,
        &test,
        Distance::Euclidean,
        10,
        &ragdbeval::types::Silent,
    )
    .unwrap();
    bigann::write_dataset(&dir, bigann::ElementType::Uint8, &train, &test, &truth).unwrap();
    spills_like_memory(&dir, &tmp.path().join("cache"));
}

#[test]
fn a_spill_that_cannot_be_written_is_one_error_naming_the_place() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sift_tiny_300");
    let ds = generated(300);
    vdbbench::write_dir(&dir, &ds.train, &ds.test, None).unwrap();
    // The cache "directory" is a file: the spill cannot be created there.
    let cache = tmp.path().join("cache");
    std::fs::write(&cache, b"not a directory").unwrap();
    let err = dataset::load(dir.to_str().unwrap(), &opts(&cache, Some(0), None))
        .unwrap_err()
        .to_string();
    assert!(err.contains("cache"), "{err}");
}
