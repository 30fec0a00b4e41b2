//! On-disk size of an engine's files (a shard, a persist directory, a server's storage).

use std::fs;
use std::io;
use std::path::Path;

use crate::engine::{EngineError, EngineResult, SourcedBytes};

/// Index size of an engine whose index lives in `dir`: allocated bytes, with the source named
/// (`what`, e.g. "shard directory") so the result file says where the figure came from.
pub fn index_size(engine: &str, dir: &Path, what: &str) -> EngineResult<SourcedBytes> {
    let usage = disk_usage(dir).map_err(|e| {
        EngineError::op(
            engine,
            "index size",
            format!("reading {}: {e}", dir.display()),
        )
    })?;
    Ok(SourcedBytes {
        bytes: usage.allocated,
        source: format!("{what} (allocated blocks, like du)"),
    })
}

/// Bytes under a directory, counted two ways.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskUsage {
    /// Blocks actually allocated, like `du`. This is the figure reported as index size:
    /// engines preallocate sparse memory-mapped files (WAL segments, vector chunks) whose
    /// apparent length overstates what they use.
    pub allocated: u64,
    /// Sum of file lengths.
    pub apparent: u64,
}

/// Walks `dir` without following symlinks (a link must not count twice). A live server may
/// delete files while we walk: entries that vanish are skipped; only `dir` itself must exist.
pub fn disk_usage(dir: &Path) -> io::Result<DiskUsage> {
    let mut usage = DiskUsage::default();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match fs::read_dir(&d) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound && d != dir => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let path = match entry {
                Ok(entry) => entry.path(),
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            let meta = match fs::symlink_metadata(&path) {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                usage.apparent += meta.len();
                usage.allocated += allocated_bytes(&meta);
            }
        }
    }
    Ok(usage)
}

#[cfg(unix)]
fn allocated_bytes(meta: &fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    // `st_blocks` is in 512-byte units whatever the file system's block size.
    meta.blocks() * 512
}

#[cfg(not(unix))]
fn allocated_bytes(meta: &fs::Metadata) -> u64 {
    meta.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_nested_files_and_sparse_space() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("x"), vec![1u8; 100]).unwrap();
        std::fs::write(dir.path().join("a/b/y"), vec![1u8; 28]).unwrap();
        // A sparse 8 MB file: large apparent length, almost nothing allocated.
        let f = std::fs::File::create(dir.path().join("a/sparse")).unwrap();
        f.set_len(8 << 20).unwrap();
        let u = disk_usage(dir.path()).unwrap();
        assert_eq!(u.apparent, 128 + (8 << 20));
        assert!(u.allocated < 1 << 20, "{u:?}");
        assert!(disk_usage(&dir.path().join("missing")).is_err());
    }
}
