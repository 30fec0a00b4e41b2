//! Unit tests of the redis adapter that need no server.

use super::reply::parse_neighbors;
use super::set::{Quantization, SetSpec};
use super::*;
use crate::secret::redact;

#[test]
fn redacts_credentials() {
    assert_eq!(redact("redis://u:secret@h:1"), "redis://u:***@h:1");
    assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
}

#[test]
fn parses_resp2_and_resp3_scores() {
    let mut out = Vec::new();
    let resp2 = Value::Array(vec![
        Value::BulkString(b"7".to_vec()),
        Value::BulkString(b"0.75".to_vec()),
    ]);
    parse_neighbors(&resp2, &mut out).unwrap();
    assert_eq!(out, vec![Neighbor { id: 7, score: 0.75 }]);
    let resp3 = Value::Map(vec![(Value::BulkString(b"9".to_vec()), Value::Double(0.5))]);
    parse_neighbors(&resp3, &mut out).unwrap();
    assert_eq!(out, vec![Neighbor { id: 9, score: 0.5 }]);
    let foreign = Value::Array(vec![
        Value::BulkString(b"x".to_vec()),
        Value::BulkString(b"1".to_vec()),
    ]);
    let err = parse_neighbors(&foreign, &mut out).unwrap_err();
    assert!(err.contains("element `x`"), "{err}");
    // Simple strings and integers are read too; a score that is no number is refused.
    let simple = Value::Array(vec![
        Value::Int(3),
        Value::SimpleString("0.25".into()),
        Value::BulkString(b"4".to_vec()),
        Value::BulkString(b"0.125".to_vec()),
    ]);
    parse_neighbors(&simple, &mut out).unwrap();
    assert_eq!(
        out,
        vec![
            Neighbor { id: 3, score: 0.25 },
            Neighbor { id: 4, score: 0.125 }
        ]
    );
    let bad_score = Value::Array(vec![
        Value::BulkString(b"4".to_vec()),
        Value::BulkString(b"n/a".to_vec()),
    ]);
    let err = parse_neighbors(&bad_score, &mut out).unwrap_err();
    assert!(err.contains("score `n/a`"), "{err}");
}

#[test]
fn normalises_only_when_asked() {
    let mut set = SetSpec {
        key: "k".into(),
        dim: 2,
        quantization: Quantization::Q8,
        m: None,
        ef_construction: None,
        normalize: false,
        attributes: None,
    };
    let raw = set.blob(&[3.0, 4.0]);
    assert_eq!(&raw[..4], &3.0f32.to_le_bytes());
    set.normalize = true;
    let unit = set.blob(&[3.0, 4.0]);
    assert_eq!(&unit[..4], &0.6f32.to_le_bytes());
    assert_eq!(set.blob(&[0.0, 0.0]), vec![0u8; 8]);
}
