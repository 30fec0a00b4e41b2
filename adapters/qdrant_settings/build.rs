//! Build settings: the HNSW graph, quantization, thresholds and storage, parsed once for both targets.

use super::*;
use crate::engine::CollectionSpec;
use crate::types::ElementType;

/// Where a threshold came from, for the result file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Set by the user (config set or command line).
    User,
    /// Derived from the dataset size by [`derived_thresholds`].
    Derived,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Derived => "derived from dataset size",
        }
    }
}

/// A threshold in KB of vectors and its origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threshold {
    pub kb: u64,
    pub origin: Origin,
}

/// Compression ratio of product quantization. The adapters map it onto their own enums with
/// an exhaustive match, so a ratio added here must be handled by both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PqCompression {
    X4,
    X8,
    X16,
    X32,
    X64,
}

impl PqCompression {
    pub const ALL: [PqCompression; 5] = [
        PqCompression::X4,
        PqCompression::X8,
        PqCompression::X16,
        PqCompression::X32,
        PqCompression::X64,
    ];

    /// The ratio as a number (16 for x16).
    pub fn ratio(self) -> u64 {
        match self {
            PqCompression::X4 => 4,
            PqCompression::X8 => 8,
            PqCompression::X16 => 16,
            PqCompression::X32 => 32,
            PqCompression::X64 => 64,
        }
    }

    /// `x16`: Qdrant's own spelling.
    pub fn name(self) -> String {
        format!("x{}", self.ratio())
    }

    /// Accepts the number (`16`, what `--build-param pq_compression=16` gives) and Qdrant's
    /// name (`"x16"`, any case), which are the two spellings users write.
    pub(super) fn parse(value: &ParamValue) -> Result<PqCompression, SettingsError> {
        let number = match value {
            ParamValue::Int(n) => u64::try_from(*n).ok(),
            ParamValue::Str(s) => {
                let s = s.trim();
                s.strip_prefix(['x', 'X']).unwrap_or(s).parse::<u64>().ok()
            }
            ParamValue::Bool(_) | ParamValue::Float(_) => None,
        };
        PqCompression::ALL
            .into_iter()
            .find(|c| Some(c.ratio()) == number)
            .ok_or_else(|| {
                SettingsError::new(
                    "pq_compression",
                    format!("must be 4, 8, 16, 32 or 64 (or x4 … x64), got `{value}`"),
                )
            })
    }
}

/// Quantization of the stored vectors (the `quantization` build parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantization {
    None,
    /// Scalar quantization to int8 (`int8` or `scalar`).
    Int8,
    Binary,
    /// Product quantization (`product` or `pq`) with `pq_compression`, default x16.
    Product(PqCompression),
}

impl Quantization {
    /// The label recorded in results: `none`, `int8`, `binary`, `product-x16`.
    pub fn label(self) -> String {
        match self {
            Quantization::None => "none".into(),
            Quantization::Int8 => "int8".into(),
            Quantization::Binary => "binary".into(),
            Quantization::Product(c) => format!("product-{}", c.name()),
        }
    }
}

/// Validated build parameters, with every default resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildSettings {
    pub target: Target,
    /// The dataset the thresholds were derived for.
    pub dim: usize,
    pub expected_points: usize,
    pub m: usize,
    pub ef_construct: usize,
    pub indexing_threshold: Threshold,
    pub full_scan_threshold: Threshold,
    /// `None`: the engine's default placement.
    pub on_disk: Option<bool>,
    pub hnsw_on_disk: Option<bool>,
    pub quantization: Quantization,
    pub quantization_always_ram: Option<bool>,
    /// Server only (always `None` for the edge target).
    pub shard_number: Option<u32>,
    pub replication_factor: Option<u32>,
    pub write_consistency_factor: Option<u32>,
    /// Edge only (always `None` for the server target); unset means on, as in Qdrant.
    pub wal: Option<bool>,
    /// Qdrant's vector storage datatype: `float32`, `uint8` or `float16`.
    pub datatype: ElementType,
    /// True when the `datatype` parameter set it; otherwise it follows the dataset's element
    /// type ([`default_datatype`]).
    pub datatype_from_user: bool,
}

