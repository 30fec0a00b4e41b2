//! The [`HybridEngine`] impl of `bm25`: a tantivy index in the run's work directory, written
//! row by row, committed once, searched through one reader.

use std::ops::Range;
use std::path::PathBuf;

use serde_json::{Map, Value, json};
use tantivy::directory::MmapDirectory;
use tantivy::{Index, IndexSettings, IndexWriter, TantivyDocument};

use super::NAME;
use super::index::{Fields, Ready, TOKENIZER, WriterSettings, op, schema};
use crate::engine::hybrid::{
    HybridCapabilities, HybridData, HybridEngine, HybridQuery, HybridSpec,
};
use crate::engine::{EngineError, EngineResult, Footprint, IndexReport, Neighbor};
use crate::params::ParamMap;

/// The version of tantivy the `bm25` feature builds against (`Cargo.toml`).
const VERSION: &str = "tantivy 0.27.0";

/// The index's folder inside the work directory.
const INDEX_DIR: &str = "tantivy";

pub struct Bm25 {
    recreate: bool,
    built: Option<Built>,
}

/// A created index.
struct Built {
    index: Index,
    path: PathBuf,
    fields: Fields,
    settings: WriterSettings,
    /// Open while rows arrive; committed and closed by `wait_until_ready`.
    writer: Option<IndexWriter>,
    /// Open once the rows are committed; a later insert closes it.
    ready: Option<Ready>,
}

impl Bm25 {
    pub fn new(recreate: bool) -> Bm25 {
        Bm25 {
            recreate,
            built: None,
        }
    }

    fn built(&self, operation: &str) -> EngineResult<&Built> {
        self.built
            .as_ref()
            .ok_or_else(|| EngineError::op(NAME, operation, "no index: create() was not called"))
    }

    fn built_mut(&mut self, operation: &str) -> EngineResult<&mut Built> {
        self.built
            .as_mut()
            .ok_or_else(|| EngineError::op(NAME, operation, "no index: create() was not called"))
    }

    /// An empty folder for the index: one left by an earlier run is replaced only with
    /// `--recreate`.
    fn fresh_dir(&self, path: &std::path::Path) -> EngineResult<()> {
        let io = |what: &str, e: std::io::Error| {
            EngineError::op(NAME, "create", format!("{what} {}: {e}", path.display()))
        };
        if path.exists() {
            if !self.recreate {
                return Err(EngineError::op(
                    NAME,
                    "create",
                    format!(
                        "{} already exists; use --recreate to replace it",
                        path.display()
                    ),
                ));
            }
            std::fs::remove_dir_all(path).map_err(|e| io("removing", e))?;
        }
        std::fs::create_dir_all(path).map_err(|e| io("creating", e))
    }
}

impl HybridEngine for Bm25 {
    fn name(&self) -> &str {
        NAME
    }

    fn version(&self) -> String {
        VERSION.to_string()
    }

    fn capabilities(&self) -> HybridCapabilities {
        HybridCapabilities::TEXT_ONLY
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        EngineError::refuse_any(
            NAME,
            params,
            "bm25 takes no search parameters (its top-k is exact for its scores)",
        )
    }

    fn create(&mut self, spec: &HybridSpec) -> EngineResult<()> {
        if spec.dense.is_some() {
            return Err(self.unsupported("dense vectors beside its text index (a hybrid run)"));
        }
        let settings = WriterSettings::parse(&spec.build_params)?;
        // Closing the old index first releases its writer lock and its memory maps.
        self.built = None;
        let path = spec.work_dir.join(INDEX_DIR);
        self.fresh_dir(&path)?;
        let directory = MmapDirectory::open(&path).map_err(|e| {
            EngineError::op(NAME, "create", format!("opening {}: {e}", path.display()))
        })?;
        let (schema, fields) = schema();
        let index = Index::create(directory, schema, IndexSettings::default())
            .map_err(op("create the index"))?;
        let writer = settings.writer(&index)?;
        self.built = Some(Built {
            index,
            path,
            fields,
            settings,
            writer: Some(writer),
            ready: None,
        });
        Ok(())
    }

