//! What the shard's segments say on disk: index kind, points, quantization; for the result file.

use super::*;

/// The build settings and thresholds, for `describe` and the index report. `build_settings`
/// is [`BuildSettings::to_json`], the record the server adapter writes too.
pub(super) fn settings_details(shard: &Shard) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("shard_path".into(), json!(shard.path.display().to_string()));
    out.insert("distance".into(), json!(shard.distance.as_str()));
    out.insert("build_settings".into(), shard.settings.to_json());
    out
}

/// What the files of one segment say about its index.
#[derive(Debug, Default)]
pub(super) struct SegmentDetail {
    pub(super) id: String,
    /// `plain`, `hnsw`, or `unknown` when the segment state could not be read.
    pub(super) index: String,
    pub(super) appendable: Option<bool>,
    /// From the graph's `hnsw_config.json`: vectors in the graph, and the full-scan
    /// threshold converted to a number of vectors.
    pub(super) indexed_vectors: Option<u64>,
    pub(super) full_scan_threshold_vectors: Option<u64>,
    pub(super) m: Option<u64>,
    pub(super) ef_construct: Option<u64>,
}

impl SegmentDetail {
    /// True when searches of this (indexed) segment go to a brute-force scan.
    pub(super) fn full_scan(&self) -> bool {
        match (self.indexed_vectors, self.full_scan_threshold_vectors) {
            (Some(n), Some(threshold)) => n < threshold || self.m == Some(0),
            _ => false,
        }
    }

    pub(super) fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "index": self.index,
            "appendable": self.appendable,
            "indexed_vectors": self.indexed_vectors,
            "full_scan_threshold_vectors": self.full_scan_threshold_vectors,
            "m": self.m,
            "ef_construct": self.ef_construct,
            "full_scan": self.full_scan(),
        })
    }
}

/// Reads each segment's state file and HNSW graph config from the shard directory. The edge
/// API only reports shard-wide totals, and the per-segment graph configs hold the one number
/// that decides between graph and scan: the full-scan threshold in vectors.
pub(super) fn segment_details(shard_path: &Path) -> Vec<SegmentDetail> {
    let Ok(entries) = fs::read_dir(shard_path.join("segments")) else {
        return Vec::new();
    };
    let mut out: Vec<SegmentDetail> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| !n.starts_with('.'))
        })
        .map(|dir| read_segment_detail(&dir))
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

pub(super) fn read_segment_detail(dir: &Path) -> SegmentDetail {
    let mut detail = SegmentDetail {
        id: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        index: "unknown".into(),
        ..SegmentDetail::default()
    };
    if let Some(state) = read_json(&dir.join("segment.json")) {
        let vector = state
            .pointer("/config/vector_data")
            .and_then(Value::as_object)
            .and_then(|m| m.values().next());
        if let Some(vector) = vector {
            let index_type = vector.pointer("/index/type").and_then(Value::as_str);
            detail.index = index_type.unwrap_or("unknown").to_string();
            // Mirrors `VectorDataConfig::is_appendable`: a plain index over a storage type
            // that can grow.
            detail.appendable = vector
                .get("storage_type")
                .and_then(Value::as_str)
                .map(|storage| {
                    index_type == Some("plain")
                        && matches!(storage, "Memory" | "ChunkedMmap" | "InRamChunkedMmap")
                });
        }
    }
    if let Some(graph) = find_file(dir, "hnsw_config.json").and_then(|p| read_json(&p)) {
        detail.indexed_vectors = graph.get("indexed_vector_count").and_then(Value::as_u64);
        detail.full_scan_threshold_vectors =
            graph.get("full_scan_threshold").and_then(Value::as_u64);
        detail.m = graph.get("m").and_then(Value::as_u64);
        detail.ef_construct = graph.get("ef_construct").and_then(Value::as_u64);
    }
    detail
}

pub(super) fn read_json(path: &Path) -> Option<Value> {
    let text = fs::read(path).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Depth-first search for a file name under `dir`.
pub(super) fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    let entries = fs::read_dir(dir).ok()?;
    let mut subdirs = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            subdirs.push(path);
        } else if entry.file_name() == name {
            return Some(path);
        }
    }
    subdirs.into_iter().find_map(|d| find_file(&d, name))
}
