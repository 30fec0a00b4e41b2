//! On-disk size of an engine's files (a shard, a persist directory, a server's storage).

use std::fs;
use std::io;
use std::path::Path;

use crate::engine::{EngineError, EngineResult, SourcedBytes};

/// Allocated bytes under `dir`, with the source named (`what`, e.g. "collection directory")
/// so the result file says where the figure came from.
pub fn dir_bytes(engine: &str, dir: &Path, what: &str) -> EngineResult<SourcedBytes> {
    let usage = disk_usage(dir).map_err(|e| read_error(engine, dir, e))?;
    Ok(SourcedBytes {
        bytes: usage.allocated,
        source: format!("{what} (allocated blocks, like du)"),
    })
}

/// Allocated bytes of the files under `dir` that lie inside a directory whose name satisfies
/// `wanted` (e.g. qdrant's `vector_index*` directories within each segment). Returns `None`
/// when no such directory exists, so "no index built" is not mistaken for a 0-byte index.
pub fn dirs_bytes(
    engine: &str,
    dir: &Path,
    wanted: impl Fn(&str) -> bool,
    what: &str,
) -> EngineResult<Option<SourcedBytes>> {
    let mut found = false;
    let mut bytes = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match fs::read_dir(&d) {
            Ok(entries) => entries,
            // A live engine may delete a segment while we walk.
            Err(e) if e.kind() == io::ErrorKind::NotFound && d != dir => continue,
            Err(e) => return Err(read_error(engine, &d, e)),
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(read_error(engine, &d, e)),
            };
            let path = entry.path();
            let meta = match fs::symlink_metadata(&path) {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(read_error(engine, &path, e)),
            };
            if !meta.is_dir() {
                continue;
            }
            if entry.file_name().to_str().is_some_and(&wanted) {
                found = true;
                match disk_usage(&path) {
                    Ok(u) => bytes += u.allocated,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(read_error(engine, &path, e)),
                }
            } else {
                stack.push(path);
            }
        }
    }
    Ok(found.then(|| SourcedBytes {
        bytes,
        source: format!("{what} (allocated blocks, like du)"),
    }))
}

fn read_error(engine: &str, path: &Path, e: io::Error) -> EngineError {
    EngineError::op(
        engine,
        "storage size",
        format!("reading {}: {e}", path.display()),
    )
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

    #[test]
    fn dirs_bytes_counts_only_the_named_directories() {
        let dir = tempfile::tempdir().unwrap();
        let seg = |s: &str| dir.path().join("segments").join(s);
        std::fs::create_dir_all(seg("a/vector_index")).unwrap();
        std::fs::create_dir_all(seg("a/vector_storage")).unwrap();
        std::fs::create_dir_all(seg("b/vector_index-x/sub")).unwrap();
        std::fs::write(seg("a/vector_index/graph.bin"), vec![1u8; 10_000]).unwrap();
        std::fs::write(seg("a/vector_storage/chunk"), vec![1u8; 100_000]).unwrap();
        std::fs::write(seg("b/vector_index-x/sub/links.bin"), vec![1u8; 20_000]).unwrap();
        std::fs::write(dir.path().join("wal"), vec![1u8; 50_000]).unwrap();
        let is_index = |n: &str| n.starts_with("vector_index");
        let index = dirs_bytes("t", dir.path(), is_index, "graphs")
            .unwrap()
            .unwrap();
        let total = dir_bytes("t", dir.path(), "all").unwrap();
        let graphs = disk_usage(&seg("a/vector_index")).unwrap().allocated
            + disk_usage(&seg("b/vector_index-x")).unwrap().allocated;
        assert_eq!(index.bytes, graphs);
        assert!(index.bytes >= 30_000 && index.bytes < 100_000, "{index:?}");
        assert!(total.bytes >= index.bytes + 150_000, "{total:?}");
        // No such directory: not measured, rather than a 0-byte index.
        assert!(
            dirs_bytes("t", dir.path(), |n| n == "none", "x")
                .unwrap()
                .is_none()
        );
        assert!(dirs_bytes("t", &dir.path().join("missing"), is_index, "x").is_err());
    }
}
