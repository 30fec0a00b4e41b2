//! Building requests from the shared [`crate::adapters::qdrant_settings`] and reading answers.

use qdrant_client::qdrant::{Condition as QCondition, Datatype, Range};

use crate::types::ElementType;

use super::*;
use crate::filter::Condition as FilterCondition;

/// A parameter rejected by [`crate::adapters::qdrant_settings`], as this engine reports it.
pub(super) fn bad_param(err: SettingsError) -> EngineError {
    err.into_engine(Target::Server)
}

/// The client's ratio for a product-quantization compression.
pub(super) fn compression_ratio(compression: PqCompression) -> CompressionRatio {
    match compression {
        PqCompression::X4 => CompressionRatio::X4,
        PqCompression::X8 => CompressionRatio::X8,
        PqCompression::X16 => CompressionRatio::X16,
        PqCompression::X32 => CompressionRatio::X32,
        PqCompression::X64 => CompressionRatio::X64,
    }
}

/// The create request for the parsed settings: a translation, no decisions. The deprecated
/// `on_disk` / `always_ram` flags are used rather than the newer `memory` placement because
/// servers before 1.19 ignore `memory` silently.
pub(crate) fn create_request(
    settings: &BuildSettings,
    name: &str,
    distance: Distance,
    timeout: u64,
) -> CreateCollectionBuilder {
    let distance = match distance {
        Distance::Euclidean => QDistance::Euclid,
        Distance::Angular => QDistance::Cosine,
        Distance::Dot => QDistance::Dot,
    };
    let mut vectors = VectorParamsBuilder::new(settings.dim as u64, distance);
    if let Some(on_disk) = settings.on_disk {
        vectors = vectors.on_disk(on_disk);
    }
    // Sent even for float32, so the record is what the server was told.
    vectors = vectors.datatype(match settings.datatype {
        ElementType::Uint8 => Datatype::Uint8,
        ElementType::Float16 => Datatype::Float16,
        // `int8` never gets here (the settings refuse it); it is stored as float32.
        ElementType::Float32 | ElementType::Int8 => Datatype::Float32,
    });
    // m and ef_construct are sent even at their defaults, so the record is what the server
    // was told rather than what it is assumed to default to.
    let mut hnsw = HnswConfigDiffBuilder::default()
        .m(settings.m as u64)
        .ef_construct(settings.ef_construct as u64)
        .full_scan_threshold(settings.full_scan_threshold.kb);
    if let Some(on_disk) = settings.hnsw_on_disk {
        hnsw = hnsw.on_disk(on_disk);
    }
    let optimizers =
        OptimizersConfigDiffBuilder::default().indexing_threshold(settings.indexing_threshold.kb);
    let mut request = CreateCollectionBuilder::new(name)
        .vectors_config(vectors)
        .hnsw_config(hnsw)
        .optimizers_config(optimizers)
        .timeout(timeout);
    let quantization: Option<quantization_config::Quantization> = match settings.quantization {
        Quantization::None => None,
        Quantization::Int8 => {
            let mut q = ScalarQuantizationBuilder::default();
            if let Some(ram) = settings.quantization_always_ram {
                q = q.always_ram(ram);
            }
            Some(q.into())
        }
        Quantization::Binary => {
            let mut q = BinaryQuantizationBuilder::default();
            if let Some(ram) = settings.quantization_always_ram {
                q = q.always_ram(ram);
            }
            Some(q.into())
        }
        Quantization::Product(compression) => {
            let mut q = ProductQuantizationBuilder::new(compression_ratio(compression).into());
            if let Some(ram) = settings.quantization_always_ram {
                q = q.always_ram(ram);
            }
            Some(q.into())
        }
    };
    if let Some(q) = quantization {
        request = request.quantization_config(q);
    }
    if let Some(n) = settings.shard_number {
        request = request.shard_number(n);
    }
    if let Some(n) = settings.replication_factor {
        request = request.replication_factor(n);
    }
    if let Some(n) = settings.write_consistency_factor {
        request = request.write_consistency_factor(n);
    }
    request
}

