//! The `ragdbeval` command: parse arguments, run the command, turn errors into one clear line
//! and a non-zero exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // HDF5 locks files it opens, and a lock held by any process that inherited the descriptor
    // (a parallel writer's child, a network file system) makes reading a finished dataset
    // fail. ragdbeval only reads datasets and writes new files atomically, so locking buys
    // nothing. The user's own setting wins.
    if std::env::var_os("HDF5_USE_FILE_LOCKING").is_none() {
        // SAFETY: called first thing in main, before any other thread exists.
        unsafe { std::env::set_var("HDF5_USE_FILE_LOCKING", "FALSE") };
    }
    let cli = ragdbeval::cli::Cli::parse();
    match ragdbeval::commands::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", ragdbeval::secret::redact(&one_line(&err)));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes on one line, `: `-separated, each cause said once: an error that
/// embeds its source in its own message and also returns it as `source()` (io errors wrapped
/// by libraries often do) would otherwise print it twice.
fn one_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}
