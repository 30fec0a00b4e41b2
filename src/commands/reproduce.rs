//! `ragdbeval bench --from RESULT.json`: run again what a result records, on this machine.
//!
//! The recorded command line is run as it was, with the options given beside `--from` in
//! place of its own (where the result goes, the server's address, where the data is). The
//! dataset must be the very one (SHA-256, points and queries), or nothing runs; an engine
//! version or a harness setting that differs from the recorded run's is said in the new
//! result as a warning, and the result records which run it repeats. `compare` with the
//! original is the next step, and the command says so when it ends.

use std::path::Path;

use anyhow::{anyhow, bail};
use clap::Parser;

use crate::cli::{BenchArgs, Cli, Command, Reproduces};
use crate::dataset::Dataset;
use crate::results::manifest::Reproduced;
use crate::results::warnings::Warning;
use crate::results::{RunResult, RunState};

/// Options that may accompany `--from`: (long name, short name, takes a value). Each
/// replaces the recorded run's own.
const ALLOWED: &[(&str, Option<&str>, bool)] = &[
    ("--from", None, true),
    ("--out", Some("-o"), true),
    ("--name", None, true),
    ("--url", None, true),
    ("--timeout", None, true),
    ("--api-key-env", None, true),
    ("--data-dir", None, true),
    ("--offline", None, false),
    ("--quiet", Some("-q"), false),
    ("--json", None, false),
];

/// Never carried over from the recorded command line.
const DROPPED: &[&str] = &["--resume", "--name", "--out"];

/// The arguments of the run to repeat, with what it repeats in `reproduces`.
pub(super) fn prepare(path: &Path) -> anyhow::Result<BenchArgs> {
    let given: Vec<String> = std::env::args()
        .skip_while(|a| a != "bench")
        .skip(1)
        .collect();
    let given_names = option_names(&given)?;
    let previous = RunResult::load(path)?;
    if previous.status.state != RunState::Completed {
        eprintln!(
            "warning: {} is a {:?} run: its steps that finished are what a comparison can use",
            path.display(),
            previous.status.state
        );
    }
    let recorded = &previous.manifest.command_line;
    if recorded.get(1).map(String::as_str) != Some("bench") {
        bail!(
            "{}: it was not written by `ragdbeval bench` (its command line: {})",
            path.display(),
            recorded.join(" ")
        );
    }
    let mut argv = without(recorded, &given_names);
    argv.extend(without(&given, &["--from"]));
    let cli = Cli::try_parse_from(&argv).map_err(|e| {
        anyhow!(
            "{}: its command line cannot be run by this ragdbeval ({})",
            path.display(),
            e.to_string().lines().next().unwrap_or("unknown reason")
        )
    })?;
    let Command::Bench(mut args) = cli.command else {
        bail!(
            "{}: it was not written by `ragdbeval bench`",
            path.display()
        );
    };
    args.reproduces = Some(Reproduces {
        result: path.to_path_buf(),
        dataset_sha256: previous.dataset.sha256.clone(),
        train: previous.dataset.train,
        queries: previous.dataset.queries,
        engine_version: previous.engine.version.clone(),
        started_at: previous.manifest.started_at.clone(),
        settings: previous.manifest.settings.to_map(),
        command_line: crate::secret::redact_args(argv),
    });
    Ok(args)
}

/// The long names of the options in `argv`; one that may not accompany `--from` is an error.
fn option_names(argv: &[String]) -> anyhow::Result<Vec<&'static str>> {
    let mut names = Vec::new();
    let mut args = argv.iter();
    while let Some(arg) = args.next() {
        let name = arg.split_once('=').map_or(arg.as_str(), |(n, _)| n);
        let Some(&(long, _, takes_value)) = ALLOWED
            .iter()
            .find(|(long, short, _)| *long == name || *short == Some(name))
        else {
            bail!(
                "`{arg}` cannot be given with --from: the run repeats the recorded one's \
                 settings (only --out, --name, --url, --timeout, --api-key-env, --data-dir, \
                 --offline, -q and --json may be given with it)"
            );
        };
        if takes_value && !arg.contains('=') {
            args.next();
        }
        names.push(long);
    }
    names.extend_from_slice(DROPPED);
    Ok(names)
}

