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
    // Re-run when HEAD moves or the index changes (commit, checkout).
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
    server_cfgs();
}

/// Server engines with tests: the cfg their tests are gated on, and the variable the tests
/// read the server's URL from.
const SERVERS: &[(&str, &str, &str)] = &[
    ("pgvector", "has_pgvector", "PGVECTOR_URL"),
    ("chroma", "has_chroma", "CHROMA_URL"),
    ("redis", "has_redis", "REDIS_URL"),
    ("qdrant", "has_qdrant", "QDRANT_URL"),
];

/// Emits `has_<server>` for each server whose tests must run; the tests of the others carry
/// `#[cfg_attr(not(has_<server>), ignore = ...)]`, so libtest reports them as ignored instead
/// of letting them pass without testing anything.
///
/// A server's tests run when its URL variable is set, or when `CI` is set (a missing server is
/// then a failure, which the test reports) — except Qdrant, which cannot be installed on these
/// machines, so its tests run only when `QDRANT_URL` is set, under CI too.
///
/// `scripts/test.sh` sets `RAGDBEVAL_TEST_SERVERS` (the names of the servers it provides)
/// instead of having the URLs read here: the servers listen on a free port, a new one each
/// run, and a cfg that tracks the URL's value would rebuild the crate and every target on
/// every run. When that variable is set, only it and `CI` are read.
fn server_cfgs() {
    println!("cargo:rerun-if-env-changed=CI");
    println!("cargo:rerun-if-env-changed=RAGDBEVAL_TEST_SERVERS");
    let ci = std::env::var_os("CI").is_some();
    let listed = std::env::var("RAGDBEVAL_TEST_SERVERS").ok();
    for &(name, cfg, var) in SERVERS {
        println!("cargo:rustc-check-cfg=cfg({cfg})");
        let available = match &listed {
            Some(list) => list.split([',', ' ']).any(|s| s == name),
            None => {
                // Cargo re-runs this script when the variable's value changes: the URL, port
                // included, which is why scripts/test.sh uses the list above.
                println!("cargo:rerun-if-env-changed={var}");
                std::env::var(var).is_ok_and(|url| !url.trim().is_empty())
            }
        };
        if available || (ci && name != "qdrant") {
            println!("cargo:rustc-cfg={cfg}");
        }
    }
}
