//! Progress bars for long steps (downloads, hashing, ground truth, loading, querying).
//! Hidden with `--quiet`, under `--json`, and when stderr is not a terminal, so that scripts
//! and CI logs stay clean.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

fn hidden_or(quiet: bool, bar: ProgressBar) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    } else {
        bar.enable_steady_tick(Duration::from_millis(200));
    }
    bar
}

/// A bar counting items (vectors, queries).
pub fn count_bar(total: u64, label: &str, quiet: bool) -> ProgressBar {
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix:>14} [{bar:40}] {human_pos}/{human_len} ({per_sec}, eta {eta})",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(label.to_string());
    hidden_or(quiet, bar)
}

/// A bar counting bytes (downloads, hashing); `total` may be unknown.
pub fn bytes_bar(total: Option<u64>, label: &str, quiet: bool) -> ProgressBar {
    let bar = match total {
        Some(t) => ProgressBar::new(t),
        None => ProgressBar::no_length(),
    };
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix:>14} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(label.to_string());
    hidden_or(quiet, bar)
}

/// A spinner for waits of unknown length (index build, optimizer).
pub fn spinner(label: &str, quiet: bool) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{prefix:>14} {spinner} {elapsed}") {
        bar.set_style(style);
    }
    bar.set_prefix(label.to_string());
    hidden_or(quiet, bar)
}
