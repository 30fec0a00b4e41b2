//! The engine registry, read from the engine folders. Every `adapters/<module>/config.toml`
//! with an `[engine]` table is an engine; nothing else lists them. `build.rs` turns the tables
//! into the Rust source the crate and its tests include (the `mod` lines, the registry, each
//! engine's declaration), and `scripts/engines.py` reads the same tables for the scripts.
//!
//! ```toml
//! [engine]
//! name = "myvec"                 # registry name (`--db myvec`)
//! summary = "one line for `ragdbeval engines`"
//! feature = "myvec"              # optional: the cargo feature the adapter is built with
//! dense = true                   # false: lexical retrieval only (its mod.rs has SUMMARY, open)
//!
//! [engine.server]                # optional: the engine runs as a server
//! url_env = "MYVEC_URL"          # where its tests read the server's URL
//! url_form = "http://127.0.0.1:{port}"  # its URL at a port, for the tests without a server
//! script = true                  # scripts/servers/myvec.sh installs and starts one
//! how_to_get = "scripts/servers/myvec.sh start prints it"
//! password_env = "MYVEC_PASSWORD"  # optional: its clients' password variable
//!
//! [engine.conformance]           # how the shared conformance tests drive it
//! distance = "euclidean"
//! effort_sweep = "ef=8,32,128"   # optional
//! search_params = []             # optional
//! min_recall = 0.9
//! no_stream = "why"              # optional: the engine refuses stream steps, and why
//! ```
//!
//! The file is shared: `build.rs` includes it, and so does a unit test of the crate, which
//! runs it on a folder of throw-away engines.

use std::fmt::Write as _;
use std::path::Path;

use serde::Deserialize;

/// One engine folder's declaration.
#[derive(Debug, Clone)]
pub struct Engine {
    /// The folder's name: the adapter's module.
    pub module: String,
    pub table: EngineTable,
    /// Whether the folder has `hybrid.rs`: sparse and hybrid retrieval beside the dense side.
    pub hybrid: bool,
    /// Whether the folder has `client_bench.rs`: the server engine's adapter against its
    /// fastest native client (`benches/client_overhead.rs`).
    pub client_bench: bool,
    /// Whether the folder has `it.rs`: integration tests of the engine's own particulars, a
    /// module of the integration test binary (`tests/it/main.rs`).
    pub integration_tests: bool,
}

/// The `[engine]` table of a `config.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineTable {
    pub name: String,
    pub summary: String,
    pub feature: Option<String>,
    #[serde(default = "yes")]
    pub dense: bool,
    pub server: Option<ServerTable>,
    pub conformance: Option<ConformanceTable>,
}

fn yes() -> bool {
    true
}

/// `[engine.server]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerTable {
    pub url_env: String,
    pub url_form: String,
    pub script: bool,
    pub how_to_get: String,
    pub password_env: Option<String>,
}

/// `[engine.conformance]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConformanceTable {
    pub distance: String,
    #[serde(default)]
    pub effort_sweep: String,
    #[serde(default)]
    pub search_params: Vec<String>,
    pub min_recall: f64,
    pub no_stream: Option<String>,
}

/// The part of a `config.toml` read here; its parameter sets are read by the crate.
#[derive(Deserialize)]
struct ConfigFile {
    engine: Option<EngineTable>,
}

/// Every engine under `adapters`, sorted by registry name: the order `ragdbeval engines`
/// lists them in. `features` are the cargo features Cargo.toml declares.
pub fn read(adapters: &Path, features: &[String]) -> Result<Vec<Engine>, String> {
    let dirs = std::fs::read_dir(adapters).map_err(|e| format!("{}: {e}", adapters.display()))?;
    let mut engines = Vec::new();
    for dir in dirs {
        let dir = dir
            .map_err(|e| format!("{}: {e}", adapters.display()))?
            .path();
        let config = dir.join("config.toml");
        if !config.is_file() {
            continue;
        }
        let text =
            std::fs::read_to_string(&config).map_err(|e| format!("{}: {e}", config.display()))?;
        let file: ConfigFile =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", config.display()))?;
        let Some(table) = file.engine else { continue };
        let engine = Engine {
            module: dir
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            hybrid: dir.join("hybrid.rs").is_file(),
            client_bench: dir.join("client_bench.rs").is_file(),
            integration_tests: dir.join("it.rs").is_file(),
            table,
        };
        check(&engine, features).map_err(|e| format!("{}: {e}", config.display()))?;
        engines.push(engine);
    }
    engines.sort_by(|a, b| a.table.name.cmp(&b.table.name));
    for pair in engines.windows(2) {
        if pair[0].table.name == pair[1].table.name {
            return Err(format!(
                "two engine folders are named `{}`",
                pair[0].table.name
            ));
        }
    }
    Ok(engines)
}

/// What a declaration must hold for the generated source to compile and the tests to run.
fn check(engine: &Engine, features: &[String]) -> Result<(), String> {
    let t = &engine.table;
    let module_ok = engine.module.starts_with(|c: char| c.is_ascii_lowercase())
        && engine
            .module
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !module_ok {
        return Err(format!(
            "the folder name `{}` is not a Rust module name",
            engine.module
        ));
    }
    if let Some(feature) = &t.feature
        && !features.contains(feature)
    {
        return Err(format!(
            "cargo feature `{feature}` is not in Cargo.toml's [features]"
        ));
    }
    if t.dense && t.conformance.is_none() {
        return Err("a dense engine needs an [engine.conformance] table".into());
    }
    if let Some(server) = &t.server {
        let var = format!("{}_URL", t.name.to_uppercase().replace('-', "_"));
        if server.url_env != var {
            return Err(format!(
                "url_env must be `{var}`, as scripts/test.sh sets it"
            ));
        }
        if !server.url_form.contains("{port}") {
            return Err("url_form must contain `{port}`".into());
        }
    }
    Ok(())
}

