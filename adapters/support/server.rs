//! Local servers through the scripts in `scripts/servers/`: when a server engine gets no
//! `--url`, it runs `scripts/servers/<name>.sh start`, which starts the server (installing it
//! on first use) or finds it already running, and prints its URL as the last line of stdout.
//! The server is left running for later runs; `scripts/servers/<name>.sh stop` stops it.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::engine::{EngineError, EngineResult};

/// Path of the server script of `name` (`pgvector`, `chroma`, `redis`).
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scripts/servers")
        .join(format!("{name}.sh"))
}

/// A server the adapter can start through its script.
pub struct LocalServer {
    /// Engine name for messages, and the script's name.
    pub engine: &'static str,
    /// URL prefixes the script's output line may start with (`redis://`).
    pub schemes: &'static [&'static str],
    /// What `--url` looks like for this engine, for the error messages.
    pub url_example: &'static str,
}

impl LocalServer {
    /// What to tell a user whose server cannot be reached.
    pub fn hint(&self) -> String {
        format!(
            "start it with `scripts/servers/{}.sh start` (it prints the URL) or pass --url {} \
             of a running server",
            self.engine, self.url_example
        )
    }

    /// Runs the script's `start` verb and returns the URL it printed (without a trailing
    /// `/`). The script's stderr is inherited: a first start installs the server, and the
    /// user should see that rather than a silent wait.
    pub fn start(&self) -> EngineResult<String> {
        let script = script(self.engine);
        let shown = script.display();
        let unreachable = |message: String| EngineError::Unreachable {
            engine: self.engine.into(),
            target: format!("a local server ({shown} start)"),
            message,
        };
        let pass_url = format!("pass --url {} of a running server", self.url_example);
        if !script.is_file() {
            return Err(unreachable(format!(
                "no --url given and the server script is missing; {pass_url}"
            )));
        }
        eprintln!(
            "{}: no --url given; starting a local server with {shown} start",
            self.engine
        );
        let output = Command::new("bash")
            .arg(&script)
            .arg("start")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| unreachable(format!("cannot run the script: {e}; {pass_url}")))?;
        if !output.status.success() {
            return Err(unreachable(format!(
                "the script failed ({}; see its messages above and \
                 $RAGDBEVAL_SERVER_DIR/{}/log); {pass_url}",
                output.status, self.engine
            )));
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        stdout
            .lines()
            .map(str::trim)
            .rfind(|l| self.schemes.iter().any(|s| l.starts_with(s)))
            .map(|url| url.trim_end_matches('/').to_string())
            .ok_or_else(|| {
                unreachable(format!(
                    "the script printed no URL (stdout: {:?}); {pass_url}",
                    stdout.trim()
                ))
            })
    }
}

/// The scripts' state directory of `name` (`$RAGDBEVAL_SERVER_DIR/<name>`, by default under
/// `/tmp/ragdbeval-servers`): `pid`, `url`, `log` and the server's data.
pub fn state_dir(name: &str) -> PathBuf {
    let base = std::env::var_os("RAGDBEVAL_SERVER_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/ragdbeval-servers"));
    base.join(name)
}
