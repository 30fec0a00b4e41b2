//! SQL text: identifiers, index kinds and vector types, the statements a collection runs.

use super::params::{BuildParams, SearchParams};
use super::*;

/// `"name"` with embedded quotes doubled: table names come from dataset names.
pub(super) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `'text'` with embedded quotes doubled.
pub(super) fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// 32-bit FNV-1a: a short stable suffix that keeps derived names unique.
pub(super) fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// The index name of a table. PostgreSQL truncates identifiers to 63 bytes, so `TABLE_idx`
/// of a long table name could collide with the table itself; a hash suffix keeps it unique.
pub(super) fn index_name(table: &str) -> String {
    let mut cut = table.len().min(40);
    while !table.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}_{:08x}_idx", &table[..cut], fnv1a(table))
}

pub(super) fn pg_id(id: PointId) -> EngineResult<i64> {
    i64::try_from(id).map_err(|_| {
        EngineError::op(
            ENGINE,
            "write",
            format!("point id {id} does not fit the table's bigint id column"),
        )
    })
}

/// Which ANN index `CREATE INDEX` builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IndexKind {
    Hnsw,
    IvfFlat,
}

impl IndexKind {
    pub(super) fn method(self) -> &'static str {
        match self {
            IndexKind::Hnsw => "hnsw",
            IndexKind::IvfFlat => "ivfflat",
        }
    }
}

/// Column type of the embeddings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum VecType {
    /// 32-bit floats.
    Vector,
    /// 16-bit floats: half the storage, indexable up to 4,000 dimensions.
    HalfVec,
}

impl VecType {
    pub(super) fn name(self) -> &'static str {
        match self {
            VecType::Vector => "vector",
            VecType::HalfVec => "halfvec",
        }
    }

    /// Bytes per element in pgvector's binary format.
    pub(super) fn elem_bytes(self) -> usize {
        match self {
            VecType::Vector => 4,
            VecType::HalfVec => 2,
        }
    }
}

/// pgvector's operator for a metric: each returns the harness's own distance convention
/// (L2 norm, `1 - cos`, negated inner product), so smaller is always closer.
pub(super) fn distance_operator(distance: Distance) -> &'static str {
    match distance {
        Distance::Euclidean => "<->",
        Distance::Angular => "<=>",
        Distance::Dot => "<#>",
    }
}

pub(super) fn operator_class(ty: VecType, distance: Distance) -> String {
    let metric = match distance {
        Distance::Euclidean => "l2",
        Distance::Angular => "cosine",
        Distance::Dot => "ip",
    };
    format!("{}_{metric}_ops", ty.name())
}

/// Facts about the built index, kept for `describe`.
#[derive(Debug, Clone)]
pub(super) struct IndexInfo {
    pub(super) definition: String,
    pub(super) build_s: f64,
    pub(super) lists: Option<u64>,
    pub(super) maintenance_work_mem: String,
    pub(super) max_parallel_maintenance_workers: String,
    pub(super) notices: Vec<String>,
}

/// The table under test.
#[derive(Debug, Clone)]
pub(super) struct Collection {
    pub(super) name: String,
    pub(super) table: String,
    pub(super) index_name: String,
    pub(super) dim: usize,
    pub(super) distance: Distance,
    pub(super) build: BuildParams,
    pub(super) index: Option<IndexInfo>,
    /// A stored vector, used as the query of `EXPLAIN`.
    pub(super) probe: Option<Vec<f32>>,
    /// The last plan check, for `describe`.
    pub(super) plans: Map<String, Value>,
    /// The points' attributes (one column each), when the run searches with filters.
    pub(super) attributes: Option<Arc<crate::filter::Attributes>>,
}

impl Collection {
    /// The query vector as a `$1` expression of the column's type. The parameter itself is
    /// always sent as `vector` (pgvector's Rust type); the server casts it for `halfvec`.
    pub(super) fn query_expr(&self) -> String {
        match self.build.vec_type {
            VecType::Vector => "$1::vector".into(),
            VecType::HalfVec => format!("$1::vector::halfvec({})", self.dim),
        }
    }

    /// The search statement for `limit` results (and `rerank` candidates with binary
    /// quantization); its one parameter is the query vector, `$1`.
    ///
    /// The limits are literals, not parameters, so that the plan `EXPLAIN` checks is the plan
    /// of the statement searched (a limit only known at execution can change the plan). A
    /// session prepares one statement per (limit, rerank) it is asked for. Every session sets
    /// `plan_cache_mode = force_custom_plan` (`session_setup_sql`), so each execution is
    /// planned with its query vector, as `EXPLAIN` plans it; `pgbench -M prepared` switches to
    /// a generic plan after five executions instead.
    pub(super) fn search_sql(&self, limit: i64, rerank: i64) -> String {
        let op = distance_operator(self.distance);
        let q = self.query_expr();
        let t = &self.table;
        if self.build.binary {
            // The inner ORDER BY matches the index expression, so the bit index serves it;
            // the outer query re-ranks those candidates by the exact distance.
            format!(
                "SELECT id, dist FROM (SELECT id, embedding {op} {q} AS dist FROM {t} \
                 ORDER BY binary_quantize(embedding)::bit({dim}) <~> binary_quantize($1::vector) \
                 LIMIT {rerank}) AS candidates ORDER BY dist, id LIMIT {limit}",
                dim = self.dim
            )
        } else {
            format!(
                "SELECT id, embedding {op} {q} AS dist FROM {t} ORDER BY embedding {op} {q} \
                 LIMIT {limit}"
            )
        }
    }

    pub(super) fn index_sql(&self, lists: Option<u64>) -> String {
        let (expr, opclass) = if self.build.binary {
            (
                format!("(binary_quantize(embedding)::bit({}))", self.dim),
                "bit_hamming_ops".to_string(),
            )
        } else {
            (
                "embedding".to_string(),
                operator_class(self.build.vec_type, self.distance),
            )
        };
        let with = match self.build.index {
            IndexKind::Hnsw => format!(
                "m = {}, ef_construction = {}",
                self.build.m, self.build.ef_construction
            ),
            IndexKind::IvfFlat => format!("lists = {}", lists.unwrap_or(100)),
        };
        format!(
            "CREATE INDEX {} ON {} USING {} ({expr} {opclass}) WITH ({with})",
            quote_ident(&self.index_name),
            self.table,
            self.build.index.method()
        )
    }

    pub(super) fn rerank(&self, params: &SearchParams, k: usize) -> i64 {
        let r = params.rerank.map_or(4 * k as u64, |r| r.max(k as u64));
        i64::try_from(r).unwrap_or(i64::MAX)
    }
}

/// pgvector's IVFFlat recommendation: rows / 1000 up to a million rows, sqrt(rows) above.
pub(super) fn recommended_lists(rows: u64) -> u64 {
    let lists = if rows <= 1_000_000 {
        rows / 1000
    } else {
        (rows as f64).sqrt() as u64
    };
    lists.clamp(IVFFLAT_LISTS.start, IVFFLAT_LISTS.end - 1)
}
