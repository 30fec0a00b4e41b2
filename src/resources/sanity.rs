//! Sanity checks: a figure no machine like this one can produce is a measurement bug.

use super::procfs::{clock_ticks, parse_kb};
use super::{MemoryMethod, ResourceStats};

/// What this machine can physically produce.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MachineLimits {
    /// Online CPUs (not this process's affinity: a server may run on all of them).
    pub cores: u64,
    /// `MemTotal` of `/proc/meminfo`; `None` when unknown (no memory check then).
    pub ram_bytes: Option<u64>,
    /// Clock ticks per second of the CPU times (their granularity).
    pub ticks_per_second: f64,
}

impl MachineLimits {
    pub fn this_machine() -> MachineLimits {
        // SAFETY: sysconf only reads a value of the C library / kernel.
        let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        let cores = if online > 0 {
            online as u64
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
        };
        let ram_bytes = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(parse_kb)
        });
        MachineLimits {
            cores,
            ram_bytes,
            ticks_per_second: clock_ticks(),
        }
    }
}

/// A resource figure no machine like this one can produce: a measurement bug.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Implausible {
    #[error(
        "{cpu_percent:.0}% CPU (pid {pid}: {cpu_seconds:.2} s CPU in {wall_seconds:.2} s) \
         exceeds {cores} cores × 100%"
    )]
    Cpu {
        pid: u32,
        cpu_percent: f64,
        cpu_seconds: f64,
        wall_seconds: f64,
        cores: u64,
    },
    #[error(
        "peak memory {bytes} bytes (pid {pid}, {method:?}) exceeds the machine's RAM of \
         {ram_bytes} bytes"
    )]
    Memory {
        pid: u32,
        bytes: u64,
        method: MemoryMethod,
        ram_bytes: u64,
    },
}

/// Checks that `stats` is physically possible on a machine with `limits`.
///
/// CPU times are counted in clock ticks per process, so each process read at the first and
/// last sample can add up to one tick of rounding at each end; that much is tolerated.
pub fn check(stats: &ResourceStats, limits: &MachineLimits) -> Result<(), Implausible> {
    let slack = 2.0 * stats.peak_processes.max(1) as f64 / limits.ticks_per_second;
    if stats.cpu_seconds > limits.cores as f64 * stats.wall_seconds + slack {
        return Err(Implausible::Cpu {
            pid: stats.pid,
            cpu_percent: stats.mean_cpu_percent,
            cpu_seconds: stats.cpu_seconds,
            wall_seconds: stats.wall_seconds,
            cores: limits.cores,
        });
    }
    let bytes = stats.peak_memory_bytes();
    if let Some(ram_bytes) = limits.ram_bytes
        && bytes > ram_bytes
    {
        return Err(Implausible::Memory {
            pid: stats.pid,
            bytes,
            method: stats.memory_method,
            ram_bytes,
        });
    }
    Ok(())
}