    fn insert(&mut self, data: &HybridData<'_>, rows: Range<usize>) -> EngineResult<()> {
        let texts = data.texts.ok_or_else(|| {
            EngineError::op(
                NAME,
                "insert",
                "the dataset has no texts (a `texts/` folder), which bm25 indexes: `ragdbeval \
                 embed --sparse bm25` writes them beside a text dataset's vectors",
            )
        })?;
        let built = self.built_mut("insert")?;
        built.ready = None;
        if built.writer.is_none() {
            built.writer = Some(built.settings.writer(&built.index)?);
        }
        let fields = built.fields;
        let Some(writer) = built.writer.as_mut() else {
            return Err(EngineError::op(
                NAME,
                "insert",
                "the index writer is closed",
            ));
        };
        for r in rows {
            let text = texts.get(r).ok_or_else(|| {
                EngineError::op(
                    NAME,
                    "insert",
                    format!("row {r} has no text: the dataset has {} texts", texts.len()),
                )
            })?;
            let mut doc = TantivyDocument::new();
            doc.add_text(fields.text, text);
            doc.add_u64(fields.id, r as u64);
            writer.add_document(doc).map_err(op("insert"))?;
        }
        Ok(())
    }

    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let built = self.built_mut("commit")?;
        if let Some(mut writer) = built.writer.take() {
            writer.commit().map_err(op("commit"))?;
            // tantivy's merge policy may have merges running after the commit: the index
            // is ready (and its size settled) when they end.
            writer
                .wait_merging_threads()
                .map_err(op("wait for merges"))?;
        }
        let ready = Ready::open(&built.index, built.fields)?;
        let (docs, segments) = (ready.docs(), ready.segments());
        built.ready = Some(ready);
        let mut details = Map::new();
        details.insert("segments".into(), json!(segments));
        details.insert("documents".into(), json!(docs));
        details.insert("tokenizer".into(), json!(TOKENIZER));
        details.insert("writer".into(), built.settings.to_json());
        Ok(IndexReport {
            indexed_vectors: Some(docs),
            points: Some(docs),
            may_full_scan: false,
            details,
        })
    }

    fn search_lexical(
        &self,
        query: &HybridQuery<'_>,
        k: usize,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        out.clear();
        let text = query.text.ok_or_else(|| {
            EngineError::op(
                NAME,
                "search",
                "the query has no text: the dataset's queries need their texts (`texts/`), \
                 which `ragdbeval embed --sparse bm25` writes",
            )
        })?;
        let ready = self.built("search")?.ready.as_ref().ok_or_else(|| {
            EngineError::op(
                NAME,
                "search",
                "the index is not committed: wait_until_ready first",
            )
        })?;
        ready.top(text, k, out)
    }

    fn footprint(&self) -> EngineResult<Footprint> {
        let built = self.built("footprint")?;
        let bytes = crate::storage::dir_bytes(
            NAME,
            &built.path,
            "tantivy index directory: segments (term dictionary, postings, field norms, row-id \
             fast field) + meta.json",
        )?;
        Ok(Footprint::new(Ok(bytes.clone()), Ok(bytes)))
    }

    fn describe(&self) -> Map<String, Value> {
        let mut out = Map::new();
        if let Some(built) = &self.built {
            out.insert("writer".into(), built.settings.to_json());
            if let Some(ready) = &built.ready {
                out.insert("segments".into(), json!(ready.segments()));
                out.insert("documents".into(), json!(ready.docs()));
            }
        }
        out
    }

    fn close(&mut self) -> EngineResult<()> {
        // An uncommitted writer is dropped: its rows were never searchable.
        self.built = None;
        Ok(())
    }
}
