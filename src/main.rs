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
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
