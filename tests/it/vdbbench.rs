//! VectorDBBench's Parquet layout: round trips, shards and shuffled rows, `--limit`, the
//! metric from the directory name, malformed files, and a run of the binary on one.

use std::path::Path;

use crate::common::{ragdbeval, stderr, stdout};
use ragdbeval::dataset::vdbbench::{ListData, write_dir, write_list_file};
use ragdbeval::dataset::{self, Dataset, GroundTruthSource, LoadOptions};
use ragdbeval::distance::Distance;
use ragdbeval::rng::SplitMix64;

fn opts() -> LoadOptions {
    LoadOptions {
        gt_k: 10,
        ..LoadOptions::default()
    }
}

fn generated(n: usize) -> Dataset {
    let spec = format!("gen:uniform:n={n},dim=6,queries=7,seed=3");
    dataset::load(&spec, &opts()).unwrap()
}

fn neighbour_ids(ds: &Dataset) -> Vec<i64> {
    ds.ground_truth.ids.iter().map(|&i| i as i64).collect()
}

fn load(dir: &Path) -> Result<Dataset, String> {
    dataset::load(dir.to_str().unwrap(), &opts()).map_err(|e| e.to_string())
}

#[test]
fn a_written_directory_loads_back_with_its_neighbours() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sift_tiny_300");
    let ds = generated(300);
    let ids = neighbour_ids(&ds);
    write_dir(&dir, &ds.train, &ds.test, Some((ds.ground_truth.k, &ids))).unwrap();

    let back = load(&dir).unwrap();
    assert_eq!(*back.train, *ds.train);
    assert_eq!(back.test, ds.test);
    assert_eq!(back.distance, Distance::Euclidean);
    assert_eq!(back.ground_truth_source, GroundTruthSource::File);
    assert_eq!(back.ground_truth, ds.ground_truth);
    assert!(
        back.warnings.iter().any(|w| w.contains("`sift`")),
        "{:?}",
        back.warnings
    );

    // `--limit` keeps ids 0..N and recomputes the truth over them.
    let limited = dataset::load(
        dir.to_str().unwrap(),
        &LoadOptions {
            limit: Some(120),
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(limited.train.as_flat(), &ds.train.as_flat()[..120 * 6]);
    assert_eq!(limited.ground_truth_source, GroundTruthSource::Computed);
    let err = dataset::load(
        dir.to_str().unwrap(),
        &LoadOptions {
            limit: Some(301),
            ..opts()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("--limit 301"), "{err}");
}

#[test]
fn shuffled_shards_load_to_the_same_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    // `cohere…`: VectorDBBench's metric for Cohere is cosine.
    let dir = tmp.path().join("cohere_tiny_300");
    let ds = dataset::load(
        "gen:uniform:n=300,dim=6,queries=7,seed=3,distance=angular",
        &opts(),
    )
    .unwrap();
    let mut order: Vec<usize> = (0..300).collect();
    let mut rng = SplitMix64::new(9);
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    // Three shards of shuffled rows, ids kept.
    for (s, part) in order.chunks(100).enumerate() {
        let ids: Vec<i64> = part.iter().map(|&r| r as i64).collect();
        let rows: Vec<f32> = part
            .iter()
            .flat_map(|&r| ds.train.row(r).to_vec())
            .collect();
        let path = dir.join(format!("shuffle_train-{s:02}-of-3.parquet"));
        std::fs::create_dir_all(&dir).unwrap();
        write_list_file(&path, "emb", &ids, 6, ListData::F32(&rows)).unwrap();
    }
    let test_ids: Vec<i64> = (0..7).collect();
    write_list_file(
        &dir.join("test.parquet"),
        "emb",
        &test_ids,
        6,
        ListData::F32(ds.test.as_flat()),
    )
    .unwrap();
    let ids = neighbour_ids(&ds);
    write_list_file(
        &dir.join("neighbors.parquet"),
        "neighbors_id",
        &test_ids,
        ds.ground_truth.k,
        ListData::I64(&ids),
    )
    .unwrap();

    let back = load(&dir).unwrap();
    assert_eq!(back.distance, Distance::Angular);
    assert_eq!(*back.train, *ds.train);
    assert_eq!(back.ground_truth, ds.ground_truth);

    // A missing shard is named.
    std::fs::remove_file(dir.join("shuffle_train-01-of-3.parquet")).unwrap();
    let err = load(&dir).unwrap_err();
    assert!(err.contains("shuffle_train-01-of-3.parquet"), "{err}");
}

/// A directory with the given train ids and widths (one file per `(ids, width)` shard).
fn write_bad(dir: &Path, shards: &[(&[i64], usize)], list_column: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let count = shards.len();
    for (s, (ids, width)) in shards.iter().enumerate() {
        let name = if count == 1 {
            "train.parquet".to_string()
        } else {
            format!("train-{s:02}-of-{count}.parquet")
        };
        let values = vec![0.5f32; ids.len() * width];
        write_list_file(
            &dir.join(name),
            list_column,
            ids,
            *width,
            ListData::F32(&values),
        )
        .unwrap();
    }
    let queries = [0.25f32; 8];
    write_list_file(
        &dir.join("test.parquet"),
        "emb",
        &[0, 1],
        4,
        ListData::F32(&queries),
    )
    .unwrap();
}

#[test]
fn malformed_directories_are_errors_naming_the_file_and_the_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let case = |name: &str| tmp.path().join(name);

    write_bad(&case("no_emb"), &[(&[0, 1, 2], 4)], "vector");
    let err = load(&case("no_emb")).unwrap_err();
    assert!(
        err.contains("train.parquet") && err.contains("no `emb` column"),
        "{err}"
    );

    write_bad(&case("gap"), &[(&[0, 1, 3], 4)], "emb");
    let err = load(&case("gap")).unwrap_err();
    assert!(err.contains("id 3 is out of range"), "{err}");

    write_bad(&case("twice"), &[(&[0, 1, 1], 4)], "emb");
    let err = load(&case("twice")).unwrap_err();
    assert!(err.contains("id 1 appears twice"), "{err}");

    write_bad(&case("negative"), &[(&[0, -1], 4)], "emb");
    let err = load(&case("negative")).unwrap_err();
    assert!(err.contains("id -1 is negative"), "{err}");

    write_bad(&case("ragged"), &[(&[0, 1], 4), (&[2, 3], 5)], "emb");
    let err = load(&case("ragged")).unwrap_err();
    assert!(
        err.contains("train-01-of-2.parquet") && err.contains("has 5 components, the first row 4"),
        "{err}"
    );

    write_bad(&case("no_train"), &[], "emb");
    let err = load(&case("no_train")).unwrap_err();
    assert!(err.contains("no train vectors"), "{err}");

    // Neighbour lists for the wrong number of queries.
    write_bad(&case("short_gt"), &[(&[0, 1, 2], 4)], "emb");
    write_list_file(
        &case("short_gt").join("neighbors.parquet"),
        "neighbors_id",
        &[0],
        2,
        ListData::I64(&[1, 2]),
    )
    .unwrap();
    let err = load(&case("short_gt")).unwrap_err();
    assert!(
        err.contains("neighbors.parquet") && err.contains("for 1 queries, but test.parquet has 2"),
        "{err}"
    );

    // Truncated and byte-flipped files: errors, never a panic.
    write_bad(&case("cut"), &[(&[0, 1, 2], 4)], "emb");
    let train = case("cut").join("train.parquet");
    let bytes = std::fs::read(&train).unwrap();
    for cut in [0, 4, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&train, &bytes[..cut]).unwrap();
        let err = load(&case("cut")).unwrap_err();
        assert!(err.contains("train.parquet"), "cut at {cut}: {err}");
    }
    for at in 0..bytes.len() {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x5a;
        std::fs::write(&train, &flipped).unwrap();
        // Any outcome but a panic: a flip in the values may still read.
        let _ = load(&case("cut"));
    }
}

