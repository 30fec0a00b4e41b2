//! ragdbeval: a benchmark suite for vector databases.
//!
//! The data path is a straight line: [`dataset`] → [`runner`] (phases) → an engine adapter
//! ([`engine::VectorEngine`], implementations in [`adapters`]) → [`metrics`] → [`results`]
//! (JSON + per-query sidecar) → [`export`] and [`output`] (reports, terminal).

pub mod atomic;
pub mod cli;
pub mod commands;
pub mod dataset;
pub mod distance;
pub mod embed;
pub mod engine;
pub mod engine_meta;
pub mod eval;
pub mod export;
pub mod filter;
pub mod groundtruth;
pub mod interrupt;
pub mod metrics;
pub mod output;
pub mod params;
pub mod resources;
pub mod results;
pub mod rng;
pub mod runbook;
pub mod runner;
pub mod secret;
pub mod sparse;
pub mod storage;
pub mod synthetic;
pub mod text;
pub mod types;
pub mod vectors;

/// Engine adapters live at the top level of the repository, one folder per engine.
#[path = "../adapters/mod.rs"]
pub mod adapters;
