//! Records the git revision ragdbeval is built from, for result manifests, and tells the
//! integration tests which database servers they can use.

use std::process::Command;

fn main() {
    let rev = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    // GIT_OPTIONAL_LOCKS=0: `git status` must not refresh .git/index, or the index change
    // below would make every following cargo invocation rebuild the crate.
    let dirty = Command::new("git")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    let rev = if dirty { format!("{rev}-dirty") } else { rev };
    println!("cargo:rustc-env=RAGDBEVAL_GIT_REVISION={rev}");
    // Re-run when HEAD moves or the index changes (commit, checkout). Git names the files: in
    // a worktree `.git` is a file, and a watched path that does not exist reruns every build.
    for file in ["HEAD", "index"] {
        let path = Command::new("git")
            .args(["rev-parse", "--git-path", file])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        if let Some(path) = path.filter(|p| std::path::Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    server_cfgs(&registry());
    mount_cfg();
    duckdb_link();
    embed_model_cfg();
    jeopardy_wheel_cfg();
}

/// With the `duckdb` feature: links the DuckDB library that `scripts/install/duckdb.sh`
/// installed (`$RAGDBEVAL_DUCKDB_DIR/lib`, default `.deps/duckdb/lib` in the clone) and
/// records its directory as the binaries' run-time search path, so that they run without
/// `LD_LIBRARY_PATH`. The `duckdb` crate's own build asks for `-lduckdb`; this says where.
fn duckdb_link() {
    println!("cargo:rerun-if-env-changed=RAGDBEVAL_DUCKDB_DIR");
    if std::env::var_os("CARGO_FEATURE_DUCKDB").is_none() {
        return;
    }
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let dir =
        std::env::var("RAGDBEVAL_DUCKDB_DIR").unwrap_or_else(|_| format!("{root}/.deps/duckdb"));
    let lib = format!("{dir}/lib");
    println!("cargo:rerun-if-changed={lib}/libduckdb.so");
    if !std::path::Path::new(&lib).join("libduckdb.so").is_file() {
        eprintln!(
            "error: the `duckdb` feature links DuckDB 1.5.5 from {lib}/libduckdb.so, which is \
             missing: run scripts/install/duckdb.sh first"
        );
        std::process::exit(1);
    }
    println!("cargo:rustc-link-search=native={lib}");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{lib}");
}

/// Emits `can_mount_tmpfs` when the build runs with CAP_SYS_ADMIN (root, in most containers),
/// as the tests then do: the full-disk tests mount a small tmpfs, and where they cannot they
/// are reported as ignored instead of passing without testing anything.
fn mount_cfg() {
    println!("cargo:rustc-check-cfg=cfg(can_mount_tmpfs)");
    const CAP_SYS_ADMIN: u32 = 21;
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let admin = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|caps| u64::from_str_radix(caps.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0);
    if admin {
        println!("cargo:rustc-cfg=can_mount_tmpfs");
    }
}

/// The engine registry's generator: reads `adapters/*/config.toml`.
#[path = "build/engines.rs"]
mod engines;

/// Generates the engine registry from the engine folders (see `build/engines.rs`) into
/// `OUT_DIR`, and returns the engines.
fn registry() -> Vec<engines::Engine> {
    println!("cargo:rerun-if-changed=adapters");
    println!("cargo:rerun-if-changed=Cargo.toml");
    let manifest = std::fs::read_to_string("Cargo.toml").unwrap_or_default();
    let features: Vec<String> = toml::from_str::<toml::Table>(&manifest)
        .ok()
        .and_then(|t| t.get("features")?.as_table().cloned())
        .map(|f| f.keys().cloned().collect())
        .unwrap_or_default();
    let adapters = std::env::current_dir().unwrap_or_default().join("adapters");
    let engines = engines::read(&adapters, &features).unwrap_or_else(|e| {
        eprintln!("error: the engine registry: {e}");
        std::process::exit(1);
    });
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    for (file, source) in [
        ("engines.rs", engines::registry_source(&engines, &adapters)),
        ("lexical.rs", engines::lexical_source(&engines, &adapters)),
        ("engine_meta.rs", engines::meta_source(&engines)),
        (
            "client_benches.rs",
            engines::client_benches_source(&engines, &adapters),
        ),
        (
            "engine_tests.rs",
            engines::integration_tests_source(&engines, &adapters),
        ),
    ] {
        if let Err(e) = std::fs::write(out.join(file), source) {
            eprintln!("error: writing {file} to OUT_DIR: {e}");
            std::process::exit(1);
        }
    }
    engines
}

/// Whether the adapter of `engine` is in this build: an engine with a cargo feature is built
/// only with it.
fn adapter_built(engine: &engines::Engine) -> bool {
    engine.table.feature.as_ref().is_none_or(|f| {
        let var = format!("CARGO_FEATURE_{}", f.to_uppercase().replace('-', "_"));
        std::env::var_os(var).is_some()
    })
}

/// Emits `server_engine="<name>"` for each engine that needs a server (the tests every
/// server engine must pass are compiled for those only), and `engine_runs="<name>"` for each
/// engine whose integration tests must run; the tests
/// of the others carry `#[cfg_attr(not(engine_runs = "<name>"), ignore = ...)]`, so libtest
/// reports them as ignored instead of letting them pass without testing anything.
///
/// An engine runs only when its adapter is built (see [`adapter_built`]): an embedded engine
/// then always, a server engine when its URL variable is set, or when
/// `CI` is set and its server can be started here (a script in `scripts/servers/`; a missing
/// server is then a failure, which the test reports). Qdrant has no script (no package
/// exists), so its tests run only when `QDRANT_URL` is set, under CI too.
///
/// `scripts/test.sh` sets `RAGDBEVAL_TEST_SERVERS` (the names of the servers it starts)
/// instead of having their URLs read here: those servers listen on a free port, a new one each
/// run, and a cfg that tracks the URL's value would rebuild the crate and every target on
/// every run. For a listed engine only the list is read.
fn server_cfgs(engines: &[engines::Engine]) {
    println!("cargo:rerun-if-env-changed=CI");
    println!("cargo:rerun-if-env-changed=RAGDBEVAL_TEST_SERVERS");
    let names: Vec<String> = engines
        .iter()
        .map(|e| format!("\"{}\"", e.table.name))
        .collect();
    for cfg in ["engine_runs", "server_engine"] {
        println!(
            "cargo:rustc-check-cfg=cfg({cfg}, values({}))",
            names.join(", ")
        );
    }
    let ci = std::env::var_os("CI").is_some();
    let listed = std::env::var("RAGDBEVAL_TEST_SERVERS").unwrap_or_default();
    for engine in engines.iter().filter(|e| e.table.dense) {
        let name = &engine.table.name;
        if engine.table.server.is_some() {
            println!("cargo:rustc-cfg=server_engine=\"{name}\"");
        }
        let runs = match &engine.table.server {
            _ if !adapter_built(engine) => false,
            None => true,
            Some(_) if listed.split([',', ' ']).any(|s| s == name) => true,
            Some(server) => {
                // Cargo re-runs this script when the variable's value changes: the URL, port
                // included, which is why scripts/test.sh lists the servers it starts instead.
                println!("cargo:rerun-if-env-changed={}", server.url_env);
                let url_set = std::env::var(&server.url_env).is_ok_and(|u| !u.trim().is_empty());
                url_set || (ci && server.script)
            }
        };
        if runs {
            println!("cargo:rustc-cfg=engine_runs=\"{name}\"");
        }
    }
}

/// Emits `jeopardy_wheel` when `RAGDBEVAL_JEOPARDY_WHEEL` names a file (scripts/install/
/// jeopardy.sh prints the wheel's path): the test that loads the real set needs it.
fn jeopardy_wheel_cfg() {
    println!("cargo:rustc-check-cfg=cfg(jeopardy_wheel)");
    println!("cargo:rerun-if-env-changed=RAGDBEVAL_JEOPARDY_WHEEL");
    if std::env::var_os("RAGDBEVAL_JEOPARDY_WHEEL")
        .is_some_and(|p| std::path::Path::new(&p).is_file())
    {
        println!("cargo:rustc-cfg=jeopardy_wheel");
    }
}

/// Emits `embed_model` when `RAGDBEVAL_EMBED_MODEL` names a sentence-transformers folder
/// (scripts/install/minilm.sh prints one): the tests that run the real model need it, and
/// without it they are reported as ignored instead of passing without testing anything.
fn embed_model_cfg() {
    println!("cargo:rustc-check-cfg=cfg(embed_model)");
    println!("cargo:rerun-if-env-changed=RAGDBEVAL_EMBED_MODEL");
    let Some(dir) = std::env::var_os("RAGDBEVAL_EMBED_MODEL") else {
        return;
    };
    let dir = std::path::Path::new(&dir);
    if dir.join("model.safetensors").is_file() && dir.join("modules.json").is_file() {
        println!("cargo:rustc-cfg=embed_model");
    }
}
