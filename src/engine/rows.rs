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
}
