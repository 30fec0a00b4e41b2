//! Unit tests of the pgvector adapter's pure parts (no server).

use super::copy::{abbreviate_vectors, encode_copy, f32_to_f16};
use super::params::{BuildParams, SearchParams};
use super::sql::{Collection, IndexKind, VecType, index_name, quote_ident, recommended_lists};
use super::*;
use crate::adapters::support::testing::map as params;
use crate::params::ParamValue;

#[test]
fn half_precision_conversion() {
    assert_eq!(f32_to_f16(0.0), Some(0));
    assert_eq!(f32_to_f16(-0.0), Some(0x8000));
    assert_eq!(f32_to_f16(1.0), Some(0x3C00));
    assert_eq!(f32_to_f16(-2.0), Some(0xC000));
    assert_eq!(f32_to_f16(0.5), Some(0x3800));
    assert_eq!(f32_to_f16(65504.0), Some(0x7BFF));
    assert_eq!(f32_to_f16(65520.0), None);
    assert_eq!(f32_to_f16(f32::INFINITY), None);
    assert_eq!(f32_to_f16(f32::NAN), None);
    // Smallest subnormal half, and a value that rounds to zero.
    assert_eq!(f32_to_f16(5.960_464_5e-8), Some(1));
    assert_eq!(f32_to_f16(1e-9), Some(0));
    // 1 + 2^-11 is a tie between 1.0 and the next half: rounds to even (1.0).
    assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), Some(0x3C00));
    assert_eq!(f32_to_f16(1.0 + 3.0 / 2048.0), Some(0x3C02));
}

#[test]
fn copy_encoding_layout() {
    let data = encode_copy(&[7], &[1.0, 2.0], 2, VecType::Vector, None).unwrap();
    assert_eq!(&data[..11], b"PGCOPY\n\xff\r\n\0");
    // header 19 + (2 + 4 + 8 + 4 + 4 + 8) + trailer 2
    assert_eq!(data.len(), 19 + 30 + 2);
    assert_eq!(&data[19..21], &2i16.to_be_bytes());
    assert_eq!(&data[25..33], &7i64.to_be_bytes());
    assert_eq!(&data[33..37], &12i32.to_be_bytes());
    assert_eq!(&data[37..39], &2u16.to_be_bytes());
    assert_eq!(&data[41..45], &1.0f32.to_be_bytes());
    assert_eq!(&data[data.len() - 2..], &(-1i16).to_be_bytes());
    let half = encode_copy(&[1], &[1.0, 2.0], 2, VecType::HalfVec, None).unwrap();
    assert_eq!(half.len(), 19 + 26 + 2);
    assert!(encode_copy(&[1], &[1e6, 0.0], 2, VecType::HalfVec, None).is_err());
}

#[test]
fn build_params_are_checked() {
    let p = BuildParams::parse(&params(&[])).unwrap();
    assert_eq!((p.index, p.m, p.ef_construction), (IndexKind::Hnsw, 16, 64));
    assert!(BuildParams::parse(&params(&[("ef_construct", ParamValue::Int(64))])).is_err());
    assert!(BuildParams::parse(&params(&[("lists", ParamValue::Int(10))])).is_err());
    assert!(
        BuildParams::parse(&params(&[
            ("index", ParamValue::Str("ivfflat".into())),
            ("m", ParamValue::Int(8)),
        ]))
        .is_err()
    );
    assert!(
        BuildParams::parse(&params(&[
            ("m", ParamValue::Int(32)),
            ("ef_construction", ParamValue::Int(40)),
        ]))
        .is_err()
    );
    assert!(BuildParams::parse(&params(&[("type", ParamValue::Str("int8".into()))])).is_err());
    assert!(BuildParams::parse(&params(&[("maintenance_work_mem", ParamValue::Int(1))])).is_err());
}

#[test]
fn search_params_and_settings() {
    assert!(SearchParams::parse(&params(&[("hnsw_ef", ParamValue::Int(10))])).is_err());
    assert!(SearchParams::parse(&params(&[("ef_search", ParamValue::Int(0))])).is_err());
    let p = SearchParams::parse(&params(&[
        ("ef_search", ParamValue::Int(80)),
        ("iterative_scan", ParamValue::Str("strict_order".into())),
    ]))
    .unwrap();
    assert!(p.check_against(IndexKind::IvfFlat).is_err());
    let sql = p.settings_sql(IndexKind::Hnsw);
    assert!(sql.contains("SET hnsw.ef_search = 80;"), "{sql}");
    assert!(sql.contains("RESET ivfflat.probes;"), "{sql}");
    assert!(
        sql.contains("SET hnsw.iterative_scan = 'strict_order';"),
        "{sql}"
    );
    assert!(sql.contains("RESET enable_seqscan;"), "{sql}");
    let forced = SearchParams::parse(&params(&[("seqscan", ParamValue::Bool(false))])).unwrap();
    assert!(
        forced
            .settings_sql(IndexKind::Hnsw)
            .contains("SET enable_seqscan = off;")
    );
}

