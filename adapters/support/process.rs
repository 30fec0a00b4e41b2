//! Finding a local server's process, so its memory and CPU can be measured next to the
//! client's. All of it reads Linux `/proc`; elsewhere every lookup answers `None`/`false`
//! and the server-side columns stay empty.
//!
//! The adapters combine these in the way their server allows: by the port it listens on
//! (qdrant), by the pid file its data directory or start script keeps (pgvector, chroma), or
//! by the pid the server reports about itself, checked against the process name (redis,
//! pgvector's backend parent).

use std::collections::HashSet;
use std::fs;
use std::path::Path;

/// Whether this system has a `/proc` to check process ids against.
pub fn has_procfs() -> bool {
    Path::new("/proc/self").exists()
}

/// Whether process `pid` exists.
pub fn is_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Whether process `pid`'s command name starts with `prefix` (`postgres`, `redis`, ...).
pub fn is_named(pid: u32, prefix: &str) -> bool {
    fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim().starts_with(prefix))
        .unwrap_or(false)
}

/// The pid on the first line of a pid file (`postmaster.pid`, a start script's `pid`).
pub fn pid_from_file(path: &Path) -> Option<u32> {
    fs::read_to_string(path)
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

/// The parent of process `pid`.
pub fn parent_pid(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid ...`: the command name may contain spaces, so split after ')'.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Socket inodes of TCP listeners on `port`, from /proc/net/tcp and tcp6 (Linux).
fn listening_inodes(port: u16) -> HashSet<u64> {
    let mut inodes = HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 10 || fields[3] != "0A" {
                continue; // 0A = TCP_LISTEN
            }
            let local_port = fields[1]
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if local_port != Some(port) {
                continue;
            }
            if let Ok(inode) = fields[9].parse::<u64>()
                && inode != 0
            {
                inodes.insert(inode);
            }
        }
    }
    inodes
}

/// PID of the process listening on TCP `port` on this host, if /proc lets us see it.
/// A `docker-proxy` listener is not the server, so it yields `None` rather than a PID whose
/// memory would be reported as the server's.
pub fn listener_pid(port: u16) -> Option<u32> {
    let inodes = listening_inodes(port);
    if inodes.is_empty() {
        return None;
    }
    for entry in fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = fs::read_dir(entry.path().join("fd")) else {
            continue; // not ours to inspect, or gone
        };
        for fd in fds.flatten() {
            let Ok(target) = fs::read_link(fd.path()) else {
                continue;
            };
            let inode = target
                .to_str()
                .and_then(|t| t.strip_prefix("socket:["))
                .and_then(|t| t.strip_suffix(']'))
                .and_then(|t| t.parse::<u64>().ok());
            if inode.is_some_and(|i| inodes.contains(&i)) {
                let comm = fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
                if comm.trim() == "docker-proxy" {
                    return None;
                }
                return Some(pid);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_own_listener_pid() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        if has_procfs() {
            assert_eq!(listener_pid(port), Some(std::process::id()));
            assert!(is_alive(std::process::id()));
            assert!(parent_pid(std::process::id()).is_some());
        }
        drop(listener);
        assert_eq!(listener_pid(port), None);
    }
}