/// The storage datatype a dataset of `element` type gets unless `datatype` is set: its own
/// where Qdrant has it (`uint8`, `float16`), `float32` for the rest (`int8`: Qdrant has no
/// signed byte type).
pub fn default_datatype(element: ElementType) -> ElementType {
    match element {
        ElementType::Uint8 => ElementType::Uint8,
        ElementType::Float16 => ElementType::Float16,
        ElementType::Float32 | ElementType::Int8 => ElementType::Float32,
    }
}

impl BuildSettings {
    /// The settings of the collection `spec` describes, with errors as the adapter of
    /// `target` reports them. A zero dimension is refused before the parameters are read.
    pub fn for_collection(
        spec: &CollectionSpec,
        target: Target,
    ) -> Result<BuildSettings, EngineError> {
        if spec.dim == 0 {
            return Err(EngineError::op(
                target.engine(),
                "create",
                "dimension must be at least 1",
            ));
        }
        let mut settings =
            BuildSettings::parse(&spec.build_params, target, spec.expected_points, spec.dim)
                .map_err(|e| e.into_engine(target))?;
        settings
            .resolve_datatype(spec.element_type)
            .map_err(|e| e.into_engine(target))?;
        Ok(settings)
    }

    /// Sets the datatype from the dataset's element type unless the user chose one, and
    /// refuses `uint8` for data that is not: Qdrant would cast each component to a byte,
    /// truncating fractions and wrapping negatives, and the benchmark would measure other data.
    pub fn resolve_datatype(&mut self, element: ElementType) -> Result<(), SettingsError> {
        if !self.datatype_from_user {
            self.datatype = default_datatype(element);
        }
        // Derived thresholds follow the bytes Qdrant stores per vector.
        if self.indexing_threshold.origin == Origin::Derived {
            self.indexing_threshold.kb = derived_indexing_threshold_bytes(
                self.expected_points,
                self.dim,
                self.datatype.bytes(),
            );
        }
        if self.full_scan_threshold.origin == Origin::Derived {
            self.full_scan_threshold.kb = derived_full_scan_threshold(self.indexing_threshold.kb);
        }
        if self.datatype == ElementType::Uint8 && element != ElementType::Uint8 {
            return Err(SettingsError::new(
                "datatype",
                format!(
                    "uint8 stores each component as a byte, but the dataset is {element}: Qdrant \
                     would cast its values; use float32 or float16"
                ),
            ));
        }
        Ok(())
    }

    /// Parses and validates the build parameters of a collection of `expected_points`
    /// vectors of `dim` dimensions.
    pub fn parse(
        params: &ParamMap,
        target: Target,
        expected_points: usize,
        dim: usize,
    ) -> Result<BuildSettings, SettingsError> {
        check_build_names(params, target)?;
        let get_usize = |name: &str| -> Result<Option<usize>, SettingsError> {
            params
                .get_u64(name)?
                .map(|v| usize::try_from(v).map_err(|_| SettingsError::new(name, "too large")))
                .transpose()
        };

        let m = get_usize("m")?.unwrap_or(DEFAULT_M);
        let ef_construct = get_usize("ef_construct")?.unwrap_or(DEFAULT_EF_CONSTRUCT);
        // A Qdrant server refuses ef_construct < 4; the edge builder would take anything.
        if ef_construct < 4 {
            return Err(SettingsError::new("ef_construct", "must be at least 4"));
        }

        let (indexing_threshold, full_scan_threshold) =
            parse_thresholds(params, expected_points, dim)?;
        let (quantization, quantization_always_ram) = parse_quantization(params)?;
        let datatype = parse_datatype(params)?;

        Ok(BuildSettings {
            target,
            dim,
            expected_points,
            m,
            ef_construct,
            indexing_threshold,
            full_scan_threshold,
            on_disk: params.get_bool("on_disk")?,
            hnsw_on_disk: params.get_bool("hnsw_on_disk")?,
            quantization,
            quantization_always_ram,
            shard_number: get_u32_min1(params, "shard_number")?,
            replication_factor: get_u32_min1(params, "replication_factor")?,
            write_consistency_factor: get_u32_min1(params, "write_consistency_factor")?,
            wal: params.get_bool("wal")?,
            datatype: datatype.unwrap_or(ElementType::Float32),
            datatype_from_user: datatype.is_some(),
        })
    }

