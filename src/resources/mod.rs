//! Resource sampling: peak memory and mean CPU of the client process and, when the engine runs
//! as a separate local process, of the engine's process tree, over each phase.
//!
//! Everything is read from `/proc` (Linux), counting **processes, never threads**: on Linux
//! every thread is a task with its own `/proc/PID/task/TID` entry, and tools that list tasks
//! as processes (sysinfo does) report each thread with the whole process's RSS and CPU, which
//! multiplied a server's figures by its thread count.
//!
//! - **Tree**: the engine's root PID and its descendants, found through
//!   `/proc/PID/task/*/children` (each thread lists the children it forked), or, on kernels
//!   without that file, by scanning every `/proc/PID/stat` for its parent PID.
//! - **Memory** of the engine tree: PSS (`/proc/PID/smaps_rollup`) summed over the tree's
//!   processes. PSS divides each shared page among the processes mapping it, so PostgreSQL's
//!   shared buffers, mapped by every forked backend, count once; summed RSS would count them
//!   once per backend. When any process's `smaps_rollup` cannot be read (another user's
//!   process without the right to read it, a kernel before 4.14), the phase falls back to
//!   summed RSS and says so in `memory_method` and `memory_note`. The client is one process;
//!   its figure is its RSS (`VmRSS`), `memory_method = rss`.
//! - **CPU**: `utime + stime` of each process (the kernel's sum over all its threads), plus,
//!   in the engine tree, `cutime + cstime` (children that exited and were reaped inside the
//!   tree, such as PostgreSQL backends of closed connections, keep their CPU there). The mean
//!   is the difference between the first and last sample divided by wall time, so it is exact
//!   up to clock ticks rather than an average of noisy samples. 100 % means one core busy.
//!
//! A figure no machine can produce (CPU above 100 % × cores, memory above the machine's RAM)
//! is a measurement bug: [`check`] turns it into an error, and `runner::warnings::resource_warnings` into a
//! warning stored with the result.
//!
//! Layout: the figures ([`ResourceStats`], [`PhaseResources`]) and what to watch ([`Watch`])
//! are here; `procfs` reads and parses `/proc`, `sampler` turns readings taken over a phase
//! into figures, and `sanity` rejects figures this machine cannot produce.

mod procfs;
mod sampler;
mod sanity;

use serde::{Deserialize, Serialize};

pub use procfs::{
    ProcStat, Reading, parse_smaps_rollup, parse_stat, parse_status_rss, process_tree, read_usage,
    tree_from_children_files, tree_from_scan,
};
pub use sampler::{Sampler, current_rss};
pub use sanity::{Implausible, MachineLimits, check};

/// How a [`ResourceStats`]' memory figure was obtained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryMethod {
    /// Older files (no `memory_method` field): `peak_rss_bytes` summed RSS
    /// over every task the sampler listed, threads included, so a multi-threaded server's
    /// figure was multiplied by its thread count. Not comparable with newer files.
    #[default]
    Legacy,
    /// Peak of the PSS summed over the processes (`peak_pss_bytes`).
    Pss,
    /// Peak of the RSS summed over the processes (`peak_rss_bytes`): pages shared between
    /// processes count once per process.
    Rss,
    /// Nothing could be read (no `/proc`, or the process was gone).
    Unavailable,
}

/// Resource use of one process (tree) over one phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceStats {
    pub pid: u32,
    /// Peak of the RSS summed over the processes of the tree (each process once, threads
    /// never). Always measured; the headline figure only when `memory_method` is `rss`.
    pub peak_rss_bytes: u64,
    /// Peak of the PSS summed over the processes of the tree, when every sample could read
    /// every process's PSS (`memory_method` = `pss`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_pss_bytes: Option<u64>,
    /// Which of the two peaks is the memory figure: see [`ResourceStats::peak_memory_bytes`].
    #[serde(default)]
    pub memory_method: MemoryMethod,
    /// Why the memory figure is not PSS where PSS was wanted (the engine tree).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_note: Option<String>,
    pub mean_cpu_percent: f64,
    pub cpu_seconds: f64,
    pub wall_seconds: f64,
    pub samples: u64,
    /// Most processes seen in the tree at one sample (1 for the client).
    #[serde(default)]
    pub peak_processes: u64,
}

impl ResourceStats {
    /// The memory figure to report: the PSS peak when measured, else the RSS peak (also for
    /// old files, whose `memory_method` is `legacy`).
    pub fn peak_memory_bytes(&self) -> u64 {
        match (self.memory_method, self.peak_pss_bytes) {
            (MemoryMethod::Pss, Some(pss)) => pss,
            _ => self.peak_rss_bytes,
        }
    }
}

/// Which processes to watch: the client itself and optionally an engine server (with its
/// child processes, as PostgreSQL forks one backend per connection).
#[derive(Debug, Clone, Copy)]
pub struct Watch {
    pub client: u32,
    pub engine: Option<u32>,
}

impl Watch {
    pub fn client_only() -> Watch {
        Watch {
            client: std::process::id(),
            engine: None,
        }
    }

    pub fn with_engine(engine: Option<u32>) -> Watch {
        Watch {
            client: std::process::id(),
            engine,
        }
    }
}

/// Stats for both sides of a phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseResources {
    pub client: ResourceStats,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub engine: Option<ResourceStats>,
}

#[cfg(test)]
mod tests;
