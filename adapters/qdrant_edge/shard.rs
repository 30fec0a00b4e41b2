//! Translating the shared [`crate::adapters::qdrant_settings`] into the edge shard's
//! configuration and search parameters, and reading its answers.

use super::*;

/// A parameter rejected by [`crate::adapters::qdrant_settings`], as this engine reports it.
pub(super) fn bad_param(err: SettingsError) -> EngineError {
    err.into_engine(Target::Edge)
}

/// The edge crate's ratio for a product-quantization compression.
pub(super) fn compression_ratio(compression: PqCompression) -> CompressionRatio {
    match compression {
        PqCompression::X4 => CompressionRatio::X4,
        PqCompression::X8 => CompressionRatio::X8,
        PqCompression::X16 => CompressionRatio::X16,
        PqCompression::X32 => CompressionRatio::X32,
        PqCompression::X64 => CompressionRatio::X64,
    }
}

/// The shard configuration for the parsed settings: a translation, no decisions.
pub(crate) fn edge_config(settings: &BuildSettings, distance: Distance) -> EdgeConfig {
    let hnsw = HnswIndexConfig {
        m: settings.m,
        ef_construct: settings.ef_construct,
        full_scan_threshold: to_usize(settings.full_scan_threshold.kb),
        // `memory` overrides the deprecated `on_disk` flag of the default config.
        memory: settings.hnsw_on_disk.map(Memory::from_on_disk),
        ..HnswIndexConfig::default()
    };
    let mut vector =
        EdgeVectorParams::builder(settings.dim, qdrant_distance(distance)).hnsw_config(hnsw);
    if let Some(on_disk) = settings.on_disk {
        vector = vector.memory(Memory::from_on_disk(on_disk));
    }
    if let Some(quantization) = quantization_config(settings) {
        vector = vector.quantization_config(quantization);
    }
    vector = vector.datatype(match settings.datatype {
        ElementType::Uint8 => VectorStorageDatatype::Uint8,
        ElementType::Float16 => VectorStorageDatatype::Float16,
        // `int8` never gets here (the settings refuse it); it is stored as float32.
        ElementType::Float32 | ElementType::Int8 => VectorStorageDatatype::Float32,
    });
    EdgeConfig::builder()
        // The empty name is Qdrant's default (unnamed) vector, queried with `using: None`.
        .vector("", vector.build())
        .hnsw_config(hnsw)
        .optimizers(EdgeOptimizersConfig {
            indexing_threshold: Some(to_usize(settings.indexing_threshold.kb)),
            ..EdgeOptimizersConfig::default()
        })
        // Unset: on, as in Qdrant.
        .wal_enabled(settings.wal.unwrap_or(true))
        .build()
}

/// KB thresholds are u64 in the shared settings; beyond `usize` (32-bit hosts only) the
/// largest value has the same effect.
pub(super) fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// Builds the quantization config. The structs still carry the deprecated `always_ram` field,
/// which a struct literal must name; it stays `None` and the placement goes through `memory`.
#[allow(deprecated)]
pub(super) fn quantization_config(settings: &BuildSettings) -> Option<QuantizationConfig> {
    let memory = settings
        .quantization_always_ram
        .map(|ram| if ram { Memory::Pinned } else { Memory::Cold });
    match settings.quantization {
        Quantization::None => None,
        Quantization::Int8 => Some(
            ScalarQuantizationConfig {
                r#type: ScalarType::Int8,
                quantile: None,
                always_ram: None,
                memory,
            }
            .into(),
        ),
        Quantization::Binary => Some(
            BinaryQuantizationConfig {
                always_ram: None,
                memory,
                encoding: None,
                query_encoding: None,
            }
            .into(),
        ),
        Quantization::Product(compression) => Some(
            ProductQuantizationConfig {
                compression: compression_ratio(compression),
                always_ram: None,
                memory,
            }
            .into(),
        ),
    }
}

pub(super) fn qdrant_distance(distance: Distance) -> QdrantDistance {
    match distance {
        Distance::Euclidean => QdrantDistance::Euclid,
        // Qdrant normalises vectors for cosine; its score is the similarity, 1 - distance.
        Distance::Angular => QdrantDistance::Cosine,
        Distance::Dot => QdrantDistance::Dot,
    }
}

/// The engine's search parameters for the parsed settings; `None` (send nothing) when nothing
/// is set, so Qdrant's own defaults apply.
pub(crate) fn search_params(search: &SearchSettings) -> Option<SearchParams> {
    if search.is_default() {
        return None;
    }
    Some(SearchParams {
        hnsw_ef: search.hnsw_ef,
        exact: search.exact.unwrap_or(false),
        indexed_only: search.indexed_only.unwrap_or(false),
        quantization: search
            .has_quantization_params()
            .then_some(QuantizationSearchParams {
                ignore: false,
                rescore: search.rescore,
                oversampling: search.oversampling,
            }),
        ..SearchParams::default()
    })
}

pub(super) fn collect_neighbors(
    points: &[ScoredPoint],
    out: &mut Vec<Neighbor>,
) -> EngineResult<()> {
    out.reserve(points.len());
    for point in points {
        let id = match point.id {
            QdrantPointId::NumId(id) => id,
            // This adapter only ever writes numeric ids.
            QdrantPointId::Uuid(uuid) => {
                return Err(EngineError::op(
                    ENGINE,
                    "search",
                    format!("unexpected UUID point id {uuid}"),
                ));
            }
        };
        // Euclid scores are plain L2 distances, cosine and dot are similarities: the engine's
        // own numbers, passed through.
        out.push(Neighbor {
            id,
            score: point.score,
        });
    }
    Ok(())
}