#[test]
fn names_and_sql() {
    let long = "x".repeat(80);
    let idx = index_name(&long);
    assert!(idx.len() <= 63, "{idx}");
    assert_ne!(index_name("a"), index_name("b"));
    assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    assert_eq!(recommended_lists(5_000), 5);
    assert_eq!(recommended_lists(10), 1);
    assert_eq!(recommended_lists(4_000_000), 2000);
    assert_eq!(
        abbreviate_vectors("Order By: (embedding <-> '[1,2.5,-3]'::vector) x '[4]'"),
        "Order By: (embedding <-> '[...]'::vector) x '[...]'"
    );
    assert_eq!(abbreviate_vectors("no vectors '[1"), "no vectors '[1");
    let col = Collection {
        name: "t".into(),
        table: quote_ident("t"),
        index_name: index_name("t"),
        dim: 3,
        distance: Distance::Angular,
        build: BuildParams::parse(&params(&[(
            "quantization",
            ParamValue::Str("binary".into()),
        )]))
        .unwrap(),
        index: None,
        probe: None,
        plans: Map::new(),
        attributes: None,
    };
    let sql = col.search_sql(10, 40);
    assert!(sql.contains("<=>"));
    assert!(sql.contains("LIMIT 40) AS candidates") && sql.ends_with("LIMIT 10"), "{sql}");
    assert!(
        col.index_sql(None)
            .contains("(binary_quantize(embedding)::bit(3)) bit_hamming_ops")
    );
    assert_eq!(col.rerank(&SearchParams::default(), 10), 40);
}

#[test]
fn filters_become_where_clauses_with_parameters() {
    use crate::filter::{Attributes, Column, Condition, Predicate};
    let p = Predicate {
        all: vec![
            Condition::equals("label", "it's"),
            Condition::range("num", 5..9),
        ],
    };
    let (sql, values) = super::filter::where_clause(&p, 3);
    assert_eq!(
        sql,
        "\"label\" = $3::text AND \"num\" >= $4::int8 AND \"num\" < $5::int8"
    );
    assert_eq!(values.len(), 3);
    let mut a = Attributes::new(2);
    a.push(
        "label",
        Column::Keyword {
            dictionary: vec!["x".into()],
            codes: vec![0, 0],
        },
    )
    .unwrap();
    a.push("num", Column::Integer(vec![1, 2])).unwrap();
    let upsert = super::filter::upsert_sql("\"t\"", "", &a);
    assert!(upsert.contains("unnest($1::int8[], $2::vector[], $3::text[], $4::int8[])"), "{upsert}");
    assert!(upsert.contains("\"label\" = EXCLUDED.\"label\""), "{upsert}");
    assert_eq!(super::filter::columns_ddl(Some(&a)), ", \"label\" text NOT NULL, \"num\" bigint NOT NULL");
    // max_scan_tuples is an HNSW setting, checked and reset like the others.
    let s = SearchParams::parse(&params(&[("max_scan_tuples", ParamValue::Int(5000))])).unwrap();
    assert!(s.settings_sql(IndexKind::Hnsw).contains("SET hnsw.max_scan_tuples = 5000;"));
    assert!(s.check_against(IndexKind::IvfFlat).is_err());
    assert!(SearchParams::default().settings_sql(IndexKind::Hnsw).contains("RESET hnsw.max_scan_tuples;"));
    assert!(SearchParams::parse(&params(&[("max_scan_tuples", ParamValue::Int(0))])).is_err());
}

#[test]
fn wire_vector_encoding_is_pgvectors_binary_format() {
    use postgres::types::{ToSql, Type};
    let query = [1.5f32, -0.25, 0.0, f32::MAX, 1e-30];
    let mut ours = bytes::BytesMut::new();
    super::wire::put_vector(&query, &mut ours).unwrap();
    let mut theirs = bytes::BytesMut::new();
    Vector::from(query.to_vec())
        .to_sql(&Type::BYTEA, &mut theirs)
        .unwrap();
    assert_eq!(ours, theirs);
    assert_eq!(&ours[..4], &[0, 5, 0, 0]);
    // A vector longer than the format's u16 dimension is refused, not truncated.
    assert!(super::wire::put_vector(&vec![0.0; 70_000], &mut ours).is_err());
}
