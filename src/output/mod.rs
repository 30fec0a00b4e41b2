//! What the user sees on the terminal while and after a run: progress bars, warnings and the
//! summary table. Nothing here computes a figure.

pub mod progress;
pub mod table;
pub mod warnings;
