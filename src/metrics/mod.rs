//! Metrics: search quality against ground truth, latency distributions, Pareto curves, and
//! the answer metrics of retrieval-augmented generation runs.
//! They compute; the results store them; the registry that names every reported figure once
//! for all outputs lives with the exporters ([`crate::export::registry`]).

pub mod answers;
pub mod bands;
pub mod latency;
pub mod pareto;
pub mod quality;
pub mod ranking;
pub mod stats;
