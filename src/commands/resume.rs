//! `ragdbeval bench --resume RESULT.json`: continue a run that stopped before its end.
//!
//! The run is continued with its own command line, read back from the result's manifest, so
//! that its settings, engine collection and ground truth (cached under the same key) are the
//! ones it started with. Only what a stopped run may legitimately need to change can be given
//! again: `--url` and `--timeout` (a server restarted on another port), `--api-key-env`, `-q`
//! and `--json`. A password the run's URL held is not in the result (see [`crate::secret`]):
//! it is asked for again, in `--url` or the environment.
//! The runner keeps every finished step, replays the build and write steps before the resume
//! point to bring the collection back to their state (without measuring them again), and
//! continues from the first unfinished step. The result records each resumption.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail};
use clap::Parser;

use crate::cli::{BenchArgs, Cli, Command};
use crate::dataset::Dataset;
use crate::results::run_files::{self, Redo};
use crate::results::sidecar::Sidecar;
use crate::results::warnings::Warning;
use crate::results::{Resumption, RunResult, RunState, manifest};

/// What a resumed run starts from.
pub(super) struct Resume {
    pub previous: RunResult,
    /// The options given again (`--url …`, `--timeout …`), for the record.
    pub overrides: Vec<String>,
}

/// Options that may accompany `--resume`: (option, takes a value).
const ALLOWED: &[(&str, bool)] = &[
    ("--resume", true),
    ("--url", true),
    ("--timeout", true),
    ("--api-key-env", true),
    ("-q", false),
    ("--quiet", false),
    ("--json", false),
];

/// The arguments of the run to continue, and the earlier attempt's result.
pub(super) fn prepare(args: &BenchArgs, path: &Path) -> anyhow::Result<(BenchArgs, Resume)> {
    let overrides = given_options(std::env::args().skip_while(|a| a != "bench").skip(1))?;
    let previous = RunResult::load(path)?;
    if previous.status.state == RunState::Completed {
        bail!(
            "{} is a completed run: there is nothing to resume",
            path.display()
        );
    }
    let cli = Cli::try_parse_from(&previous.manifest.command_line).map_err(|e| {
        anyhow!(
            "{}: the command line of the run cannot be read back ({})",
            path.display(),
            e.to_string().lines().next().unwrap_or("unknown reason")
        )
    })?;
    let Command::Bench(mut original) = cli.command else {
        bail!(
            "{}: it was not written by `ragdbeval bench`",
            path.display()
        );
    };
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or_else(|| anyhow!("{}: not a result file name", path.display()))?;
    // Continue in the file given, wherever it was moved to.
    original.name = Some(stem.to_string());
    original.out = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    original.resume = None;
    original.quiet |= args.quiet;
    original.json = args.json;
    let mut given = Vec::new();
    if overrides.iter().any(|o| o == "--url") {
        original.url = args.url.clone();
        given.push(format!(
            "--url {}",
            crate::secret::redact(args.url.as_deref().unwrap_or(""))
        ));
    }
    if overrides.iter().any(|o| o == "--timeout") {
        original.timeout = args.timeout;
        given.push(format!("--timeout {}", args.timeout));
    }
    if overrides.iter().any(|o| o == "--api-key-env") {
        original.api_key_env = args.api_key_env.clone();
        given.push(format!(
            "--api-key-env {}",
            args.api_key_env.as_deref().unwrap_or("")
        ));
    }
    if !overrides.iter().any(|o| o == "--url") {
        original.url = without_redacted_password(&original, path)?;
    }
    Ok((
        original,
        Resume {
            previous,
            overrides: given,
        },
    ))
}

/// The URL to reconnect with when it is not given again: the recorded one, and when that held
/// a password (redacted in the result), the URL without it, provided the password can come
/// from the environment: `--api-key-env`, or the engine's own variable (`PGPASSWORD`).
fn without_redacted_password(original: &BenchArgs, path: &Path) -> anyhow::Result<Option<String>> {
    let Some(url) = original
        .url
        .as_deref()
        .filter(|u| crate::secret::is_redacted(u))
    else {
        return Ok(original.url.clone());
    };
    let password_env = crate::adapters::find(&original.engine)
        .and_then(|e| e.meta.server.as_ref())
        .and_then(|s| s.password_env);
    let from_env = original.api_key_env.is_some()
        || password_env.is_some_and(|v| std::env::var_os(v).is_some_and(|p| !p.is_empty()));
    if !from_env {
        let set = match password_env {
            Some(var) => format!("set {var}, or "),
            None => String::new(),
        };
        bail!(
            "{}: the run's --url `{url}` held a password, which result files do not keep: {set}\
             give the password again with --resume, as --url with the password in it or as \
             --api-key-env NAME (an environment variable holding it)",
            path.display()
        );
    }
    Ok(Some(crate::secret::without_redacted_password(url)))
}

/// The options on the command line besides `bench`, by name; an option that may not
/// accompany `--resume` is an error.
fn given_options(argv: impl Iterator<Item = String>) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    let mut argv = argv.peekable();
    while let Some(arg) = argv.next() {
        let name = arg.split_once('=').map_or(arg.as_str(), |(n, _)| n);
        let Some(&(option, takes_value)) = ALLOWED.iter().find(|(o, _)| *o == name) else {
            bail!(
                "`{arg}` cannot be given with --resume: the run continues with the settings it \
                 started with (only --url, --timeout, --api-key-env, -q and --json may be given \
                 again)"
            );
        };
        if takes_value && !arg.contains('=') {
            argv.next();
        }
        out.push(option.to_string());
    }
    Ok(out)
}

