//! `ragdbeval completions SHELL` and `ragdbeval man`: the shell completions and man pages,
//! generated from the same argument definitions as `--help` (clap_complete, clap_mangen).

use std::process::ExitCode;

use anyhow::Context;
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs};

pub fn completions(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "ragdbeval", &mut script);
    print_all(&script)
}

/// Writes `bytes` to stdout. A reader that stops early (`| head`) ends the command quietly
/// with the status a shell gives a command killed by SIGPIPE.
fn print_all(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::from(141)),
        Err(e) => Err(e).context("writing to stdout"),
    }
}

/// The page of `ragdbeval` on stdout, or with `--out DIR` one page per command
/// (`ragdbeval.1`, `ragdbeval-bench.1`, `ragdbeval-dataset-make.1` …).
pub fn man(args: ManArgs) -> anyhow::Result<ExitCode> {
    let command = Cli::command();
    match &args.out {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(command, dir)
                .with_context(|| format!("writing man pages into {}", dir.display()))?;
            eprintln!("man pages written to {}", dir.display());
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command)
                .render(&mut page)
                .context("rendering the man page")?;
            return print_all(&page);
        }
    }
    Ok(ExitCode::SUCCESS)
}
