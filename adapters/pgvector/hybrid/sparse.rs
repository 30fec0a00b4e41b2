//! The sparse side of a hybrid table: pgvector's binary `sparsevec` form (for `COPY` fields
//! and query parameters alike), the table's build parameters, and its statements' text.

use std::error::Error;
use std::ops::Range;

use bytes::{BufMut, BytesMut};
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use super::super::copy::{put_copy_header, put_copy_trailer, put_vector_field, vector_field_len};
use super::super::params::{BuildParams, bad_param};
use super::super::sql::{Collection, IndexInfo, IndexKind, VecType, pg_id, quote_ident};
use super::super::{BUILD_PARAMS, ENGINE};
use crate::engine::{EngineError, EngineResult, PointId};
use crate::params::{ParamMap, ParamMapExt};
use crate::sparse::{Csr, SparseRow};
use crate::vectors::Vectors;

/// pgvector's limits: dimensions of a `sparsevec`, nonzero entries one can store, and nonzero
/// entries of one an HNSW index can hold.
pub(super) const MAX_SPARSE_DIM: usize = 1_000_000_000;
pub(super) const MAX_NNZ: usize = 16_000;
pub(super) const HNSW_MAX_NNZ: usize = 1000;

/// The build parameter that chooses the sparse column's index.
pub(super) const SPARSE_INDEX: &str = "sparse_index";

/// What a sparse-only table takes: those of its one HNSW index and of the build session.
const SPARSE_ONLY_PARAMS: &[&str] = &[
    SPARSE_INDEX,
    "m",
    "ef_construction",
    "maintenance_work_mem",
    "parallel_workers",
];

/// Entries of `row` that are not zero: pgvector's binary input refuses zero values ("binary
/// representation of sparsevec cannot contain zero values"), and they add nothing to a dot
/// product.
fn nonzero(row: SparseRow<'_>) -> usize {
    row.values.iter().filter(|v| **v != 0.0).count()
}

/// Bytes of `row` in pgvector's binary form.
fn sparsevec_len(row: SparseRow<'_>) -> usize {
    12 + 8 * nonzero(row)
}

/// `row` in pgvector's binary `sparsevec` form, all big-endian: `int32` dim, `int32` nnz,
/// `int32` unused (0), the `int32` indices (0-based, ascending), then the `float4` values.
/// Zero entries are left out.
pub(super) fn put_sparsevec(buf: &mut impl BufMut, dim: i32, row: SparseRow<'_>) {
    let nnz = nonzero(row);
    buf.put_i32(dim);
    // At most the row's length, which `check_rows` bounds by MAX_NNZ.
    buf.put_i32(i32::try_from(nnz).unwrap_or(i32::MAX));
    buf.put_i32(0);
    let entries = || row.indices.iter().zip(row.values).filter(|(_, v)| **v != 0.0);
    for (i, _) in entries() {
        // An index past i32 is past every dimension too: the server refuses it as out of
        // bounds, which is what it is.
        buf.put_i32(i32::try_from(*i).unwrap_or(i32::MAX));
    }
    for (_, v) in entries() {
        buf.put_f32(*v);
    }
}

/// A query as a binary `sparsevec` parameter of a statement.
#[derive(Debug)]
pub(super) struct SparseParam<'a> {
    pub(super) dim: i32,
    pub(super) row: SparseRow<'a>,
}

impl ToSql for SparseParam<'_> {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        put_sparsevec(out, self.dim, self.row);
        Ok(IsNull::No)
    }

    // An extension type has no fixed oid: it is known by name.
    fn accepts(ty: &Type) -> bool {
        ty.name() == "sparsevec"
    }

    to_sql_checked!();
}