/// Takes the earlier attempt's finished work into `result` after checking that the run
/// would continue on the same data and settings.
pub(super) fn adopt(resume: Resume, result: &mut RunResult, ds: &Dataset) -> anyhow::Result<()> {
    let previous = resume.previous;
    let was = &previous.dataset;
    if was.sha256 != ds.sha256 || was.train != ds.train.len() || was.queries != ds.test.len() {
        bail!(
            "the dataset is not the one the run started with (SHA-256 {}, {} × {} queries; now \
             {}, {} × {}): resume from the directory the run started in, with the same data",
            short(&was.sha256),
            was.train,
            was.queries,
            short(&ds.sha256),
            ds.train.len(),
            ds.test.len()
        );
    }
    let (mut then, mut now) = (
        previous.manifest.settings.to_map(),
        result.manifest.settings.to_map(),
    );
    // The settings that may be given again, and those a newer ragdbeval records that the
    // earlier attempt's did not.
    for s in [&mut then, &mut now] {
        s.remove("url");
    }
    now.retain(|key, _| then.contains_key(key));
    if then != now {
        let differ: Vec<&String> = now
            .iter()
            .filter(|(k, v)| then.get(*k) != Some(*v))
            .map(|(k, _)| k)
            .collect();
        let list = differ
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        bail!(
            "the run's settings no longer resolve to what it started with ({list} differ; was a \
             runbook or parameter file edited?): start a new run instead"
        );
    }
    let steps_kept = previous.configs.iter().map(|c| c.steps.len()).sum();
    result.status.resumed = previous.status.resumed.clone();
    result.status.resumed.push(Resumption {
        at: manifest::now(),
        previous_state: previous.status.state.clone(),
        previous_error: previous.status.error.clone(),
        steps_kept,
        overrides: resume.overrides,
    });
    result.manifest.started_at = previous.manifest.started_at.clone();
    result.manifest.command_line = previous.manifest.command_line.clone();
    result.configs = previous.configs;
    // The earlier warnings include the ones this start has just raised again.
    let fresh = std::mem::replace(&mut result.warnings, previous.warnings);
    for w in fresh {
        if !result.warnings.contains(&w) {
            result.warnings.push(w);
        }
    }
    Ok(())
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// The sidecar of a resumed run, started from what its earlier attempts left (see
/// [`run_files::recover`]): the kept steps are cut back before the first search step whose
/// per-query lines are missing, which is said and recorded; unreadable lines are reported.
/// The temporary copies of the result a killed attempt left are removed.
pub(super) fn reopen_files(
    result: &mut RunResult,
    result_path: &Path,
    sidecar_path: &Path,
    no_sidecar: bool,
) -> anyhow::Result<Option<Sidecar>> {
    for tmp in crate::atomic::leftover_temps(result_path) {
        let _ = std::fs::remove_file(tmp);
    }
    if no_sidecar {
        return Ok(None);
    }
    let recovered = run_files::recover(result, sidecar_path);
    let source = recovered.source.as_ref();
    if let Some(s) = source.filter(|s| s.unreadable > 0) {
        eprintln!(
            "warning: {}: {} unreadable line(s) left out (cut off when the run was stopped, \
             or damaged)",
            s.path.display(),
            s.unreadable
        );
    }
    if let Some(redo) = &recovered.redo {
        let note = redo_note(redo, source.map(|s| s.path.as_path()), sidecar_path);
        eprintln!("warning: {note}");
        result.warnings.push(Warning::Note { detail: note });
        if let Some(resumption) = result.status.resumed.last_mut() {
            resumption.steps_kept = result.configs.iter().map(|c| c.steps.len()).sum();
        }
    }
    let source = source.map(|s| s.path.as_path());
    Ok(Some(Sidecar::resume(
        sidecar_path,
        source,
        kept_step(result),
    )?))
}

/// What a resumed run measures again, and why.
fn redo_note(redo: &Redo, source: Option<&Path>, sidecar: &Path) -> String {
    let from = match source {
        Some(path) => format!("missing from {}", path.display()),
        None => format!(
            "missing ({} and its temporary files are gone)",
            sidecar.display()
        ),
    };
    let after = match redo.dropped {
        0 | 1 => String::new(),
        n => format!(", with the {} step(s) after it", n - 1),
    };
    format!(
        "resumed: the per-query lines of configuration {} step {} (the search of runbook step \
         {}) were {from}: that step is measured again{after}",
        redo.config + 1,
        redo.step + 1,
        redo.runbook_step
    )
}

/// Whether the sidecar line of (config, step) belongs to a step the result kept.
pub(super) fn kept_step(result: &RunResult) -> impl Fn(usize, usize) -> bool + '_ {
    |config, step| {
        result
            .configs
            .get(config)
            .is_some_and(|c| step < c.steps.len())
    }
}

#[cfg(test)]
mod tests {
    use super::given_options;

    fn given(args: &[&str]) -> Result<Vec<String>, String> {
        given_options(args.iter().map(|s| s.to_string())).map_err(|e| e.to_string())
    }

    #[test]
    fn only_the_allowed_options_accompany_resume() {
        assert_eq!(
            given(&["--resume", "r.json", "--url", "postgres://x", "-q"]).unwrap(),
            ["--resume", "--url", "-q"]
        );
        assert_eq!(
            given(&["--resume=r.json", "--timeout=5"]).unwrap(),
            ["--resume", "--timeout"]
        );
        let err = given(&["--resume", "r.json", "--db", "exact"]).unwrap_err();
        assert!(
            err.contains("`--db` cannot be given with --resume"),
            "{err}"
        );
        let err = given(&["--resume", "r.json", "-k", "5"]).unwrap_err();
        assert!(err.contains("`-k`"), "{err}");
    }
}