/// The `#[cfg]` line of an engine built only with its feature.
fn cfg_line(engine: &Engine) -> String {
    engine
        .table
        .feature
        .as_ref()
        .map(|f| format!("    #[cfg(feature = {f:?})]\n"))
        .unwrap_or_default()
}

/// The path of `file` in the engine's folder, as a Rust string literal: the generated source
/// lives in `OUT_DIR`, so its `mod` items name their files.
fn file_literal(root: &Path, engine: &Engine, file: &str) -> String {
    format!("{:?}", root.join(&engine.module).join(file))
}

/// `engines! { module => "name" @ "…/mod.rs", … }`: the dense engines, each with its
/// feature's `#[cfg]`. `adapters/mod.rs` expands it into the registry,
/// `tests/it/conformance.rs` into the tests. `adapters` is the folder of the engine folders.
pub fn registry_source(engines: &[Engine], adapters: &Path) -> String {
    let mut out = String::from("engines! {\n");
    for e in engines.iter().filter(|e| e.table.dense) {
        let path = file_literal(adapters, e, "mod.rs");
        let _ = writeln!(
            out,
            "{}    {} => {:?} @ {path},",
            cfg_line(e),
            e.module,
            e.table.name
        );
    }
    out.push_str("}\n");
    out
}

/// `lexical_engines! { … }`: the dense engines with `hybrid.rs`, then the lexical-only ones.
pub fn lexical_source(engines: &[Engine], adapters: &Path) -> String {
    let mut out = String::from("lexical_engines! {\n    beside_dense: [\n");
    for e in engines.iter().filter(|e| e.table.dense && e.hybrid) {
        let _ = writeln!(
            out,
            "    {}    {} => {:?},",
            cfg_line(e),
            e.module,
            e.table.name
        );
    }
    out.push_str("    ]\n    lexical_only: [\n");
    for e in engines.iter().filter(|e| !e.table.dense) {
        let path = file_literal(adapters, e, "mod.rs");
        let _ = writeln!(
            out,
            "        {} => {:?} / {:?} / {} @ {path},",
            e.module,
            e.table.name,
            e.table.summary,
            e.table.server.is_none()
        );
    }
    out.push_str("    ]\n}\n");
    out
}

/// One `mod <module>` per engine folder with `client_bench.rs` (its `run`), and
/// `CLIENT_BENCHES`, for `benches/client_overhead.rs`.
pub fn client_benches_source(engines: &[Engine], adapters: &Path) -> String {
    let mut mods = String::new();
    let mut list = String::from("/// Every engine's client comparison: registry name, `run`.\n");
    list.push_str("pub const CLIENT_BENCHES: &[(&str, fn())] = &[\n");
    for e in engines.iter().filter(|e| e.client_bench) {
        let path = file_literal(adapters, e, "client_bench.rs");
        let _ = writeln!(mods, "{}#[path = {path}]\nmod {};", cfg_line(e), e.module);
        let _ = writeln!(
            list,
            "{}    ({:?}, {}::run),",
            cfg_line(e),
            e.table.name,
            e.module
        );
    }
    list.push_str("];\n");
    mods + &list
}

/// One `mod <module>` per engine folder with `it.rs`, for the integration test binary, built
/// with the engine's feature.
pub fn integration_tests_source(engines: &[Engine], adapters: &Path) -> String {
    let mut out = String::new();
    for e in engines.iter().filter(|e| e.integration_tests) {
        let path = file_literal(adapters, e, "it.rs");
        let _ = writeln!(out, "{}#[path = {path}]\nmod {};", cfg_line(e), e.module);
    }
    out
}

/// One `pub mod <module>` per engine: its registry name as `NAME` (the name its adapter
/// speaks of itself by, so that it is written once, in `config.toml`), and for a dense engine
/// `pub const ENGINE: EngineMeta = …`.
pub fn meta_source(engines: &[Engine]) -> String {
    let mut out = String::new();
    for e in engines.iter().filter(|e| !e.table.dense) {
        let _ = writeln!(
            out,
            "pub mod {} {{\n    /// The engine's registry name.\n    pub const NAME: &str = {:?};\n}}",
            e.module, e.table.name
        );
    }
    for e in engines.iter().filter(|e| e.table.dense) {
        let t = &e.table;
        let server = t.server.as_ref().map_or("None".to_string(), |s| {
            format!(
                "Some(ServerMeta {{ url_env: {:?}, url_form: {:?}, script: {}, how_to_get: {:?}, \
                 password_env: {:?} }})",
                s.url_env, s.url_form, s.script, s.how_to_get, s.password_env
            )
        });
        let c = t
            .conformance
            .as_ref()
            .expect("checked: a dense engine has conformance");
        let _ = write!(
            out,
            "pub mod {} {{\n    use crate::engine_meta::*;\n    /// The engine's registry name.\n    \
             pub const NAME: &str = {:?};\n    pub const ENGINE: EngineMeta = \
             EngineMeta {{\n        summary: {:?},\n        server: {server},\n        \
             conformance: Conformance {{ distance: {:?}, effort_sweep: {:?}, search_params: \
             &{:?}, min_recall: {:?}, no_stream: {:?} }},\n    }};\n}}\n",
            e.module,
            t.name,
            t.summary,
            c.distance,
            c.effort_sweep,
            c.search_params,
            c.min_recall,
            c.no_stream
        );
    }
    out
}
