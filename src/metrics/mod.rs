//! Metrics: search quality against ground truth, latency distributions, and the registry
//! that names every reported figure once for all outputs.

pub mod latency;
pub mod pareto;
pub mod quality;
pub mod registry;