    /// True when the vectors are quantized, so `rescore` and `oversampling` have an effect.
    pub fn quantized(&self) -> bool {
        self.quantization != Quantization::None
    }

    /// The settings as recorded in results (`build_settings` of the engine details and of the
    /// build's index report), identical for both targets except `engine_only`.
    pub fn to_json(&self) -> Value {
        let vector_bytes = (self.dim as u64)
            .saturating_mul(self.datatype.bytes() as u64)
            .max(1);
        let indexing = self.indexing_threshold;
        let full_scan = self.full_scan_threshold;
        let engine_only = match self.target {
            Target::Server => json!({
                "shard_number": self.shard_number,
                "replication_factor": self.replication_factor,
                "write_consistency_factor": self.write_consistency_factor,
            }),
            Target::Edge => json!({ "wal": self.wal.unwrap_or(true) }),
        };
        json!({
            "dim": self.dim,
            "expected_points": self.expected_points,
            "m": self.m,
            "ef_construct": self.ef_construct,
            "indexing_threshold_kb": {
                "kb": indexing.kb,
                "origin": indexing.origin.as_str(),
                // Qdrant reads 0 as "never index".
                "indexing_disabled": indexing.kb == 0,
                "min_points_to_index": indexing.kb.saturating_mul(1024).div_ceil(vector_bytes),
            },
            "full_scan_threshold_kb": {
                "kb": full_scan.kb,
                "origin": full_scan.origin.as_str(),
                // Qdrant scans a segment with fewer available vectors than this.
                "min_points_for_hnsw_search": full_scan.kb.saturating_mul(1024) / vector_bytes,
            },
            "threshold_rule": THRESHOLD_RULE,
            "on_disk": self.on_disk,
            "hnsw_on_disk": self.hnsw_on_disk,
            "quantization": self.quantization.label(),
            "quantization_always_ram": self.quantization_always_ram,
            "datatype": self.datatype.name(),
            "datatype_origin": if self.datatype_from_user { "user" } else { "dataset element type" },
            "engine_only": engine_only,
        })
    }
}

/// Rejects names that are unknown or belong to the other target, with one message for both.
pub(super) fn check_build_names(params: &ParamMap, target: Target) -> Result<(), SettingsError> {
    for name in params.keys() {
        let name = name.as_str();
        if COMMON_BUILD_PARAMS.contains(&name) || target.own_params().contains(&name) {
            continue;
        }
        let message = if SERVER_BUILD_PARAMS.contains(&name) {
            "is a cluster setting of a Qdrant server (engine qdrant); qdrant-edge is one local \
             shard"
                .to_string()
        } else if EDGE_BUILD_PARAMS.contains(&name) {
            "applies to qdrant-edge only; a Qdrant server (engine qdrant) always keeps its \
             write-ahead log"
                .to_string()
        } else {
            format!(
                "unknown build parameter; Qdrant takes {}; a server also {}; qdrant-edge also {}",
                COMMON_BUILD_PARAMS.join(", "),
                SERVER_BUILD_PARAMS.join(", "),
                EDGE_BUILD_PARAMS.join(", ")
            )
        };
        return Err(SettingsError::new(name, message));
    }
    Ok(())
}

