//! The local server started through `scripts/servers/milvus.sh` when no `--url` is given,
//! and what the script records about it (pid, release).

use std::path::PathBuf;

use super::*;
use crate::adapters::support::process;
use crate::adapters::support::server::{self, LocalServer};

/// The local server `scripts/servers/milvus.sh` starts.
pub(super) const LOCAL_SERVER: LocalServer = LocalServer {
    engine: ENGINE,
    schemes: &["http://", "https://"],
    url_example: "http://HOST:19530",
};

/// The script's state directory when `url` is the URL of the server it runs.
pub(super) fn script_state(url: &str) -> Option<PathBuf> {
    let state = server::state_dir(ENGINE);
    let script_url = std::fs::read_to_string(state.join("url")).ok()?;
    (script_url.trim().trim_end_matches('/') == url).then_some(state)
}

/// The script's server process, when it is alive and is a `milvus`.
pub(super) fn script_pid(state: &std::path::Path) -> Option<u32> {
    let pid = process::pid_from_file(&state.join("pid"))?;
    (process::is_alive(pid) && (!process::has_procfs() || process::is_named(pid, "milvus")))
        .then_some(pid)
}

/// The milvus-lite release the script installed.
pub(super) fn script_release(state: &std::path::Path) -> Option<String> {
    let v = std::fs::read_to_string(state.join("version")).ok()?;
    let v = v.trim();
    (!v.is_empty()).then(|| format!("milvus-lite {v}"))
}
