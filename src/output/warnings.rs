//! Prints the warnings a run carries (the type lives with the results: [`Warning`]).

pub use crate::results::warnings::Warning;

/// Prints warnings to stderr, one per line.
pub fn print(warnings: &[Warning]) {
    for w in warnings {
        eprintln!("warning: {w}");
    }
}
