//! Unit tests of the parent module.

use super::*;

fn opts() -> LoadOptions {
    LoadOptions {
        gt_k: 10,
        ..LoadOptions::default()
    }
}

#[test]
fn generated_dataset_has_exact_ground_truth() {
    let ds = load("gen:uniform:n=500,dim=8,queries=7,seed=3", &opts()).unwrap();
    assert_eq!(ds.train.len(), 500);
    assert_eq!(ds.ground_truth.k, 10);
    assert_eq!(ds.ground_truth.queries(), 7);
    assert_eq!(ds.ground_truth_source, GroundTruthSource::Computed);
    assert_eq!(ds.sha256.len(), 64);
}

#[test]
fn unknown_name_and_missing_path() {
    let err = load("no-such-dataset", &opts()).unwrap_err().to_string();
    assert!(err.contains("unknown dataset"), "{err}");
    assert!(err.contains("sift-128-euclidean"), "{err}");
    let err = load("missing/file.hdf5", &opts()).unwrap_err().to_string();
    assert!(err.contains("does not exist"), "{err}");
}

#[test]
fn offline_registry_name_says_where_to_put_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let o = LoadOptions {
        cache_dir: dir.path().to_path_buf(),
        offline: true,
        ..opts()
    };
    let err = load("sift1m", &o).unwrap_err().to_string();
    assert!(err.contains("sift-128-euclidean.hdf5"), "{err}");
}

#[test]
fn limit_recomputes_ground_truth() {
    let full = load("gen:uniform:n=400,dim=4,queries=5,seed=1", &opts()).unwrap();
    let o = LoadOptions {
        limit: Some(100),
        ..opts()
    };
    let sub = load("gen:uniform:n=400,dim=4,queries=5,seed=1", &o).unwrap();
    assert_eq!(sub.train.len(), 100);
    assert!(sub.ground_truth.ids.iter().all(|&id| id < 100));
    assert_ne!(full.ground_truth.ids, sub.ground_truth.ids);
    let o = LoadOptions {
        limit: Some(401),
        ..opts()
    };
    assert!(load("gen:uniform:n=400,dim=4,queries=5,seed=1", &o).is_err());
}

/// `--distance` on a file whose neighbours were computed for another metric: the stored
/// neighbours must not be used (they are the euclidean truth scored as if angular).
#[test]
fn distance_override_recomputes_the_files_neighbours() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/fixtures/tiny-h5py-euclidean.hdf5");
    let path = path.to_str().unwrap();
    let same = load(path, &opts()).unwrap();
    assert_eq!(same.ground_truth_source, GroundTruthSource::File);
    let o = LoadOptions {
        distance: Some(Distance::Angular),
        gt_k: same.ground_truth.k,
        ..opts()
    };
    let other = load(path, &o).unwrap();
    assert_eq!(other.distance, Distance::Angular);
    assert_eq!(other.ground_truth_source, GroundTruthSource::Computed);
    let want = compute_ground_truth(
        &other.train,
        &other.test,
        Distance::Angular,
        same.ground_truth.k,
        &Silent,
    )
    .unwrap();
    assert_eq!(other.ground_truth, want);
    // The same override on a generated set takes effect too.
    let o = LoadOptions {
        distance: Some(Distance::Angular),
        ..opts()
    };
    let g = load("gen:uniform:n=300,dim=5,queries=4,seed=2", &o).unwrap();
    assert_eq!(g.distance, Distance::Angular);
}

/// Found by the fuzz target `dataset_arrays`: stored neighbours of depth 0 divided by zero
/// (`chunks_exact(0)`) instead of being refused.
#[test]
fn stored_neighbours_of_depth_zero_are_refused() {
    let train = Vectors::new(vec![0.0, 1.0, 2.0, 3.0], 2).unwrap();
    let test = Vectors::new(vec![0.5, 0.5], 2).unwrap();
    let ids_len = |k: usize| if k == 0 { "some" } else { "an odd number of" };
    for (k, ids) in [(0, vec![0]), (0, vec![]), (2, vec![0, 1, 1])] {
        let Err(err) = super::assemble(
            super::DatasetArrays {
                name: "t".into(),
                source: "t",
                distance: Distance::Euclidean,
                train: train.clone(),
                test: test.clone(),
                stored_gt: Some((k, ids)),
                sha256: String::new(),
            },
            &LoadOptions::default(),
        ) else {
            panic!("depth {k} with {} ids must be refused", ids_len(k));
        };
        assert!(!err.to_string().is_empty());
    }
}

