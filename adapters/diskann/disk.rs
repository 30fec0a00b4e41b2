//! DiskANN's on-disk index (`diskann-disk`): built once from the bulk load, then searched
//! from its files. The build writes the load as DiskANN's binary data file, trains the PQ
//! codes, builds the Vamana graph in memory and lays it out on disk: one file whose 4 KiB
//! sectors hold each node's full-precision vector and adjacency list, beside the PQ pivots
//! and the PQ-compressed vectors. The data file is removed after the build.
//!
//! A search loads the PQ codes into memory once; each step of the greedy search reads the
//! `beam_width` best unexpanded nodes from the disk file (Linux: io_uring with `O_DIRECT`,
//! DiskANN's own reader), walks by PQ distances and re-ranks by the full vectors it read.
//! A filtered search is DiskANN's inline label filter: the predicate is its label callback
//! during the walk. The index is static: DiskANN's disk index takes no insert or delete.

use std::io::{BufWriter, Write};
use std::num::NonZeroUsize;
use std::path::Path;

use diskann::utils::ONE;
use diskann_disk::build::builder::build::DiskIndexBuilder;
use diskann_disk::data_model::{AdHoc, CachingStrategy};
use diskann_disk::disk_index_build_parameter::{
    DISK_SECTOR_LEN, DiskIndexBuildParameters, MemoryBudget, NumPQChunks,
};
use diskann_disk::search::provider::disk_provider::DiskIndexSearcher;
use diskann_disk::search::provider::disk_vertex_provider_factory::DiskVertexProviderFactory;
use diskann_disk::search::search_mode::SearchMode;
use diskann_disk::search::traits::VertexProviderFactory;
use diskann_disk::storage::DiskIndexWriter;
use diskann_disk::storage::disk_index_reader::DiskIndexReader;
use diskann_disk::QuantizationType;
use diskann_providers::model::IndexConfiguration;
use diskann_providers::storage::{
    FileStorageProvider, get_compressed_pq_file, get_disk_index_file, get_pq_pivot_file,
};
use diskann_utils::views::rowmajor::{self, Matrix};
use serde_json::{Map, Value, json};

use super::NAME;
use super::graph::engine_error;
use super::settings::{BuildSettings, DiskSettings, SearchSettings, metric};
use crate::engine::{EngineResult, Neighbor, PointId, Query, SourcedBytes};
use crate::filter::CompiledPredicate;

/// The vectors as DiskANN's disk crate sees them: f32, no associated data, u32 ids.
type Data = AdHoc<f32>;
type Searcher = DiskIndexSearcher<Data>;

/// The build's memory budget: large enough that DiskANN builds the graph in one piece (as
/// the in-memory mode does) instead of in merged shards.
const BUILD_MEMORY_GB: f64 = 1024.0;
/// No cap on a query's reads (DiskANN's `search_io_limit`).
const SEARCH_IO_LIMIT: usize = u32::MAX as usize;

/// The on-disk index: its files, DiskANN's searcher over them, the point in each vertex.
pub struct DiskIndex {
    /// The directory holding the index files; removed with the index.
    dir: tempfile::TempDir,
    prefix: String,
    searcher: Searcher,
    /// The point id of each vertex (DiskANN's ids are the rows of the data file).
    ids: Vec<PointId>,
    pub dim: usize,
    /// The library's figures, read once when the index is loaded.
    facts: Map<String, Value>,
}

/// DiskANN's error, with what was being done.
fn failed(operation: &str, what: &str, e: impl std::fmt::Display) -> crate::engine::EngineError {
    engine_error(operation, format!("{what}: {e}"))
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, NonZeroUsize::get)
}

