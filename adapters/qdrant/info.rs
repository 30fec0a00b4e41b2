//! Collection info as JSON for the result file.

use super::*;

pub(super) fn status_name(status: i32) -> &'static str {
    match CollectionStatus::try_from(status) {
        Ok(CollectionStatus::Green) => "green",
        Ok(CollectionStatus::Yellow) => "yellow",
        Ok(CollectionStatus::Grey) => "grey",
        Ok(CollectionStatus::Red) => "red",
        _ => "unknown",
    }
}

pub(super) fn optimizer_json(info: &CollectionInfo) -> Value {
    match &info.optimizer_status {
        Some(s) if s.ok => json!("ok"),
        Some(s) => json!(format!("error: {}", s.error)),
        None => Value::Null,
    }
}

/// The server's view of the collection, for `describe` and the index report.
pub(super) fn info_json(info: &CollectionInfo) -> Value {
    let config = info.config.as_ref();
    let params = config.and_then(|c| c.params.as_ref());
    let hnsw = config.and_then(|c| c.hnsw_config.as_ref());
    let optimizers = config.and_then(|c| c.optimizer_config.as_ref());
    json!({
        "status": status_name(info.status),
        "optimizer_status": optimizer_json(info),
        "points": info.points_count,
        "indexed_vectors": info.indexed_vectors_count,
        "segments": info.segments_count,
        "update_queue_length": info.update_queue.as_ref().map(|q| q.length),
        "warnings": info.warnings.iter().map(|w| w.message.clone()).collect::<Vec<_>>(),
        "cluster": {
            "shard_number": params.map(|p| p.shard_number),
            "replication_factor": params.and_then(|p| p.replication_factor),
            "write_consistency_factor": params.and_then(|p| p.write_consistency_factor),
        },
        "hnsw": {
            "m": hnsw.and_then(|h| h.m),
            "ef_construct": hnsw.and_then(|h| h.ef_construct),
            "full_scan_threshold_kb": hnsw.and_then(|h| h.full_scan_threshold),
        },
        "indexing_threshold_kb": optimizers.and_then(|o| o.indexing_threshold),
        // The storage datatype the server reports for the (unnamed) vector: `Uint8` when it
        // stores bytes, `Float32` when told so, null when it leaves the default.
        "datatype": params
            .and_then(|p| p.vectors_config.as_ref())
            .and_then(|v| v.config.as_ref())
            .and_then(|c| match c {
                qdrant_client::qdrant::vectors_config::Config::Params(p) => p.datatype,
                qdrant_client::qdrant::vectors_config::Config::ParamsMap(_) => None,
            })
            .map(|d| {
                qdrant_client::qdrant::Datatype::try_from(d)
                    .map_or("unknown", |d| d.as_str_name())
            }),
        "quantization": config
            .and_then(|c| c.quantization_config.as_ref())
            .and_then(|q| q.quantization.as_ref())
            .map(|q| match q {
                quantization_config::Quantization::Scalar(_) => "int8",
                quantization_config::Quantization::Product(_) => "product",
                quantization_config::Quantization::Binary(_) => "binary",
                quantization_config::Quantization::Turboquant(_) => "turbo",
            }),
    })
}
