//! The TREC writers' format: columns, ranks, scores that sort back into the engine's order,
//! repeated ids, padding, tags and file names.

use super::*;
use crate::params::ParamValue;

fn lines_of(bytes: Vec<u8>) -> Vec<String> {
    String::from_utf8(bytes)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn scores_are_negated_distances_when_the_order_allows() {
    let scores = ranking_scores(&[Some(0.0), Some(0.25), Some(1.5)]);
    assert_eq!(scores, vec![0.0, -0.25, -1.5]);
    assert!(scores[0].is_sign_positive(), "no -0.0");
}

#[test]
fn scores_sort_back_into_the_engine_order_under_ties_and_inversions() {
    // A tie, an inversion (the engine put a farther point first), a missing distance first
    // and in the middle, and NaN.
    let distances = [
        None,
        Some(1.0),
        Some(1.0),
        Some(0.5),
        None,
        Some(f32::NAN),
        Some(3.0),
    ];
    let scores = ranking_scores(&distances);
    assert!(
        scores.windows(2).all(|w| w[0] > w[1]),
        "strictly decreasing: {scores:?}"
    );
    assert_eq!(scores[0], 0.0);
    assert_eq!(scores[1], -1.0);
    assert_eq!(scores[2], (-1.0f32).next_down());
    assert_eq!(scores[6], -3.0);
    // Printed, read back as a double and narrowed to a float, as trec_eval reads them, they
    // are the same floats: still strictly decreasing.
    let reread: Vec<f32> = scores
        .iter()
        .map(|s| score_text(*s).parse::<f64>().unwrap() as f32)
        .collect();
    assert_eq!(reread, scores);
    assert_eq!(score_text(scores[2]), "-1.0000001192092896");
}

#[test]
fn run_lines_have_six_columns_ranks_from_one_and_no_repeats() {
    let mut out = Vec::new();
    write_run_query(
        &mut out,
        7,
        &[42, 3, 42, 9],
        &[Some(0.5), Some(0.75), Some(0.5), Some(2.0)],
        "exact:-:-",
    )
    .unwrap();
    assert_eq!(
        lines_of(out),
        vec![
            "7 Q0 42 1 -0.5 exact:-:-",
            "7 Q0 3 2 -0.75 exact:-:-",
            "7 Q0 9 3 -2.0 exact:-:-",
        ]
    );
    let mut empty = Vec::new();
    write_run_query(&mut empty, 0, &[], &[], "t").unwrap();
    assert!(empty.is_empty(), "no result, no line");
}

#[test]
fn qrels_list_the_first_k_neighbours_without_padding() {
    let truth = GroundTruth {
        k: 3,
        ids: vec![5, 1, 8, 2, PointId::MAX, PointId::MAX],
        distances: vec![0.1, 0.2, 0.3, 0.4, f32::INFINITY, f32::INFINITY],
    };
    let mut out = Vec::new();
    assert_eq!(write_qrels(&mut out, &truth, 2).unwrap(), 3);
    assert_eq!(lines_of(out), vec!["0 0 5 1", "0 0 1 1", "1 0 2 1"]);
}

#[test]
fn tags_are_one_column() {
    let build: ParamMap = [("m".to_string(), ParamValue::Int(16))]
        .into_iter()
        .collect();
    let search: ParamMap = [
        ("hnsw_ef".to_string(), ParamValue::Int(64)),
        ("exact".to_string(), ParamValue::Bool(false)),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        run_tag("qdrant-edge", &build, &search, None),
        "qdrant-edge:m=16:exact=false,hnsw_ef=64"
    );
    assert_eq!(
        run_tag(
            "exact",
            &ParamMap::new(),
            &ParamMap::new(),
            Some("label 1%")
        ),
        "exact:-:-:label_1%"
    );
}

#[test]
fn several_measurements_are_numbered_before_the_extension() {
    let base = Path::new("out/run.trec");
    assert_eq!(run_path(base, 1, false), PathBuf::from("out/run.trec"));
    assert_eq!(run_path(base, 2, true), PathBuf::from("out/run.2.trec"));
    assert_eq!(run_path(Path::new("run"), 3, true), PathBuf::from("run.3"));
}

#[test]
fn unwritable_destinations_are_refused_early() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        check_writable(dir.path()),
        Err(TrecError::IsDirectory { .. })
    ));
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    // A path through a regular file cannot be created.
    assert!(check_writable(&file.join("run.trec")).is_err());
    check_writable(&dir.path().join("sub/run.trec")).unwrap();
    assert!(
        !dir.path().join("sub/run.trec").exists(),
        "the check leaves no file"
    );
}