impl DiskIndex {
    /// Builds the on-disk index over `rows` (one point per id, ids distinct) into a new
    /// directory under `work_dir`, then loads it for search.
    pub fn build(
        dim: usize,
        settings: &BuildSettings,
        disk: DiskSettings,
        rows: &[(PointId, &[f32])],
        work_dir: &Path,
    ) -> EngineResult<DiskIndex> {
        if rows.is_empty() {
            return Err(engine_error("build", "no vectors to build the disk index from"));
        }
        std::fs::create_dir_all(work_dir)
            .map_err(|e| failed("build", &format!("creating {}", work_dir.display()), e))?;
        let dir = tempfile::Builder::new()
            .prefix("diskann-disk")
            .tempdir_in(work_dir)
            .map_err(|e| failed("build", &format!("a directory in {}", work_dir.display()), e))?;
        let data_file = dir.path().join("data.bin");
        write_data(&data_file, dim, rows)?;
        let prefix = path_string(&dir.path().join("index"))?;
        build_files(dim, settings, disk, rows.len(), &path_string(&data_file)?, &prefix)?;
        std::fs::remove_file(&data_file)
            .map_err(|e| failed("build", "removing the data file", e))?;
        let (searcher, facts) = load(&prefix, settings, disk)?;
        Ok(DiskIndex {
            dir,
            prefix,
            searcher,
            ids: rows.iter().map(|(id, _)| *id).collect(),
            dim,
            facts,
        })
    }

    /// Top-`k` for one query: DiskANN's disk search with search list `l_search` (at least
    /// k) and `beam_width` reads a step, or with `filter` its inline label-filtered search.
    pub fn search(
        &self,
        query: Query<'_>,
        search: SearchSettings,
        filter: Option<&CompiledPredicate<'_>>,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        if !query.start(NAME, self.dim, out)? {
            return Ok(());
        }
        let Query { vector: query, k, .. } = query;
        let ids = &self.ids;
        let mode = match filter {
            None => SearchMode::graph(),
            Some(predicate) => SearchMode::inline_filter(
                move |vertex: &u32| {
                    ids.get(*vertex as usize)
                        .is_some_and(|&id| predicate.passes(id))
                },
                None,
            ),
        };
        let l = search.l_search.max(k);
        let result = self
            .searcher
            .search(query, k as u32, l as u32, Some(search.beam_width), mode)
            .map_err(|e| engine_error("search", e))?;
        let found = (result.stats.result_count as usize).min(k);
        out.extend(result.results[..found].iter().filter_map(|r| {
            ids.get(r.vertex_id as usize).map(|&id| Neighbor {
                id,
                score: r.distance,
            })
        }));
        Ok(())
    }

    /// The library's figures: points in the disk graph, PQ chunks and centres, nodes
    /// cached, the layout of the disk file, and the bytes of PQ codes held in memory.
    pub fn facts(&self) -> Map<String, Value> {
        self.facts.clone()
    }

    /// The index files' sizes: the disk file (graph and full vectors) with the PQ pivots
    /// and codes is the index; every file in the index's directory the total.
    pub fn sizes(&self) -> EngineResult<(SourcedBytes, SourcedBytes)> {
        let len = |path: &str| {
            std::fs::metadata(path)
                .map(|m| m.len())
                .map_err(|e| failed("footprint", path, e))
        };
        let index = len(&get_disk_index_file(&self.prefix))?
            + len(&get_pq_pivot_file(&self.prefix))?
            + len(&get_compressed_pq_file(&self.prefix))?;
        let mut total = 0;
        let entries = std::fs::read_dir(self.dir.path())
            .map_err(|e| failed("footprint", "listing the index directory", e))?;
        for entry in entries {
            let entry = entry.map_err(|e| failed("footprint", "listing", e))?;
            total += entry
                .metadata()
                .map_err(|e| failed("footprint", "reading a file's size", e))?
                .len();
        }
        let figure = |bytes, what: &str| SourcedBytes {
            bytes,
            source: format!("DiskANN disk index: {what}, file sizes"),
        };
        Ok((
            figure(index, "disk file (graph + full vectors) + PQ pivots + PQ codes"),
            figure(total, "every file of the index"),
        ))
    }
}

fn path_string(path: &Path) -> EngineResult<String> {
    path.to_str()
        .map(str::to_owned)
        .ok_or_else(|| engine_error("build", format!("{} is not UTF-8", path.display())))
}