/// The request's search parameters for the parsed settings; `None` (send nothing) when
/// nothing is set, so the server's defaults apply.
pub(crate) fn search_request_params(search: &SearchSettings) -> Option<SearchParams> {
    if search.is_default() {
        return None;
    }
    let mut builder = SearchParamsBuilder::default();
    if let Some(ef) = search.hnsw_ef {
        builder = builder.hnsw_ef(ef as u64);
    }
    if let Some(exact) = search.exact {
        builder = builder.exact(exact);
    }
    if let Some(indexed_only) = search.indexed_only {
        builder = builder.indexed_only(indexed_only);
    }
    if search.has_quantization_params() {
        let mut q = QuantizationSearchParamsBuilder::default();
        if let Some(rescore) = search.rescore {
            q = q.rescore(rescore);
        }
        if let Some(o) = search.oversampling {
            q = q.oversampling(o);
        }
        builder = builder.quantization(q);
    }
    Some(builder.build())
}

/// With `wait=true` an update must come back completed; anything else means the points may
/// not be searchable yet.
pub(super) fn check_update(
    operation: &str,
    response: &PointsOperationResponse,
) -> EngineResult<()> {
    let status = response.result.as_ref().map(|r| r.status);
    if status == Some(UpdateStatus::Completed as i32) {
        return Ok(());
    }
    let name = status
        .and_then(|s| UpdateStatus::try_from(s).ok())
        .map_or("missing", |s| s.as_str_name());
    Err(EngineError::op(
        ENGINE,
        operation,
        format!("update not completed (status {name}) although wait=true was requested"),
    ))
}

/// Converts scored points into neighbours, best first as the server ordered them.
pub(super) fn to_neighbors(points: Vec<ScoredPoint>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
    out.reserve(points.len());
    for p in points {
        match p.id.and_then(|id| id.point_id_options) {
            Some(PointIdOptions::Num(id)) => out.push(Neighbor { id, score: p.score }),
            Some(PointIdOptions::Uuid(u)) => {
                return Err(EngineError::op(
                    ENGINE,
                    "search",
                    format!("point {u} has a UUID id; ragdbeval only writes numeric ids"),
                ));
            }
            None => {
                return Err(EngineError::op(
                    ENGINE,
                    "search",
                    "server returned a point without id",
                ));
            }
        }
    }
    Ok(())
}

/// Doubles hold every integer up to 2^53 exactly; Qdrant's gRPC range bounds are doubles.
const EXACT_IN_F64: i64 = 1 << 53;

/// Whether every range bound of `predicate` converts to a double without rounding.
pub(super) fn range_is_exact(predicate: &Predicate) -> bool {
    predicate.all.iter().all(|c| match c {
        FilterCondition::Equals { .. } => true,
        FilterCondition::Range { gte, lt, .. } => {
            (-EXACT_IN_F64..=EXACT_IN_F64).contains(gte)
                && (-EXACT_IN_F64..=EXACT_IN_F64).contains(lt)
        }
    })
}

/// The predicate as a gRPC filter: one `must` condition per condition, `match` on a keyword
/// for equality and `range` (gte/lt) on an integer: the same filter as
/// [`crate::adapters::qdrant_settings::filter::filter_json`] writes for the edge adapter.
pub(crate) fn grpc_filter(predicate: &Predicate) -> Filter {
    Filter::must(predicate.all.iter().map(|c| match c {
        FilterCondition::Equals { field, value } => {
            QCondition::matches(field.as_str(), value.clone())
        }
        FilterCondition::Range { field, gte, lt } => QCondition::range(
            field.as_str(),
            Range {
                gte: Some(*gte as f64),
                lt: Some(*lt as f64),
                ..Range::default()
            },
        ),
    }))
}