/// A positive integer that must fit the u32 fields of Qdrant's cluster settings.
pub(super) fn get_u32_min1(params: &ParamMap, name: &str) -> Result<Option<u32>, SettingsError> {
    match params.get_u64(name)? {
        None => Ok(None),
        Some(v) => match u32::try_from(v) {
            Ok(n) if n >= 1 => Ok(Some(n)),
            _ => Err(SettingsError::new(
                name,
                format!("must be between 1 and {}, got {v}", u32::MAX),
            )),
        },
    }
}

/// The indexing and full-scan thresholds: the user's, else derived from the collection's
/// `expected_points` and `dim`.
fn parse_thresholds(
    params: &ParamMap,
    expected_points: usize,
    dim: usize,
) -> Result<(Threshold, Threshold), SettingsError> {
    let indexing_threshold = match params.get_u64("indexing_threshold")? {
        Some(kb) => Threshold {
            kb,
            origin: Origin::User,
        },
        None => Threshold {
            kb: derived_indexing_threshold(expected_points, dim),
            origin: Origin::Derived,
        },
    };
    // A Qdrant server refuses a full-scan threshold below 10 KB at collection creation
    // (its request validation). The engine in-process takes any, but both targets keep
    // the server's minimum so that the same settings behave the same on both (a segment
    // under it is scanned exactly on either). Derived values are raised to it; a user's
    // below it is refused before anything is built or sent.
    let minimum = QDRANT_SERVER_MIN_FULL_SCAN_THRESHOLD_KB;
    let full_scan_threshold = match params.get_u64("full_scan_threshold")? {
        Some(kb) if kb < minimum => {
            return Err(SettingsError::new(
                "full_scan_threshold",
                format!("{kb} KB is below Qdrant's minimum of {minimum} KB (a server refuses it)"),
            ));
        }
        Some(kb) => Threshold {
            kb,
            origin: Origin::User,
        },
        None => Threshold {
            kb: derived_full_scan_threshold(indexing_threshold.kb),
            origin: Origin::Derived,
        },
    };
    Ok((indexing_threshold, full_scan_threshold))
}

/// The quantization and whether its vectors stay in RAM; a setting that only applies to
/// another quantization is refused.
fn parse_quantization(params: &ParamMap) -> Result<(Quantization, Option<bool>), SettingsError> {
    let quantization = match params
        .get_str("quantization")?
        .unwrap_or("none")
        .to_ascii_lowercase()
        .as_str()
    {
        "none" => Quantization::None,
        "int8" | "scalar" => Quantization::Int8,
        "binary" => Quantization::Binary,
        "product" | "pq" => Quantization::Product(match params.get("pq_compression") {
            Some(value) => PqCompression::parse(value)?,
            None => PqCompression::X16,
        }),
        other => {
            return Err(SettingsError::new(
                "quantization",
                format!("must be none, int8 (or scalar), binary or product (or pq), got `{other}`"),
            ));
        }
    };
    // A setting that would have no effect is refused rather than recorded as if it had.
    if params.contains_key("pq_compression") && !matches!(quantization, Quantization::Product(_)) {
        return Err(SettingsError::new(
            "pq_compression",
            "only applies with quantization = product",
        ));
    }
    let quantization_always_ram = params.get_bool("quantization_always_ram")?;
    if quantization_always_ram.is_some() && quantization == Quantization::None {
        return Err(SettingsError::new(
            "quantization_always_ram",
            "only applies with quantization = int8, binary or product",
        ));
    }
    Ok((quantization, quantization_always_ram))
}

/// The stored datatype the user asked for, if any.
fn parse_datatype(params: &ParamMap) -> Result<Option<ElementType>, SettingsError> {
    let datatype = match params.get_str("datatype")? {
        None => None,
        Some(name) => match name.parse::<ElementType>() {
            Ok(t @ (ElementType::Float32 | ElementType::Uint8 | ElementType::Float16)) => Some(t),
            _ => {
                return Err(SettingsError::new(
                    "datatype",
                    format!("must be float32, uint8 or float16 (Qdrant's datatypes), got `{name}`"),
                ));
            }
        },
    };
    Ok(datatype)
}