/// Fails on a row pgvector cannot store, or, with an HNSW index, cannot index.
pub(super) fn check_rows(sparse: &Csr, rows: Range<usize>, hnsw: bool) -> EngineResult<()> {
    for r in rows {
        let nnz = nonzero(sparse.entries(r));
        if nnz > MAX_NNZ {
            return Err(EngineError::op(
                ENGINE,
                "bulk insert",
                format!("row {r} has {nnz} nonzero entries; a sparsevec holds at most {MAX_NNZ}"),
            ));
        }
        if hnsw && nnz > HNSW_MAX_NNZ {
            return Err(EngineError::op(
                ENGINE,
                "bulk insert",
                format!(
                    "row {r} has {nnz} nonzero entries; pgvector's HNSW index holds sparse \
                     vectors of at most {HNSW_MAX_NNZ}: pass --build-param sparse_index=none \
                     (an exact sequential scan) or shorten the rows"
                ),
            ));
        }
    }
    Ok(())
}

/// Rows `rows` in binary `COPY` form for the columns `(id, sparse[, embedding])`: the id is
/// the row, the dense vector (with `dense`) encoded as the dense adapter encodes it.
pub(super) fn encode_rows(
    sparse: &Csr,
    dim: i32,
    dense: Option<(&Vectors, VecType)>,
    rows: Range<usize>,
) -> EngineResult<Vec<u8>> {
    let fields: i16 = if dense.is_some() { 3 } else { 2 };
    let entries = sparse.indptr[rows.end] - sparse.indptr[rows.start];
    let dense_len = dense.map_or(0, |(v, ty)| 4 + vector_field_len(v.dim(), ty));
    let mut buf =
        Vec::with_capacity(21 + rows.len() * (2 + 12 + 4 + 12 + dense_len) + 8 * entries);
    put_copy_header(&mut buf);
    for r in rows {
        let id = r as PointId;
        let row = sparse.entries(r);
        buf.put_i16(fields);
        buf.put_i32(8);
        buf.put_i64(pg_id(id)?);
        // Within i32: `check_rows` bounds the entries by MAX_NNZ.
        buf.put_i32(i32::try_from(sparsevec_len(row)).unwrap_or(i32::MAX));
        put_sparsevec(&mut buf, dim, row);
        if let Some((vectors, ty)) = dense {
            put_vector_field(&mut buf, id, vectors.row(r), ty)?;
        }
    }
    put_copy_trailer(&mut buf);
    Ok(buf)
}

/// Parsed build parameters: whether the sparse column gets an HNSW index, and the dense
/// adapter's parameters (`m`, `ef_construction` for every HNSW index of the table; the
/// vector column's type and quantization in a hybrid table; the build session's settings).
pub(super) fn parse_build(params: &ParamMap, dense: bool) -> EngineResult<(bool, BuildParams)> {
    let hnsw = match params
        .get_str(SPARSE_INDEX)
        .map_err(|e| bad_param(SPARSE_INDEX, e))?
        .unwrap_or("hnsw")
    {
        "hnsw" => true,
        "none" => false,
        other => {
            return Err(bad_param(
                SPARSE_INDEX,
                format!("`{other}`: expected hnsw (pgvector's only sparsevec index) or none (exact scans)"),
            ));
        }
    };
    let mut rest = params.clone();
    rest.remove(SPARSE_INDEX);
    if !dense {
        let known = |p: &&String| SPARSE_ONLY_PARAMS.contains(&p.as_str());
        if let Some(p) = rest.keys().find(|p| !known(p)) {
            let why = if BUILD_PARAMS.contains(&p.as_str()) {
                "applies to the vector column of a hybrid table (--retrieval hybrid)".to_string()
            } else {
                format!("unknown; a sparse table takes {}", SPARSE_ONLY_PARAMS.join(", "))
            };
            return Err(bad_param(p, why));
        }
        if !hnsw && let Some(p) = ["m", "ef_construction"].iter().find(|p| rest.contains_key(**p)) {
            return Err(bad_param(p, "sets the HNSW index that sparse_index = none does not build"));
        }
    }
    let build = BuildParams::parse(&rest)?;
    if dense && build.index != IndexKind::Hnsw {
        return Err(bad_param(
            "index",
            "a hybrid table's vector index is HNSW: its sparse one is too, and both read the \
             session's hnsw.* search settings",
        ));
    }
    Ok((hnsw, build))
}