/// The rows as DiskANN's binary data file (point count, dimension, then the f32 rows).
fn write_data(path: &Path, dim: usize, rows: &[(PointId, &[f32])]) -> EngineResult<()> {
    let flat: Vec<f32> = rows.iter().flat_map(|(_, r)| r.iter().copied()).collect();
    let view = rowmajor::Ref::try_from_data(flat.as_slice(), rows.len(), dim)
        .map_err(|e| failed("build", "viewing the vectors", e))?;
    let file = std::fs::File::create(path)
        .map_err(|e| failed("build", &format!("creating {}", path.display()), e))?;
    let mut writer = BufWriter::new(file);
    diskann_utils::io::write_bin(view, &mut writer)
        .map_err(|e| failed("build", "writing the data file", e))?;
    writer
        .flush()
        .map_err(|e| failed("build", "writing the data file", e))
}

/// DiskANN's disk build: PQ codes, the Vamana graph (built in memory over full-precision
/// vectors, R, L and alpha of `settings`), then the disk layout.
fn build_files(
    dim: usize,
    settings: &BuildSettings,
    disk: DiskSettings,
    points: usize,
    data_file: &str,
    prefix: &str,
) -> EngineResult<()> {
    let budget = MemoryBudget::try_from_gb(BUILD_MEMORY_GB)
        .map_err(|e| failed("build", "the memory budget", e))?;
    let chunks = NumPQChunks::new_with(disk.pq_chunks, dim)
        .map_err(|e| crate::engine::EngineError::bad_param(NAME, "pq_chunks", e))?;
    let parameters = DiskIndexBuildParameters::new(budget, QuantizationType::FP, chunks);
    let configuration = IndexConfiguration::new(
        metric(settings.distance),
        dim,
        points,
        ONE,
        threads(),
        settings.config()?,
    );
    let writer = DiskIndexWriter::new(data_file.to_owned(), prefix.to_owned(), None, DISK_SECTOR_LEN)
        .map_err(|e| failed("build", "the disk layout writer", e))?;
    DiskIndexBuilder::<Data, _>::new(&FileStorageProvider, parameters, configuration, writer)
        .map_err(|e| failed("build", "preparing the disk build", e))?
        .build()
        .map_err(|e| failed("build", "building the disk index", e))
}

/// Loads the PQ codes and opens the disk file for search (caching `num_nodes_to_cache`
/// nodes by BFS from the medoid); returns the searcher and the library's figures.
fn load(
    prefix: &str,
    settings: &BuildSettings,
    disk: DiskSettings,
) -> EngineResult<(Searcher, Map<String, Value>)> {
    let reader = DiskIndexReader::new(
        get_pq_pivot_file(prefix),
        get_compressed_pq_file(prefix),
        &FileStorageProvider,
    )
    .map_err(|e| failed("load", "reading the PQ codes", e))?;
    let caching = match disk.num_nodes_to_cache {
        0 => CachingStrategy::None,
        n => CachingStrategy::StaticCacheWithBfsNodes(n),
    };
    let factory = DiskVertexProviderFactory::from_disk_index_path(get_disk_index_file(prefix), caching)
        .map_err(|e| failed("load", "opening the disk file", e))?;
    let header = factory
        .get_header()
        .map_err(|e| failed("load", "reading the disk file's header", e))?;
    let meta = header.metadata();
    let pq = reader.get_pq_data();
    let mut facts = Map::new();
    facts.insert("points".into(), json!(meta.num_pts));
    facts.insert("pq_chunks".into(), json!(pq.get_num_chunks()));
    facts.insert("pq_centers".into(), json!(pq.get_num_centers()));
    facts.insert(
        "pq_code_bytes_in_memory".into(),
        json!(pq.pq_compressed_data().as_slice().len()),
    );
    let cached = factory.cache.as_ref().map_or(0, |c| c.len());
    facts.insert("nodes_cached".into(), json!(cached));
    facts.insert("medoid".into(), json!(meta.medoid));
    facts.insert("node_bytes".into(), json!(meta.node_len));
    facts.insert("nodes_per_sector".into(), json!(meta.num_nodes_per_block));
    facts.insert("disk_file_bytes".into(), json!(meta.disk_index_file_size));
    facts.insert("max_degree_on_disk".into(), json!(header.max_degree::<f32>().ok()));
    let searcher = Searcher::new(
        threads(),
        SEARCH_IO_LIMIT,
        &reader,
        factory,
        metric(settings.distance),
        None,
    )
    .map_err(|e| failed("load", "opening the disk searcher", e))?;
    Ok((searcher, facts))
}
