//! The local server started through `scripts/servers/redis.sh` when no `--url` is given,
//! and its process id.

use super::*;
use crate::adapters::support::process;
use crate::adapters::support::server::LocalServer;

/// The local server `scripts/servers/redis.sh` starts.
pub(super) const LOCAL_SERVER: LocalServer = LocalServer {
    engine: ENGINE,
    schemes: &["redis://"],
    url_example: "redis://HOST:PORT",
};

/// The PID from `INFO server` if this host runs a Redis process with it. A server in a
/// container (port forwarded to localhost) reports a PID of its own namespace, which may
/// name an unrelated local process: sampling that would be wrong, so it is checked.
pub(super) fn local_redis_pid(pid: u32) -> Option<u32> {
    if !process::has_procfs() {
        // No procfs to check against (not Linux): trust the server.
        return Some(pid);
    }
    process::is_named(pid, "redis").then_some(pid)
}
