//! Ground truth that cannot belong to its vectors is refused, never scored against (
//! class 4): swapped `neighbors`/`distances`, float ids, duplicate ids in a row, a truth for
//! other vectors, and a damaged ground-truth cache.

use std::path::Path;

use crate::bad_input::bench_fails;
use crate::common::{ragdbeval, run_in_temp};
use ragdbeval::dataset::{self, LoadOptions, hdf5 as ds_hdf5};
use ragdbeval::distance::Distance;
use ragdbeval::groundtruth::GroundTruth;
use ragdbeval::results::RunResult;
use ragdbeval::synthetic::SyntheticSpec;

/// A small clustered dataset and its exact truth (k = 10), as a consistent file at `path`.
fn consistent_file(path: &Path) -> (dataset::Dataset, GroundTruth) {
    let spec: SyntheticSpec = "gen:clustered:n=2000,dim=16,queries=40,seed=5"
        .parse()
        .unwrap();
    let opts = LoadOptions {
        gt_k: 10,
        ..LoadOptions::default()
    };
    let ds = dataset::load(&spec.to_string(), &opts).unwrap();
    let truth = ds.ground_truth.clone();
    ds_hdf5::write(path, Distance::Euclidean, &ds.train, &ds.test, &truth).unwrap();
    (ds, truth)
}

/// Replaces the file's ground truth by `neighbors` and `distances`, `q` rows of `k`, of any
/// element type.
fn replace_truth<N: hdf5::H5Type, D: hdf5::H5Type>(
    path: &Path,
    (q, k): (usize, usize),
    neighbors: &[N],
    distances: &[D],
) {
    let file = crate::common::hdf5_open_rw(path);
    file.unlink("neighbors").unwrap();
    file.unlink("distances").unwrap();
    let neighbors_set = file.new_dataset::<N>().shape([q, k]).create("neighbors");
    neighbors_set.and_then(|d| d.write_raw(neighbors)).unwrap();
    let distances_set = file.new_dataset::<D>().shape([q, k]).create("distances");
    distances_set.and_then(|d| d.write_raw(distances)).unwrap();
    file.close().unwrap();
}

fn loads(path: &Path) {
    let (dir, out) = run_in_temp(&argv![
        "bench --db exact -q --warmup 0 --runbook build-search --dataset",
        path.to_str().unwrap(),
        "--name ok"
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = RunResult::load(&dir.path().join("results/ok.json")).unwrap();
    let recall = r.configs[0].searches().next().unwrap().quality.recall;
    assert_eq!(recall, 1.0, "exact search against a consistent truth");
}

#[test]
fn a_consistent_file_still_loads() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("good.hdf5");
    consistent_file(&p);
    loads(&p);
}

/// Swapped arrays: the floats of `distances` read as ids would be small integers in range,
/// and an approximate engine would score recall 1.000 against them.
#[test]
fn swapped_neighbors_and_distances_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("swapped.hdf5");
    let (_, truth) = consistent_file(&p);
    let (q, k) = (truth.queries(), truth.k);
    let ids: Vec<i64> = truth.ids.iter().map(|&i| i as i64).collect();
    replace_truth(&p, (q, k), &truth.distances, &ids);
    let err = bench_fails(dir.path(), &["--dataset", p.to_str().unwrap()]);
    assert!(err.contains("`neighbors` must hold integer ids"), "{err}");
    assert!(err.contains("swapped"), "{err}");
}

/// Float ids, even integral ones with fractional parts elsewhere, are not ids.
#[test]
fn float_neighbor_ids_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("floats.hdf5");
    let (_, truth) = consistent_file(&p);
    let (q, k) = (truth.queries(), truth.k);
    let ids: Vec<f64> = truth.ids.iter().map(|&i| i as f64 + 0.5).collect();
    replace_truth(&p, (q, k), &ids, &truth.distances);
    let err = bench_fails(dir.path(), &["--dataset", p.to_str().unwrap()]);
    assert!(err.contains("must hold integer ids"), "{err}");
}

#[test]
fn duplicate_ids_in_a_row_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dups.hdf5");
    let (_, truth) = consistent_file(&p);
    let (q, k) = (truth.queries(), truth.k);
    let mut ids: Vec<i64> = truth.ids.iter().map(|&i| i as i64).collect();
    ids[3 * k + 1] = ids[3 * k];
    replace_truth(&p, (q, k), &ids, &truth.distances);
    let err = bench_fails(dir.path(), &["--dataset", p.to_str().unwrap()]);
    assert!(
        err.contains("query 3 lists neighbour") && err.contains("twice"),
        "{err}"
    );
}

/// In-range, unique integer ids that are simply not the nearest: a truth for other vectors.
#[test]
fn a_truth_for_other_vectors_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("foreign.hdf5");
    let (ds, truth) = consistent_file(&p);
    let (q, k) = (truth.queries(), truth.k);
    // Shift every id: still in range and unique per row, but the wrong points.
    let n = ds.train.len() as u64;
    let ids: Vec<i64> = truth
        .ids
        .iter()
        .map(|&i| ((i + n / 2) % n) as i64)
        .collect();
    replace_truth(&p, (q, k), &ids, &truth.distances);
    let err = bench_fails(dir.path(), &["--dataset", p.to_str().unwrap()]);
    assert!(err.contains("does not belong to these vectors"), "{err}");
}

