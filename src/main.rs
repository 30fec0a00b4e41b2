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
    quiet_on_closed_stdout();
    let cli = ragdbeval::cli::Cli::parse();
    match ragdbeval::commands::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", ragdbeval::secret::redact(&one_line(&err)));
            ExitCode::from(2)
        }
    }
}

/// `ragdbeval engines | head` closes the pipe early, and `println!` panics on the broken
/// pipe. Such a reader wants no more output, so the process ends at once with the exit status
/// a shell gives a command killed by SIGPIPE (128 + 13), and says nothing. SIGPIPE itself
/// stays ignored: a server engine's closed socket must be an error, not a kill.
fn quiet_on_closed_stdout() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        previous(info);
    }));
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
