//! The one shape check every write and search makes before it reaches an engine: `floats` is
//! exactly `rows` vectors of the collection's dimension. One wording for every engine, so a
//! user (and a test) sees the same message whichever engine refused the input.

use crate::engine::{EngineError, EngineResult};

/// The error for `floats` that are not `rows` vectors of dimension `dim`.
pub fn mismatch(
    engine: &str,
    operation: &str,
    dim: usize,
    rows: usize,
    floats: usize,
) -> EngineError {
    let wanted = rows
        .checked_mul(dim)
        .map_or_else(|| "too many".to_string(), |n| n.to_string());
    EngineError::op(
        engine,
        operation,
        format!(
            "dimension mismatch: expected {rows} vectors of dimension {dim} ({wanted} floats), \
             got {floats} floats"
        ),
    )
}

/// Checks that `floats` is exactly `rows` vectors of dimension `dim`.
pub fn check(
    engine: &str,
    operation: &str,
    dim: usize,
    rows: usize,
    floats: usize,
) -> EngineResult<()> {
    if rows.checked_mul(dim) == Some(floats) {
        Ok(())
    } else {
        Err(mismatch(engine, operation, dim, rows, floats))
    }
}

/// The start of every in-process search into a reused buffer: empties `out`, checks the
/// query's dimension, and answers whether there is anything to search (`k > 0`).
pub fn start_search<T>(
    engine: &str,
    dim: usize,
    query: &[f32],
    k: usize,
    out: &mut Vec<T>,
) -> EngineResult<bool> {
    out.clear();
    check(engine, "search", dim, 1, query.len())?;
    Ok(k > 0)
}

/// [`check`] for a batch of `rows` queries of `dim` floats each against a collection of
/// `collection_dim`: the two dimensions must agree too.
pub fn check_batch(
    engine: &str,
    operation: &str,
    collection_dim: usize,
    dim: usize,
    rows: usize,
    floats: usize,
) -> EngineResult<()> {
    if dim != collection_dim {
        return Err(mismatch(engine, operation, collection_dim, rows, floats));
    }
    check(engine, operation, dim, rows, floats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_wording() {
        assert!(check("e", "upsert", 4, 2, 8).is_ok());
        let err = check("e", "upsert", 4, 2, 7).unwrap_err().to_string();
        assert!(err.contains("dimension mismatch"), "{err}");
        assert!(
            err.contains("2 vectors of dimension 4 (8 floats), got 7"),
            "{err}"
        );
        assert!(check("e", "upsert", usize::MAX, 2, 7).is_err());
    }

    #[test]
    fn a_search_starts_empty_and_stops_at_k_zero() {
        let mut out = vec![1, 2];
        assert!(start_search("e", 2, &[0.0, 1.0], 3, &mut out).unwrap());
        assert!(out.is_empty());
        assert!(!start_search("e", 2, &[0.0, 1.0], 0, &mut out).unwrap());
        assert!(start_search("e", 3, &[0.0, 1.0], 3, &mut out).is_err());
    }
}