#[test]
fn bench_and_info_run_on_a_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("openai_tiny_400");
    let ds = dataset::load(
        "gen:uniform:n=400,dim=8,queries=12,seed=5,distance=angular",
        &opts(),
    )
    .unwrap();
    let ids = neighbour_ids(&ds);
    write_dir(&dir, &ds.train, &ds.test, Some((ds.ground_truth.k, &ids))).unwrap();
    let d = dir.to_str().unwrap();

    let info = ragdbeval(tmp.path(), &["dataset", "info", d]);
    assert!(info.status.success(), "{}", stderr(&info));
    let text = stdout(&info);
    assert!(text.contains("VectorDBBench"), "{text}");
    assert!(
        text.contains("400 × 8") && text.contains("angular"),
        "{text}"
    );

    let out = ragdbeval(
        tmp.path(),
        &argv!["bench --db exact --dataset", d, "-k 10 --name vdb"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let result = std::fs::read_to_string(tmp.path().join("results/vdb.json")).unwrap();
    assert!(result.contains("\"recall\": 1.0"), "{result}");
}

/// `dataset convert --to vdbbench`: any dataset becomes a VectorDBBench directory that loads
/// back with the same vectors and truth and that `bench --db exact` scores at recall 1.0; a
/// metric the directory's name would not give is named in a note; an existing non-empty
/// output is refused, writing nothing.
#[test]
fn convert_to_vdbbench_round_trips_and_benches_at_recall_one() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let spec = "gen:clustered:n=700,dim=10,queries=15,seed=4,distance=angular";
    let original = dataset::load(spec, &opts()).unwrap();
    let out = t.join("sub/converted");
    let done = ragdbeval(
        t,
        &argv![
            "dataset convert -q -k 10 --dataset",
            spec,
            "--to vdbbench --out",
            out.to_str().unwrap()
        ],
    );
    assert!(done.status.success(), "{}", stderr(&done));
    let said = stdout(&done);
    assert!(said.contains("--distance angular"), "{said}");
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".sha256"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["neighbors.parquet", "test.parquet", "train.parquet"]
    );
    // Nothing temporary is left next to it.
    assert_eq!(std::fs::read_dir(t.join("sub")).unwrap().count(), 1);

    let back = dataset::load(
        out.to_str().unwrap(),
        &LoadOptions {
            distance: Some(Distance::Angular),
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(*back.train, *original.train);
    assert_eq!(back.test, original.test);
    assert_eq!(back.ground_truth_source, GroundTruthSource::File);
    assert_eq!(back.ground_truth, original.ground_truth);
    assert_eq!(back.files.len(), 3, "{:?}", back.files);

    let bench = ragdbeval(
        t,
        &argv![
            "bench --db exact -q --dataset",
            out.to_str().unwrap(),
            "--distance angular -k 10 --name conv"
        ],
    );
    assert!(bench.status.success(), "{}", stderr(&bench));
    let result = std::fs::read_to_string(t.join("results/conv.json")).unwrap();
    assert!(result.contains("\"recall\": 1.0"), "{result}");
    // The result names every file with its SHA-256, in the order the identity hashes them.
    let json: serde_json::Value = serde_json::from_str(&result).unwrap();
    let files = json["dataset"]["files"].as_array().unwrap();
    let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert!(paths[0].ends_with("train.parquet"), "{paths:?}");
    assert!(paths[1].ends_with("test.parquet"), "{paths:?}");
    assert!(paths[2].ends_with("neighbors.parquet"), "{paths:?}");
    assert!(
        files
            .iter()
            .all(|f| f["sha256"].as_str().unwrap().len() == 64)
    );

    // Into an existing directory with files: refused, nothing changed.
    let again = ragdbeval(
        t,
        &argv![
            "dataset convert -q --dataset",
            spec,
            "--to vdbbench --out",
            out.to_str().unwrap()
        ],
    );
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("not an empty directory"),
        "{}",
        stderr(&again)
    );
    assert_eq!(std::fs::read_dir(t.join("sub")).unwrap().count(), 1);
}
