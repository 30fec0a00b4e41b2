//! What a reader needs beside the registry's size figures to compare engines: what each
//! engine's index figure holds, the raw vectors' own size (the floor every total is compared
//! against) and the memory an engine holds once built. These depend on the run as well as
//! the row (its engine, its dataset's element type), so they are columns of their own in
//! both CSV exports, after the registry's.

use crate::export::registry::Row;
use crate::resources::{MemoryMethod, ResourceStats};
use crate::results::RunResult;
use crate::types::ElementType;

/// The size columns of both CSV exports, appended after `filter`.
pub const HEADERS: &[&str] = &[
    "index_holds",
    "raw_bytes_per_vector",
    "memory_after_build_mb",
    "memory_after_build_of",
];

const MB: f64 = 1024.0 * 1024.0;

/// The registry's engine-specific index figures. What an engine calls its index holds the
/// vectors for some engines and not for others, so tables meant for comparing engines show
/// the totals instead; these stay in the CSV and JSON, beside `index_holds`.
pub const INDEX_METRICS: &[&str] = &["index_mb", "index_bytes_per_vector"];

/// The element type of the run's dataset (`float32` in files that predate element types:
/// every dataset was then read as `float32`); `None` for a name this build does not know.
pub fn element_type(run: &RunResult) -> Option<ElementType> {
    match &run.element_type {
        Some(types) => types.dataset.parse().ok(),
        None => Some(ElementType::Float32),
    }
}

/// The raw vectors' own size per vector: dimensions × bytes per element of the dataset's
/// type. No engine can store a vector in less without compressing it, so a total per vector
/// is read against it.
pub fn raw_bytes_per_vector(run: &RunResult) -> Option<f64> {
    element_type(run).map(|t| (run.dataset.dim * t.bytes()) as f64)
}

/// What the row's index figure holds (`graph only`, `graph + vectors`), if the engine said.
pub fn index_holds(row: &Row<'_>) -> Option<&'static str> {
    row.footprint().index_holds.map(|h| h.label())
}

/// What a run's index figures hold, each once, in the order they appear (`graph only`).
pub fn run_index_holds(run: &RunResult) -> Vec<&'static str> {
    let mut out = Vec::new();
    for row in crate::export::registry::rows(&run.configs) {
        if let Some(h) = index_holds(&row)
            && !out.contains(&h)
        {
            out.push(h);
        }
    }
    out
}

/// Memory held by the engine once built, with what it is the memory of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryAfterBuild {
    pub mb: f64,
    pub of: &'static str,
}

/// The memory figure of one process (tree), `None` when nothing could be read.
fn memory_mb(stats: &ResourceStats) -> Option<f64> {
    (stats.memory_method != MemoryMethod::Unavailable)
        .then(|| stats.peak_memory_bytes() as f64 / MB)
}

/// The engine's memory once built, on the row of a search right after the build: the peak
/// during that search (the index built and loaded, no build buffers left). A server engine's
/// figure is its process tree's (PSS, or RSS where PSS was unreadable); an in-process
/// engine's is the ragdbeval process's RSS, which also holds the dataset and the harness.
/// `None` after a mutation, and for a server that was not watched (not on this host).
pub fn memory_after_build(run: &RunResult, row: &Row<'_>) -> Option<MemoryAfterBuild> {
    row.build?;
    let resources = &row.search.resources;
    if run.engine.in_process {
        return memory_mb(&resources.client).map(|mb| MemoryAfterBuild {
            mb,
            of: "ragdbeval process RSS (engine, dataset and harness)",
        });
    }
    let engine = resources.engine.as_ref()?;
    let of = match engine.memory_method {
        MemoryMethod::Pss => "server processes' PSS",
        MemoryMethod::Rss => "server processes' RSS",
        MemoryMethod::Legacy => "server RSS counted per thread (not comparable)",
        MemoryMethod::Unavailable => return None,
    };
    memory_mb(engine).map(|mb| MemoryAfterBuild { mb, of })
}

/// The [`HEADERS`] cells of a row: empty where there is no figure.
pub fn columns(run: &RunResult, row: &Row<'_>) -> Vec<String> {
    let memory = memory_after_build(run, row);
    vec![
        index_holds(row).unwrap_or_default().to_string(),
        raw_bytes_per_vector(run).map_or_else(String::new, |b| b.to_string()),
        memory.map_or_else(String::new, |m| m.mb.to_string()),
        memory.map_or_else(String::new, |m| m.of.to_string()),
    ]
}
