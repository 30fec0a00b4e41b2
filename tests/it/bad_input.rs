//! Bad input gets one clear error, a non-zero exit, no panic and no result file.

use std::path::Path;

use crate::common::{files_in, fixture, ragdbeval, stderr, succeeds};
use ragdbeval::dataset::hdf5;
use ragdbeval::distance::Distance;
use ragdbeval::groundtruth::GroundTruth;
use ragdbeval::vectors::Vectors;

/// Runs a bench on `dataset` and checks the failure contract; returns stderr.
pub fn bench_fails(dir: &Path, extra: &[&str]) -> String {
    let mut args = vec!["bench", "--db", "exact", "-q"];
    args.extend_from_slice(extra);
    let out = ragdbeval(dir, &args);
    let err = stderr(&out);
    assert!(!out.status.success(), "expected failure for {extra:?}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        files_in(&dir.join("results")).is_empty(),
        "result files left behind for {extra:?}: {:?}",
        files_in(&dir.join("results"))
    );
    err
}

fn gt(ids: Vec<u64>, k: usize) -> GroundTruth {
    let distances = vec![0.0; ids.len()];
    GroundTruth { k, ids, distances }
}

fn write(path: &Path, train: Vectors, test: Vectors, g: GroundTruth) {
    hdf5::write(path, Distance::Euclidean, &train, &test, &g).unwrap();
}

fn v(data: Vec<f32>, dim: usize) -> Vectors {
    Vectors::new(data, dim).unwrap()
}

#[test]
fn truncated_and_corrupt_hdf5() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture("tiny-h5py-euclidean.hdf5")).unwrap();
    let truncated = dir.path().join("truncated.hdf5");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let err = bench_fails(dir.path(), &["--dataset", truncated.to_str().unwrap()]);
    assert!(err.contains("truncated.hdf5"), "{err}");

    let corrupt = dir.path().join("corrupt.hdf5");
    std::fs::write(&corrupt, b"this is not an HDF5 file at all, just text").unwrap();
    let err = bench_fails(dir.path(), &["--dataset", corrupt.to_str().unwrap()]);
    assert!(err.contains("not a readable HDF5 file"), "{err}");
}

#[test]
fn dimension_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dims.hdf5");
    write(
        &p,
        v(vec![0.0; 40], 4),
        v(vec![0.0; 6], 3),
        gt(vec![0, 1], 1),
    );
    let err = bench_fails(dir.path(), &["--dataset", p.to_str().unwrap()]);
    assert!(
        err.contains("dimension mismatch") && err.contains('4') && err.contains('3'),
        "{err}"
    );
}

#[test]
fn neighbor_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("oor.hdf5");
    write(
        &p,
        v(vec![0.5; 40], 4),
        v(vec![0.1; 8], 4),
        gt(vec![0, 1, 2, 999], 2),
    );
    let err = bench_fails(dir.path(), &["--dataset", p.to_str().unwrap()]);
    assert!(err.contains("999") && err.contains("10 vectors"), "{err}");
}

#[test]
fn nan_and_inf_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let mut train = vec![0.5; 40];
    train[13] = f32::NAN;
    let p = dir.path().join("nan.hdf5");
    write(&p, v(train, 4), v(vec![0.1; 8], 4), gt(vec![0, 1], 1));
    let err = bench_fails(dir.path(), &["--dataset", p.to_str().unwrap()]);
    assert!(
        err.contains("train vector 3") && err.contains("NaN"),
        "{err}"
    );

    let mut test = vec![0.1; 8];
    test[5] = f32::INFINITY;
    let p = dir.path().join("inf.hdf5");
    write(&p, v(vec![0.5; 40], 4), v(test, 4), gt(vec![0, 1], 1));
    let err = bench_fails(dir.path(), &["--dataset", p.to_str().unwrap()]);
    assert!(
        err.contains("test vector 1") && err.contains("inf"),
        "{err}"
    );
}

/// A zero vector has no angular distance: rejected under `angular`, accepted otherwise.
#[test]
fn zero_vector_under_angular() {
    let dir = tempfile::tempdir().unwrap();
    let mut train = vec![0.5; 40];
    train[8..12].copy_from_slice(&[0.0; 4]);
    let p = dir.path().join("zero.hdf5");
    // Both queries' true nearest neighbour is the zero vector (id 2), at 0.2.
    write(&p, v(train, 4), v(vec![0.1; 8], 4), gt(vec![2, 2], 1));
    let err = bench_fails(
        dir.path(),
        &["--dataset", p.to_str().unwrap(), "--distance", "angular"],
    );
    assert!(
        err.contains("train vector 2") && err.contains("zero length"),
        "{err}"
    );
    succeeds(
        dir.path(),
        &argv!["bench --db exact -q --dataset", p.to_str().unwrap(), "-k 1"],
    );
}

#[test]
fn empty_test_set() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("empty.hdf5");
    write(&p, v(vec![0.5; 40], 4), v(vec![], 4), gt(vec![], 1));
    let err = bench_fails(dir.path(), &["--dataset", p.to_str().unwrap()]);
    assert!(err.contains("test set is empty"), "{err}");
}

#[test]
fn unknown_dataset_offline_and_unknown_engine() {
    let dir = tempfile::tempdir().unwrap();
    let err = bench_fails(dir.path(), &["--dataset", "no-such-set", "--offline"]);
    assert!(
        err.contains("unknown dataset") && err.contains("dataset list"),
        "{err}"
    );
    let err = bench_fails(dir.path(), &["--dataset", "sift1m", "--offline"]);
    assert!(err.contains("sift-128-euclidean.hdf5"), "{err}");

    let out = ragdbeval(dir.path(), &["bench", "--db", "nosuchdb", "-q"]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("unknown engine `nosuchdb`") && err.contains("exact"),
        "{err}"
    );
    assert!(files_in(&dir.path().join("results")).is_empty());
}

#[test]
fn bad_parameters_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let err = bench_fails(
        dir.path(),
        &argv!["--dataset gen:uniform:n=100,dim=4,queries=5 --search-param hnsw_ef=16"],
    );
    assert!(err.contains("hnsw_ef"), "{err}");
    let err = bench_fails(
        dir.path(),
        &argv!["--dataset gen:uniform:n=100,dim=4,queries=5 --set nope"],
    );
    assert!(err.contains("no parameter set `nope`"), "{err}");
    let err = bench_fails(dir.path(), &["--dataset", "gen:bogus"]);
    assert!(err.contains("unknown kind"), "{err}");
}
