//! Element types end to end: a `.u8bin` dataset stays `uint8` where the engine has
//! the type (exact; Qdrant's `uint8` datatype, in-process and on a server), its ground truth is
//! exact on the integer values, and an engine that stores `float32` says so in the result.

use std::path::{Path, PathBuf};

use crate::common::{ragdbeval, run_in_temp, stderr, succeeds};
use ragdbeval::dataset::bigann::{self, ElementType as FileType};
use ragdbeval::results::RunResult;
use ragdbeval::vectors::Vectors;

/// Bytes from a fixed xorshift stream, as f32 (the values a `.u8bin` file holds).
fn bytes(count: usize, seed: u64) -> Vec<f32> {
    let mut state = seed | 1;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            f32::from((state >> 56) as u8)
        })
        .collect()
}

/// A big-ann directory of `uint8` vectors without a truth file (`base.u8bin`, `query.u8bin`):
/// `n` × `dim` base vectors and 60 queries.
fn u8_set(root: &Path, n: usize, dim: usize) -> PathBuf {
    let dir = root.join("u8set");
    std::fs::create_dir_all(&dir).unwrap();
    let base = Vectors::new(bytes(n * dim, 11), dim).unwrap();
    let query = Vectors::new(bytes(60 * dim, 12), dim).unwrap();
    bigann::write_vectors(&dir.join("base.u8bin"), &base, FileType::Uint8).unwrap();
    bigann::write_vectors(&dir.join("query.u8bin"), &query, FileType::Uint8).unwrap();
    dir
}

/// Runs `bench` on `set` with `extra` arguments and returns the result file.
fn bench(root: &Path, set: &Path, name: &str, extra: &[&str]) -> RunResult {
    let mut args = vec![
        "bench",
        "-q",
        "--warmup",
        "0",
        "--runbook",
        "build-search",
        "--dataset",
        set.to_str().unwrap(),
        "--name",
        name,
    ];
    args.extend_from_slice(extra);
    let out = ragdbeval(root, &args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    RunResult::load(&root.join(format!("results/{name}.json"))).unwrap()
}

/// `(dataset, engine)` element types of a result.
fn types(r: &RunResult) -> (String, String) {
    let t = r.element_type.as_ref().expect("element_type recorded");
    (t.dataset.clone(), t.engine.clone().unwrap_or_default())
}

/// The `datatype` Qdrant was given, from the build settings recorded in the result.
fn recorded_datatype(r: &RunResult) -> String {
    r.engine.details["build_settings"]["datatype"]
        .as_str()
        .unwrap_or_else(|| panic!("no datatype in {:?}", r.engine.details))
        .to_string()
}

#[test]
fn exact_keeps_uint8_and_its_truth_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    // 300 dimensions: squared distances of bytes pass 2^24 there, where f32 sums round.
    let set = u8_set(dir.path(), 1500, 300);
    let info = succeeds(dir.path(), &["dataset", "info", set.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(text.contains("element type:  uint8"), "{text}");

    let r = bench(dir.path(), &set, "exact-u8", &["--db", "exact"]);
    assert_eq!(types(&r), ("uint8".into(), "uint8".into()));
    let search = r.configs[0].searches().next().unwrap();
    assert_eq!(search.quality.recall, 1.0);
    // Every answer equals the truth id for id and bit for bit.
    assert_eq!(search.truth_mismatches, Some(0));
    // The element type is a field now, not a warning that engines got f32.
    let text = std::fs::read_to_string(dir.path().join("results/exact-u8.json")).unwrap();
    assert!(!text.contains("converted to f32"), "{text}");
}

#[test]
fn qdrant_edge_stores_uint8_natively_and_float32_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let set = u8_set(dir.path(), 3000, 64);
    // Two configurations: the default (the dataset's type) and float32 asked for.
    let r = bench(
        dir.path(),
        &set,
        "edge-u8",
        &argv!["--db qdrant-edge --build-param datatype=uint8,float32"],
    );
    let (dataset, engine) = types(&r);
    assert_eq!(dataset, "uint8");
    assert_eq!(engine, "uint8; float32 (converted from uint8, exact)");
    assert_eq!(r.configs.len(), 2);
    let mut totals = Vec::new();
    for config in &r.configs {
        let search = config.searches().next().unwrap();
        // Distances are recomputed by the harness from the exact values: a uint8 index that
        // answered with wrong ids (a cast gone wrong, a lost component) would fall far below.
        assert!(
            search.quality.recall >= 0.9,
            "{:?}: recall {}",
            config.build_params,
            search.quality.recall
        );
        totals.push(
            config
                .build()
                .and_then(|b| b.total_bytes_per_vector)
                .expect("total footprint measured"),
        );
    }
    // The engine stored bytes: a uint8 vector takes 64 B, a float32 one 256 B (the WAL holds
    // what was sent either way), so the uint8 collection is measurably smaller.
    assert!(
        totals[0] + 100.0 < totals[1],
        "uint8 {} B/vector vs float32 {} B/vector",
        totals[0],
        totals[1]
    );

    // Without the parameter, the dataset's type is the default and recorded as such.
    let r = bench(dir.path(), &set, "edge-default", &["--db", "qdrant-edge"]);
    assert_eq!(types(&r).1, "uint8");
    assert_eq!(recorded_datatype(&r), "uint8");
}

#[test]
fn uint8_datatype_is_refused_for_float_data() {
    let (_dir, out) = run_in_temp(&argv![
        "bench -q --db qdrant-edge --dataset gen:clustered:n=300,dim=8,queries=5,seed=1 --build-param datatype=uint8"
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("datatype") && err.contains("the dataset is float32"),
        "{err}"
    );
}

#[test]
#[cfg_attr(not(engine_runs = "pgvector"), ignore = "needs PGVECTOR_URL")]
fn pgvector_states_its_conversion_to_float32() {
    let url = crate::common::server_url("PGVECTOR_URL", "scripts/servers/pgvector.sh start");
    let dir = tempfile::tempdir().unwrap();
    let set = u8_set(dir.path(), 2000, 48);
    let r = bench(
        dir.path(),
        &set,
        "pg-u8",
        &["--db", "pgvector", "--url", &url, "--recreate"],
    );
    assert_eq!(
        types(&r),
        (
            "uint8".into(),
            "float32 (converted from uint8, exact)".into()
        )
    );
    let search = r.configs[0].searches().next().unwrap();
    assert!(search.quality.recall >= 0.9, "{}", search.quality.recall);
}

#[test]
#[cfg_attr(not(engine_runs = "qdrant"), ignore = "needs QDRANT_URL")]
fn qdrant_server_stores_uint8() {
    let url = crate::common::server_url(
        "QDRANT_URL",
        "a Qdrant server, e.g. docker run -p 6334:6334 qdrant/qdrant; not installable here, so ignored even under CI",
    );
    let dir = tempfile::tempdir().unwrap();
    let set = u8_set(dir.path(), 3000, 64);
    let r = bench(
        dir.path(),
        &set,
        "server-u8",
        &["--db", "qdrant", "--url", &url, "--recreate"],
    );
    assert_eq!(types(&r), ("uint8".into(), "uint8".into()));
    assert_eq!(recorded_datatype(&r), "uint8");
    // What the server itself reports for the collection, not only what it was told.
    let reported = &r.engine.details["collection_info"]["datatype"];
    assert_eq!(reported, "Uint8", "{:?}", r.engine.details);
    let search = r.configs[0].searches().next().unwrap();
    assert!(search.quality.recall >= 0.9, "{}", search.quality.recall);
}
