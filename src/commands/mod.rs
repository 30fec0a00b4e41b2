//! The commands behind the CLI: each turns parsed arguments into calls on the library and
//! decides what to print. Errors bubble up as `anyhow` with context for the user.

mod bench;
mod compare;
mod dataset;
mod embed;
mod engines;
mod eval;
mod filters;
mod merge;
mod report;
mod reproduce;
mod resume;
mod shell;
mod verify;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

/// Runs one command; `Ok` carries the exit code.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Bench(args) => bench::run(args),
        Command::Dataset(cmd) => dataset::run(cmd),
        Command::Engines => engines::run(),
        Command::Report(args) => report::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Embed(args) => embed::run(args),
        Command::Completions(args) => shell::completions(args),
        Command::Man(args) => shell::man(args),
    }
}
