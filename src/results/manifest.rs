//! The run manifest: enough to reproduce a result and to judge whether two results are
//! comparable (same binary, same data, same machine class, same settings).

use serde::{Deserialize, Serialize};
use sysinfo::System;

/// The machine a run was measured on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hardware {
    pub cpu_model: String,
    pub logical_cores: usize,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub physical_cores: Option<usize>,
    pub ram_bytes: u64,
    pub os: String,
    pub kernel: String,
    pub arch: String,
}

impl Hardware {
    pub fn detect() -> Hardware {
        let mut sys = System::new();
        sys.refresh_cpu_all();
        sys.refresh_memory();
        let cpu_model = sys
            .cpus()
            .first()
            .map(|c| c.brand().trim().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "unknown".into());
        let (logical_cores, ram_bytes) = (sys.cpus().len().max(1), sys.total_memory());
        Hardware {
            cpu_model,
            logical_cores,
            physical_cores: System::physical_core_count(),
            ram_bytes,
            os: System::long_os_version().unwrap_or_else(|| std::env::consts::OS.into()),
            kernel: System::kernel_version().unwrap_or_default(),
            arch: std::env::consts::ARCH.into(),
        }
    }
}

/// Who measured what, when, with which settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub ragdbeval_version: String,
    /// Git revision ragdbeval was built from (`-dirty` if the tree had changes).
    pub git_revision: String,
    /// The full command line, its secrets redacted ([`crate::secret`]).
    pub command_line: Vec<String>,
    pub started_at: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub finished_at: Option<String>,
    pub hardware: Hardware,
    /// Harness settings (k, relevant, warm-up, batch size, parameter set, ...).
    pub settings: super::settings::Settings,
    /// The run this one repeats (`bench --from`), if it does.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reproduces: Option<Reproduced>,
}

/// The run a `bench --from` run repeats, as that run's result recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reproduced {
    /// Its result file, as given.
    pub result: String,
    pub started_at: String,
    pub engine_version: String,
}

impl Manifest {
    pub fn new(settings: super::settings::Settings) -> Manifest {
        Manifest {
            ragdbeval_version: env!("CARGO_PKG_VERSION").to_string(),
            git_revision: env!("RAGDBEVAL_GIT_REVISION").to_string(),
            command_line: crate::secret::redact_args(std::env::args()),
            started_at: now(),
            finished_at: None,
            hardware: Hardware::detect(),
            settings,
            reproduces: None,
        }
    }
}

/// Current time as RFC 3339 in UTC.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
