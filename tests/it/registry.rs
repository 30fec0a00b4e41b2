//! The registry is the engine folders: every `adapters/<module>/config.toml` with an `[engine]`
//! table is an engine, and nothing else names one. These tests hold the built registry and the
//! scripts' view (`scripts/engines.py`) to the folders, so that a hand-kept list cannot come
//! back; `scripts/check_engine_folder.py` adds a throw-away engine folder and checks that it is
//! picked up everywhere.

use std::path::Path;
use std::process::Command;

use ragdbeval::adapters::{ENGINES, LEXICAL};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The registry names of the engine folders, read from their `config.toml`, sorted.
fn folder_engines() -> Vec<(String, bool)> {
    let mut names = Vec::new();
    for dir in crate::common::files_in(&root().join("adapters")) {
        let Ok(text) = std::fs::read_to_string(dir.join("config.toml")) else {
            continue;
        };
        let table: toml::Table = toml::from_str(&text).expect("config.toml parses");
        if let Some(engine) = table.get("engine") {
            let name = engine["name"].as_str().expect("engine.name").to_string();
            let dense = engine
                .get("dense")
                .and_then(toml::Value::as_bool)
                .unwrap_or(true);
            names.push((name, dense));
        }
    }
    names.sort();
    names
}

/// Every engine folder is in the registry, in name order, and the registry holds nothing else.
#[test]
fn the_registry_is_the_engine_folders() {
    let folders = folder_engines();
    let dense: Vec<&str> = folders
        .iter()
        .filter(|(_, d)| *d)
        .map(|(n, _)| n.as_str())
        .collect();
    let registered: Vec<&str> = ENGINES.iter().map(|e| e.name).collect();
    assert_eq!(registered, dense);
    for (name, dense) in &folders {
        let lexical = LEXICAL.iter().any(|e| e.name == name);
        let hybrid = root()
            .join("adapters")
            .join(name.replace('-', "_"))
            .join("hybrid.rs");
        assert_eq!(lexical, !dense || hybrid.is_file(), "{name}: lexical entry");
    }
}

/// An engine names itself (in its errors and through `name()`) as its folder's `config.toml`
/// does: every in-process engine of this build, opened without a collection.
#[test]
fn in_process_engines_name_themselves_as_the_registry_does() {
    let options = ragdbeval::engine::ConnectOptions::default();
    for entry in ENGINES
        .iter()
        .filter(|e| e.embedded() && e.left_out.is_none())
    {
        let engine = (entry.open)(&options).unwrap_or_else(|e| panic!("{}: {e}", entry.name));
        assert_eq!(engine.name(), entry.name);
    }
}

/// The scripts read the same engines as the build: names, servers and features.
#[test]
fn the_scripts_see_the_registry() {
    let ask = |args: &[&str]| {
        let out = Command::new("python3")
            .arg(root().join("scripts/engines.py"))
            .args(args)
            .output()
            .expect("python3 runs scripts/engines.py");
        assert!(out.status.success(), "engines.py {args:?}");
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let names: Vec<String> = folder_engines().into_iter().map(|(n, _)| n).collect();
    assert_eq!(ask(&["names"]).lines().collect::<Vec<_>>(), names);
    let servers: Vec<&str> = ENGINES
        .iter()
        .filter(|e| !e.embedded())
        .map(|e| e.name)
        .collect();
    assert_eq!(ask(&["servers"]).lines().collect::<Vec<_>>(), servers);
    for e in ENGINES {
        let url_env = e.meta.server.as_ref().map_or("", |s| s.url_env);
        assert_eq!(
            ask(&["get", e.name, "url_env"]).trim(),
            url_env,
            "{}",
            e.name
        );
    }
}

/// Every server engine's URL form points its unreachable-server and deadline tests at the
/// port they give.
#[test]
fn every_server_engine_has_a_url_form() {
    for e in ENGINES.iter().filter(|e| !e.embedded()) {
        let url = crate::conformance::url_at(e.name, 1);
        assert!(url.contains("127.0.0.1:1"), "{}: {url}", e.name);
    }
}
