//! What the registry cannot give an engine, checked against it: the places the README's
//! "Adding an engine" lists as an engine author's to fill, so that a registered engine lacking
//! one fails here, by name, instead of silently going without.

use std::path::Path;

use ragdbeval::adapters::ENGINES;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The module of an engine: its registry name with `_` for `-`.
fn module(name: &str) -> String {
    name.replace('-', "_")
}

/// Every engine's config.toml starts the `params` fuzz target.
#[test]
fn every_engine_has_a_params_fuzz_input() {
    for e in ENGINES {
        let input = root().join(format!("fuzz/corpus/params/{}.toml", module(e.name)));
        assert!(
            input.is_file(),
            "{}: add {} (a copy of its config.toml)",
            e.name,
            input.display()
        );
    }
}

/// Every server engine is measured against its native client: a bench of its own with its
/// `[[bench]]` entry, which `scripts/engine_vs_native.sh` finds by its file name.
#[test]
fn every_server_engine_has_a_client_bench() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    for e in ENGINES.iter().filter(|e| !e.embedded()) {
        let bench = format!("{}_client", module(e.name));
        let file = root().join(format!("benches/{bench}.rs"));
        assert!(file.is_file(), "{}: add {}", e.name, file.display());
        let entry = format!("[[bench]]\nname = \"{bench}\"\nharness = false\n");
        assert!(
            manifest.contains(&entry),
            "{}: add to Cargo.toml:\n{entry}",
            e.name
        );
    }
}

/// Every in-process engine built on a library is measured against a bare loop over that
/// library's own search call: `benches/<module>_overhead.rs` on the shared harness
/// (`benches/common/in_process.rs`), with its `[[bench]]` entry. `exact` is ragdbeval's own
/// scan: there is no library to hold it to.
#[test]
fn every_in_process_library_has_an_overhead_bench() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    for e in ENGINES.iter().filter(|e| e.embedded() && e.name != "exact") {
        let bench = format!("{}_overhead", module(e.name));
        let file = root().join(format!("benches/{bench}.rs"));
        assert!(file.is_file(), "{}: add {}", e.name, file.display());
        let entry = format!("[[bench]]\nname = \"{bench}\"\nharness = false\n");
        assert!(
            manifest.contains(&entry),
            "{}: add to Cargo.toml:\n{entry}",
            e.name
        );
    }
}

/// Every client or overhead bench and fuzz input belongs to a registered engine.
#[test]
fn no_bench_or_fuzz_input_outlives_its_engine() {
    let modules: Vec<String> = ENGINES.iter().map(|e| module(e.name)).collect();
    for (dir, suffix) in [
        ("benches", "_client.rs"),
        ("benches", "_overhead.rs"),
        ("fuzz/corpus/params", ".toml"),
    ] {
        for file in crate::common::files_in(&root().join(dir)) {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            if let Some(engine) = name.strip_suffix(suffix) {
                assert!(modules.iter().any(|m| m == engine), "{dir}/{name}");
            }
        }
    }
}

/// Every server engine has its URL form in `conformance::url_at`, which its unreachable-server
/// and deadline tests need.
#[test]
fn every_server_engine_has_a_url_form() {
    for e in ENGINES.iter().filter(|e| !e.embedded()) {
        let url = crate::conformance::url_at(e.name, 1);
        assert!(url.contains("127.0.0.1:1"), "{}: {url}", e.name);
    }
}