/// The truths of runbook steps are cached; a cache whose ids point outside the live set or
/// whose distances are negative is not used: the truth is recomputed and the run's recall is
/// what it was with a sound cache.
#[test]
fn a_damaged_truth_cache_is_recomputed_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let args = argv![
        "bench --db exact -q --warmup 0 --dataset gen:clustered:n=3000,dim=16,queries=30,seed=9 --name"
    ];
    let run = |name: &str| {
        let mut a = args.to_vec();
        a.push(name);
        let out = ragdbeval(dir.path(), &a);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = RunResult::load(&dir.path().join(format!("results/{name}.json"))).unwrap();
        r.configs[0]
            .searches()
            .map(|s| s.quality.recall)
            .collect::<Vec<_>>()
    };
    let first = run("first");
    assert!(first.iter().all(|&r| r == 1.0), "{first:?}");
    let cache_dir = dir.path().join("cache/groundtruth");
    let caches: Vec<_> = std::fs::read_dir(&cache_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(caches.len(), 1, "{caches:?}");
    // Overwrite the tail of the file (distances of the last cached step) with a negative
    // distance pattern, and one id near the front of the id block with an impossible id.
    let mut bytes = std::fs::read(&caches[0]).unwrap();
    let len = bytes.len();
    for chunk in bytes[len - 64..].chunks_exact_mut(4) {
        chunk.copy_from_slice(&(-1.0f32).to_le_bytes());
    }
    std::fs::write(&caches[0], &bytes).unwrap();
    let second = run("second");
    assert_eq!(first, second, "the damaged cache was not used");
    let rewritten = std::fs::read(&caches[0]).unwrap();
    assert_ne!(
        rewritten, bytes,
        "the cache was rewritten from the recomputed truth"
    );
}

/// Two base files in a TEXMEX directory: which one is meant is not ragdbeval's guess.
#[test]
fn a_texmex_directory_with_two_base_files_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set");
    std::fs::create_dir(&set).unwrap();
    let fvecs = |rows: usize| {
        let mut out = Vec::new();
        for r in 0..rows {
            out.extend_from_slice(&2i32.to_le_bytes());
            out.extend_from_slice(&(r as f32).to_le_bytes());
            out.extend_from_slice(&1f32.to_le_bytes());
        }
        out
    };
    std::fs::write(set.join("a_base.fvecs"), fvecs(20)).unwrap();
    std::fs::write(set.join("b_base.fvecs"), fvecs(30)).unwrap();
    std::fs::write(set.join("a_query.fvecs"), fvecs(2)).unwrap();
    let err = bench_fails(dir.path(), &["--dataset", set.to_str().unwrap()]);
    assert!(err.contains("more than one base file"), "{err}");
    assert!(
        err.contains("a_base.fvecs") && err.contains("b_base.fvecs"),
        "{err}"
    );
}

/// A `distance` attribute of the wrong type is said to have the wrong type, not to be missing.
#[test]
fn a_distance_attribute_of_the_wrong_type_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("attr.hdf5");
    consistent_file(&p);
    let file = crate::common::hdf5_open_rw(&p);
    file.delete_attr("distance").unwrap();
    file.new_attr::<i64>()
        .shape(())
        .create("distance")
        .unwrap()
        .write_scalar(&3i64)
        .unwrap();
    file.close().unwrap();
    let err = bench_fails(dir.path(), &["--dataset", p.to_str().unwrap()]);
    assert!(err.contains("must be a string"), "{err}");
    assert!(!err.contains("missing"), "{err}");
}

/// Integer vectors beyond 2^24 lose precision in f32: the run says so, in the terminal and in
/// the result; integers f32 holds exactly pass without a word (class 6).
#[test]
fn int64_vectors_that_f32_rounds_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    // The consistent file with its `train` stored as int64 (components × 1000 + `offset`) and
    // no stored truth (it was computed on the floats).
    let write = |name: &str, offset: i64| {
        let p = dir.path().join(name);
        let (ds, _) = consistent_file(&p);
        let file = crate::common::hdf5_open_rw(&p);
        for array in ["train", "neighbors", "distances"] {
            file.unlink(array).unwrap();
        }
        let ints: Vec<i64> = (0..ds.train.len())
            .flat_map(|i| ds.train.row(i).to_vec())
            .map(|v| offset + (v * 1000.0).round() as i64)
            .collect();
        file.new_dataset::<i64>()
            .shape([ds.train.len(), ds.train.dim()])
            .create("train")
            .unwrap()
            .write_raw(&ints)
            .unwrap();
        file.close().unwrap();
        p
    };
    let run = |p: &Path, name: &str| {
        let out = ragdbeval(
            dir.path(),
            &argv![
                "bench --db exact --warmup 0 --runbook build-search --dataset",
                p.to_str().unwrap(),
                "--name",
                name
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        let r = RunResult::load(&dir.path().join(format!("results/{name}.json"))).unwrap();
        let warned = r
            .warnings
            .iter()
            .any(|w| w.to_string().contains("exceed 2^24"));
        (stderr, warned)
    };
    let (stderr, warned) = run(&write("exact.hdf5", 0), "exact");
    assert!(!stderr.contains("2^24") && !warned, "{stderr}");
    let (stderr, warned) = run(&write("rounded.hdf5", 1 << 40), "rounded");
    assert!(
        stderr.contains("exceed 2^24") && stderr.contains("rounded"),
        "{stderr}"
    );
    assert!(warned, "the result carries the warning");
}