/// The hybrid table: its sparse column, and whether it has a vector column (whose
/// [`Collection`] the dense engine holds).
#[derive(Debug, Clone)]
pub(super) struct SparseTable {
    pub(super) name: String,
    /// Quoted.
    pub(super) table: String,
    pub(super) dim: i32,
    /// The sparse column has an HNSW index (`sparse_index = hnsw`).
    pub(super) hnsw: bool,
    pub(super) index_name: String,
    pub(super) build: BuildParams,
    pub(super) index: Option<IndexInfo>,
    /// A stored row with entries, the query of `EXPLAIN`.
    pub(super) probe: Option<(Vec<u32>, Vec<f32>)>,
    /// The last plan check, for `describe`.
    pub(super) plans: serde_json::Map<String, serde_json::Value>,
    pub(super) dense: bool,
}

impl SparseTable {
    pub(super) fn column_ddl(&self) -> String {
        format!("sparse sparsevec({}) NOT NULL", self.dim)
    }

    pub(super) fn probe(&self) -> SparseParam<'_> {
        let (indices, values) = self
            .probe
            .as_ref()
            .map_or((&[][..], &[][..]), |(i, v)| (&i[..], &v[..]));
        SparseParam {
            dim: self.dim,
            row: SparseRow { indices, values },
        }
    }

    /// `(id, sparse <#> query)` of the `limit` rows of largest inner product with the query,
    /// parameter `$param`. `<#>` is the negated inner product, so that ascending order is
    /// best first, as the HNSW index yields it. The limit is a literal for the reason
    /// [`Collection::search_sql`] gives.
    pub(super) fn search_sql(&self, param: usize, limit: i64) -> String {
        let by = format!("sparse <#> ${param}::sparsevec");
        format!(
            "SELECT id, {by} AS neg_ip FROM {} ORDER BY {by} LIMIT {limit}",
            self.table
        )
    }

    pub(super) fn index_sql(&self) -> String {
        format!(
            "CREATE INDEX {} ON {} USING hnsw (sparse sparsevec_ip_ops) WITH (m = {}, \
             ef_construction = {})",
            quote_ident(&self.index_name),
            self.table,
            self.build.m,
            self.build.ef_construction
        )
    }

    /// Reciprocal rank fusion in one statement: the dense search (`$1`, `dense`'s own
    /// statement) and the sparse one (`$2`), `depth` deep each, ranked from 1 by their scores
    /// (ties by id), fused as `Σ 1 / (c + rank)` and cut to the top `k` (ties by id), as the
    /// runner's client-side fusion does it. Sparse rows of inner product 0 are left out of
    /// the sparse list, as [`super::PgHybrid`]'s sparse search leaves them out. Float arithmetic in the same order (dense, then
    /// sparse) makes the two give the same scores.
    pub(super) fn fused_sql(
        &self,
        dense: &Collection,
        (depth, rerank): (i64, i64),
        c: f64,
        k: i64,
    ) -> String {
        format!(
            "WITH dense_ranks AS (SELECT id, row_number() OVER (ORDER BY dist, id) AS r \
             FROM ({dense_sql}) AS d), \
             sparse_ranks AS (SELECT id, row_number() OVER (ORDER BY neg_ip, id) AS r \
             FROM ({sparse_sql}) AS s WHERE neg_ip <> 0) \
             SELECT COALESCE(dense_ranks.id, sparse_ranks.id) AS id, \
             COALESCE(1.0::float8 / ({c:?}::float8 + dense_ranks.r), 0) \
             + COALESCE(1.0::float8 / ({c:?}::float8 + sparse_ranks.r), 0) AS score \
             FROM dense_ranks FULL OUTER JOIN sparse_ranks ON dense_ranks.id = sparse_ranks.id \
             ORDER BY score DESC, id LIMIT {k}",
            dense_sql = dense.search_sql(depth, rerank),
            sparse_sql = self.search_sql(2, depth),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;

    #[test]
    fn sparsevec_binary_layout() {
        let row = SparseRow {
            indices: &[3, 7, 9],
            values: &[1.5, 0.0, -2.0],
        };
        let mut buf = Vec::new();
        put_sparsevec(&mut buf, 10, row);
        // dim 10, nnz 2 (the zero is left out), unused 0, indices 3 and 9, values 1.5, -2.0.
        let expected: [u8; 28] = [
            0x00, 0x00, 0x00, 0x0a, //
            0x00, 0x00, 0x00, 0x02, //
            0x00, 0x00, 0x00, 0x00, //
            0x00, 0x00, 0x00, 0x03, //
            0x00, 0x00, 0x00, 0x09, //
            0x3f, 0xc0, 0x00, 0x00, // 1.5
            0xc0, 0x00, 0x00, 0x00, // -2.0
        ];
        assert_eq!(buf, expected);
        assert_eq!(sparsevec_len(row), expected.len());
        // The query parameter is the same bytes.
        let mut param = BytesMut::new();
        let query = SparseParam { dim: 10, row };
        assert!(matches!(query.to_sql(&Type::BYTEA, &mut param), Ok(IsNull::No)));
        assert_eq!(&param[..], &expected[..]);
    }

    #[test]
    fn copy_rows_layout() {
        let sparse = Csr::from_rows(4, &[vec![(1, 2.0)], vec![]]);
        let data = encode_rows(&sparse, 4, None, 1..2).unwrap();
        assert_eq!(&data[..11], b"PGCOPY\n\xff\r\n\0");
        // header 19, row: fields 2, id (4 + 8), sparsevec (4 + 12), trailer 2.
        assert_eq!(data.len(), 19 + 2 + 12 + 16 + 2);
        assert_eq!(&data[19..21], &2i16.to_be_bytes());
        assert_eq!(&data[25..33], &1i64.to_be_bytes());
        assert_eq!(&data[33..37], &12i32.to_be_bytes());
        assert_eq!(&data[37..49], &[0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0]);
        let row0 = encode_rows(&sparse, 4, None, 0..1).unwrap();
        assert_eq!(&row0[33..37], &20i32.to_be_bytes());
        assert_eq!(&row0[49..57], &[0, 0, 0, 1, 0x40, 0, 0, 0]);
    }

    #[test]
    fn rows_past_the_hnsw_limit_are_refused() {
        let long: Vec<(u32, f32)> = (0..1001).map(|i| (i, 1.0)).collect();
        let sparse = Csr::from_rows(2000, &[long]);
        let err = check_rows(&sparse, 0..1, true).unwrap_err().to_string();
        assert!(err.contains("sparse_index=none"), "{err}");
        assert!(check_rows(&sparse, 0..1, false).is_ok());
    }

    #[test]
    fn build_params_are_checked() {
        let p = |pairs: &[(&str, ParamValue)]| -> ParamMap {
            pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
        };
        let (hnsw, build) = parse_build(&p(&[]), false).unwrap();
        assert!(hnsw);
        assert_eq!((build.m, build.ef_construction), (16, 64));
        let none = p(&[(SPARSE_INDEX, ParamValue::Str("none".into()))]);
        assert!(!parse_build(&none, false).unwrap().0);
        assert!(parse_build(&p(&[(SPARSE_INDEX, ParamValue::Str("ivf".into()))]), false).is_err());
        // Dense-side parameters need a vector column.
        let typed = p(&[("type", ParamValue::Str("halfvec".into()))]);
        assert!(parse_build(&typed, false).is_err());
        assert!(parse_build(&typed, true).is_ok());
        let ivf = p(&[("index", ParamValue::Str("ivfflat".into()))]);
        assert!(parse_build(&ivf, true).is_err());
        let m_without_index = p(&[
            (SPARSE_INDEX, ParamValue::Str("none".into())),
            ("m", ParamValue::Int(8)),
        ]);
        assert!(parse_build(&m_without_index, false).is_err());
    }
}