/// An HDF5 file whose `train` and `test` are integers is `uint8` when every value is a byte,
/// `int8` when every value fits a signed byte, `float32` otherwise; float data stays float32.
#[test]
fn hdf5_integer_sets_get_the_byte_type_their_values_fit() {
    use ::hdf5::types::VarLenUnicode;
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, train: &[i32], test: &[i32]| -> std::path::PathBuf {
        let path = dir.path().join(name);
        // No file lock: a child another test thread spawns would inherit it.
        let file = ::hdf5::File::with_options()
            .with_fapl(|p| p.file_locking(false))
            .create(&path)
            .unwrap();
        let v: VarLenUnicode = "euclidean".parse().unwrap();
        file.new_attr::<VarLenUnicode>()
            .shape(())
            .create("distance")
            .unwrap()
            .write_scalar(&v)
            .unwrap();
        for (set, data) in [("train", train), ("test", test)] {
            file.new_dataset::<i32>()
                .shape([data.len() / 2, 2])
                .create(set)
                .unwrap()
                .write_raw(data)
                .unwrap();
        }
        path
    };
    let load_type =
        |path: &std::path::Path| load(path.to_str().unwrap(), &opts()).unwrap().element_type;
    let bytes = write("u8.hdf5", &[0, 255, 3, 4, 5, 6], &[1, 2]);
    assert_eq!(load_type(&bytes), ElementType::Uint8);
    let signed = write("i8.hdf5", &[-128, 127, 3, 4, 5, 6], &[1, 2]);
    assert_eq!(load_type(&signed), ElementType::Int8);
    // One value outside both ranges, in the queries: float32.
    let wide = write("i32.hdf5", &[0, 255, 3, 4, 5, 6], &[1, 256]);
    assert_eq!(load_type(&wide), ElementType::Float32);
    let generated = load("gen:uniform:n=20,dim=2,queries=2,seed=1", &opts()).unwrap();
    assert_eq!(generated.element_type, ElementType::Float32);
}

/// A train set large enough to be written with O_DIRECT (see `hdf5::put_direct`) reads back
/// exactly, beside a small test set and the neighbours written through HDF5.
#[test]
fn hdf5_large_train_written_directly_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.hdf5");
    let (rows, dim) = (17_000, 129); // 8.8 MB: over the direct threshold, rows not block-sized
    let train: Vec<f32> = (0..rows * dim).map(|i| (i as f32).sin()).collect();
    let test: Vec<f32> = (0..3 * dim).map(|i| i as f32 * 0.5).collect();
    let train = Vectors::new(train, dim).unwrap();
    let test = Vectors::new(test, dim).unwrap();
    let gt = GroundTruth {
        k: 2,
        ids: vec![5, 7, 1, 2, 16_999, 0],
        distances: vec![0.5, 1.0, 0.25, 2.0, 3.0, 4.0],
    };
    hdf5::write(&path, Distance::Euclidean, &train, &test, &gt).unwrap();
    let back = hdf5::read(&path, None).unwrap();
    assert_eq!(back.train.as_flat(), train.as_flat());
    assert_eq!(back.train_rows_in_file, rows);
    assert_eq!(back.test.as_flat(), test.as_flat());
    let (k, ids, distances) = back.neighbors.unwrap();
    assert_eq!(k, 2);
    assert_eq!(ids, vec![5, 7, 1, 2, 16_999, 0]);
    assert_eq!(distances, gt.distances);
    // The same rows read in place from an `.fvecs` file (as `dataset gt` reads a base) are
    // gathered block by block into the same file, byte for byte.
    let fvecs = dir.path().join("x_base.fvecs");
    texmex::write_fvecs(&fvecs, &train).unwrap();
    let in_place = texmex::read_vectors_in_place(&fvecs, None).unwrap();
    assert_ne!(in_place.strided().1, dim, "read in place");
    let again = dir.path().join("again.hdf5");
    hdf5::write(&again, Distance::Euclidean, &in_place, &test, &gt).unwrap();
    assert!(std::fs::read(&path).unwrap() == std::fs::read(&again).unwrap());
    // Neither the writer nor the truth copied the rows (`dataset gt`'s whole point in
    // reading them in place), and the truth is that of the rows in memory.
    let progress = crate::types::Silent;
    let truth = |v: &Vectors| compute_ground_truth(v, &test, Distance::Euclidean, 5, &progress);
    let from_place = truth(&in_place).unwrap();
    assert!(!in_place.records_copied(), "the rows were copied");
    assert_eq!(from_place, truth(&train).unwrap());
}
