//! Metrics: search quality against ground truth, latency distributions and Pareto curves.
//! They compute; the results store them; the registry that names every reported figure once
//! for all outputs lives with the exporters ([`crate::export::registry`]).

pub mod latency;
pub mod pareto;
pub mod quality;
pub mod stats;