/// `argv` without the options named in `drop` (long or short, with their values).
fn without(argv: &[String], drop: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut args = argv.iter();
    while let Some(arg) = args.next() {
        let name = arg.split_once('=').map_or(arg.as_str(), |(n, _)| n);
        let known = ALLOWED
            .iter()
            .map(|(long, short, value)| (*long, *short, *value))
            .chain(std::iter::once(("--resume", None, true)))
            .find(|(long, short, _)| *long == name || *short == Some(name));
        match known {
            Some((long, _, takes_value)) if drop.contains(&long) => {
                if takes_value && !arg.contains('=') {
                    args.next();
                }
            }
            _ => out.push(arg.clone()),
        }
    }
    out
}

/// Refuses data other than the recorded run's.
pub(super) fn check_dataset(r: &Reproduces, ds: &Dataset) -> anyhow::Result<()> {
    if r.dataset_sha256 == ds.sha256 && r.train == ds.train.len() && r.queries == ds.test.len() {
        return Ok(());
    }
    bail!(
        "the dataset is not the one {} measured (SHA-256 {}, {} points, {} queries; here {}, \
         {}, {}): give the same data (--data-dir, or the same file at the recorded path)",
        r.result.display(),
        short(&r.dataset_sha256),
        r.train,
        r.queries,
        short(&ds.sha256),
        ds.train.len(),
        ds.test.len()
    )
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

/// Records in `result` which run it repeats and the command line it ran, and warns of
/// harness settings that differ from that run's (a default changed between versions).
pub(super) fn record(r: &Reproduces, result: &mut RunResult) {
    result.manifest.command_line = r.command_line.clone();
    result.manifest.reproduces = Some(Reproduced {
        result: r.result.display().to_string(),
        started_at: r.started_at.clone(),
        engine_version: r.engine_version.clone(),
    });
    let now = result.manifest.settings.to_map();
    let differ: Vec<&str> = now
        .iter()
        .filter(|(k, v)| k.as_str() != "url" && r.settings.get(*k).is_some_and(|then| then != *v))
        .map(|(k, _)| k.as_str())
        .collect();
    if !differ.is_empty() {
        result.warnings.push(Warning::Note {
            detail: format!(
                "settings differ from those of the run repeated ({}): {}",
                r.result.display(),
                differ.join(", ")
            ),
        });
    }
}

/// Warns when the engine is not the version the repeated run measured.
pub(super) fn check_engine(r: &Reproduces, result: &mut RunResult) {
    if result.engine.version.is_empty() || result.engine.version == r.engine_version {
        return;
    }
    result.warnings.push(Warning::Note {
        detail: format!(
            "engine version {} differs from the run repeated ({}: {})",
            result.engine.version,
            r.result.display(),
            r.engine_version
        ),
    });
}

/// The line that ends a repeated run: how to compare it with the original.
pub(super) fn next_step(r: &Reproduces, new: &Path) -> String {
    let quote = |p: &Path| {
        let text = p.display().to_string();
        if text.contains(' ') {
            format!("'{text}'")
        } else {
            text
        }
    };
    format!(
        "compare with the run repeated: ragdbeval compare {} {}",
        quote(&r.result),
        quote(new)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_recorded_options_given_again_are_replaced() {
        let given = strings("--from r.json --out new -q --url=http://127.0.0.1:2");
        let names = option_names(&given).unwrap();
        let recorded = strings(
            "ragdbeval bench --db pgvector --url http://127.0.0.1:1 -o old --name a -k 10 -q",
        );
        let mut argv = without(&recorded, &names);
        assert_eq!(argv, strings("ragdbeval bench --db pgvector -k 10"));
        argv.extend(without(&given, &["--from"]));
        assert_eq!(
            argv,
            strings("ragdbeval bench --db pgvector -k 10 --out new -q --url=http://127.0.0.1:2")
        );
    }

    #[test]
    fn an_option_that_changes_the_run_is_refused() {
        let e = option_names(&strings("--from r.json -k 5"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`-k` cannot be given with --from"), "{e}");
    }
}
