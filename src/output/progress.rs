//! Progress bars for long steps (downloads, hashing, ground truth, loading, querying).
//! Hidden with `--quiet`, under `--json`, and when stderr is not a terminal, so that scripts
//! and CI logs stay clean.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::types::{Progress, ProgressHandle, ProgressTask, ProgressUnit};

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

/// The terminal as a [`Progress`] observer: the layers below report through it without
/// knowing how (or whether) anything is drawn.
#[derive(Debug, Clone, Copy)]
pub struct Terminal {
    pub quiet: bool,
}

/// A bar that disappears when its task ends.
struct BarTask(ProgressBar);

impl ProgressTask for BarTask {
    fn set(&self, done: u64) {
        self.0.set_position(done);
    }
}

impl Drop for BarTask {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

impl Progress for Terminal {
    fn task(&self, label: &str, total: Option<u64>, unit: ProgressUnit) -> Box<dyn ProgressTask> {
        Box::new(BarTask(match unit {
            ProgressUnit::Items => count_bar(total.unwrap_or(0), label, self.quiet),
            ProgressUnit::Bytes => bytes_bar(total, label, self.quiet),
            ProgressUnit::Wait => spinner(label, self.quiet),
        }))
    }

    fn message(&self, text: &str) {
        if !self.quiet {
            eprintln!("{text}");
        }
    }
}

/// Progress bars on stderr unless `quiet`.
pub fn terminal(quiet: bool) -> ProgressHandle {
    ProgressHandle(std::sync::Arc::new(Terminal { quiet }))
}
