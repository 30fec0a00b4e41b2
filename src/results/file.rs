//! Reading and writing a result document: atomic saves, secrets redacted both ways, the
//! schema checked on load.

use std::path::{Path, PathBuf};

use super::{RunResult, SCHEMA};

/// Problems reading or writing result files.
#[derive(Debug, thiserror::Error)]
pub enum ResultFileError {
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a ragdbeval result file: {message}")]
    Parse { path: PathBuf, message: String },
    #[error(
        "{path} is not a usable interval log (HdrHistogram, from `bench --histogram-logs`): {message}"
    )]
    IntervalLog { path: PathBuf, message: String },
}

impl RunResult {
    /// Writes the document atomically (temp file + rename). Whatever secret reached it (a
    /// password in a URL, an engine's message quoting one) is redacted on the way out.
    pub fn save(&self, path: &Path) -> Result<(), ResultFileError> {
        let text = self.to_json().map_err(|e| ResultFileError::Write {
            path: path.to_path_buf(),
            source: std::io::Error::other(e),
        })?;
        crate::atomic::write_atomic(path, text.as_bytes()).map_err(|e| ResultFileError::Write {
            path: path.to_path_buf(),
            source: e,
        })
    }

    /// The document as pretty-printed JSON, its secrets redacted: what `save` writes and
    /// `bench --json` prints.
    pub fn to_json(&self) -> serde_json::Result<String> {
        Ok(crate::secret::redact(&serde_json::to_string_pretty(self)?))
    }

    pub fn load(path: &Path) -> Result<RunResult, ResultFileError> {
        let text = crate::text::read(path).map_err(|e| ResultFileError::Read {
            path: path.to_path_buf(),
            source: e,
        })?;
        RunResult::parse(&text, path)
    }

    /// A result document from bytes in memory; `path` names it in errors. A file written
    /// before secrets were redacted is redacted as it is read, so that no report, export or
    /// resumed run carries its secret on.
    pub fn parse(text: &[u8], path: &Path) -> Result<RunResult, ResultFileError> {
        let text = crate::text::strip_bom(text).map_err(|e| ResultFileError::Read {
            path: path.to_path_buf(),
            source: e.into(),
        })?;
        let redacted = std::str::from_utf8(text).map(crate::secret::redact);
        let text = redacted.as_deref().map_or(text, str::as_bytes);
        let r: RunResult = serde_json::from_slice(text).map_err(|e| ResultFileError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        if r.schema != SCHEMA {
            return Err(ResultFileError::Parse {
                path: path.to_path_buf(),
                message: format!("schema `{}`, expected `{SCHEMA}`", r.schema),
            });
        }
        Ok(r)
    }
}

#[cfg(test)]
mod round_trip_tests {
    /// A figure read back from a result is the one written, to the bit: `--resume` writes the
    /// kept steps again, and must not move them by an ulp (parsing without serde_json's
    /// `float_roundtrip` read this one as 0.924313).
    #[test]
    fn figures_read_back_to_the_same_bits() {
        for x in [
            0.9243129999999999_f64,
            1.0 / 3.0,
            2.0f64.sqrt() * 1e-7,
            123456.789e200,
        ] {
            let text = serde_json::to_string(&x).unwrap();
            let back: f64 = serde_json::from_str(&text).unwrap();
            assert_eq!(back.to_bits(), x.to_bits(), "{x} written as {text}");
        }
    }
}
