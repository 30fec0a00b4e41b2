//! Where every run's result begins.

use super::manifest::Manifest;
use super::settings::Settings;
use super::warnings::Warning;
use super::{DatasetInfo, EngineInfo, RunResult, RunState, RunStatus, SCHEMA};

impl RunResult {
    /// A run as it starts: running, nothing measured, the warnings said so far. Dense,
    /// sparse and hybrid runs all begin here; `runner::finish` ends them.
    pub fn start(
        engine: &str,
        in_process: bool,
        dataset: DatasetInfo,
        settings: Settings,
        warnings: Vec<Warning>,
    ) -> RunResult {
        RunResult {
            schema: SCHEMA.to_string(),
            status: RunStatus {
                state: RunState::Running,
                error: None,
                resumed: Vec::new(),
                invalid: Vec::new(),
            },
            manifest: Manifest::new(settings),
            dataset,
            engine: EngineInfo {
                name: engine.to_string(),
                version: String::new(),
                in_process,
                details: serde_json::Map::new(),
            },
            configs: Vec::new(),
            warnings,
            curves: Vec::new(),
            sidecar: None,
            element_type: None,
        }
    }
}
