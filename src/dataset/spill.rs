//! Train sets too large for memory, written once into a `.fbin` file and memory-mapped.
//!
//! Only a float32 `.fbin` base can be mapped where it lies. Every other format (Parquet,
//! HDF5, 8-bit big-ann files, which are widened to f32) is decoded; when the decoded rows
//! would take more than [`threshold`] bytes, the reader writes them into a *spill file* in the
//! cache directory instead of a `Vec`: a plain big-ann `.fbin` (header `rows, dim` as u32,
//! then the rows), filled through a writable map, flushed, renamed into place, and then mapped
//! read-only like any `.fbin` base. The client's memory then holds no copy of the rows; the
//! kernel pages them in and drops clean pages under pressure.
//!
//! A spill file is named after the dataset's identity (the SHA-256 of its files), the rows
//! kept and the dimension, so a second run maps it without decoding the source again. Its
//! disk blocks are reserved before anything is written (`posix_fallocate`): a full disk is an
//! error that names the size and the directory, never a fault halfway through a mapped write.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::DatasetError;
use crate::types::Progress;
use crate::vectors::Vectors;

/// Environment variable: decoded train sets above this many bytes are spilled (tests set it
/// low; `0` spills everything).
pub const THRESHOLD_ENV: &str = "RAGDBEVAL_MAP_ABOVE_BYTES";

/// The big-ann header: rows and dimension as little-endian u32.
const HEADER_BYTES: usize = 8;

/// Bytes of decoded train rows above which they are spilled: `$RAGDBEVAL_MAP_ABOVE_BYTES`,
/// else half of the memory this process may use (the machine's, or its memory cgroup's limit
/// when lower), so that the rows, the engine and the ground truth still fit beside each other.
pub fn threshold() -> u64 {
    if let Some(bytes) = std::env::var(THRESHOLD_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        return bytes;
    }
    usable_memory() / 2
}

/// Physical memory, or the memory cgroup's limit when it is lower (v2 `memory.max`, v1
/// `memory.limit_in_bytes` of this process's group).
fn usable_memory() -> u64 {
    // SAFETY: sysconf only reads system configuration.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let physical = u64::try_from(pages)
        .ok()
        .zip(u64::try_from(page).ok())
        .map_or(u64::MAX, |(n, p)| n.saturating_mul(p));
    physical.min(cgroup_limit().unwrap_or(u64::MAX))
}

fn cgroup_limit() -> Option<u64> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let read =
        |path: String| -> Option<u64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, group) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.is_empty() {
            // cgroup v2: "0::/path"; `memory.max` is "max" when unlimited (no parse).
            if let Some(limit) = read(format!("/sys/fs/cgroup{group}/memory.max")) {
                return Some(limit);
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            return read(format!(
                "/sys/fs/cgroup/memory{group}/memory.limit_in_bytes"
            ));
        }
    }
    None
}

/// Where a train set's spill file lives: `<cache>/mapped/<identity>-<rows>x<dim>.fbin`.
pub fn path_for(cache_dir: &Path, identity: &str, rows: usize, dim: usize) -> PathBuf {
    let id: String = identity.chars().take(24).collect();
    cache_dir
        .join("mapped")
        .join(format!("{id}-{rows}x{dim}.fbin"))
}

/// What a spill file does not say about its source, kept beside it (`<file>.json`) so that a
/// run that maps an earlier spill reports the same as the run that wrote it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SpillNote {
    /// Rows the source holds (the spill keeps a prefix of them under `--limit`).
    pub rows_in_source: usize,
    /// Some component was a double in the source and is now the nearest f32.
    pub rounded: bool,
}

fn note_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".json");
    PathBuf::from(name)
}

/// The complete spill file at `path`, mapped, with its note, if an earlier run wrote it.
pub fn reuse(path: &Path, rows: usize, dim: usize) -> Option<(Vectors, SpillNote)> {
    let want = (HEADER_BYTES + rows.checked_mul(dim)?.checked_mul(4)?) as u64;
    if std::fs::metadata(path).ok()?.len() != want {
        return None;
    }
    let note: SpillNote =
        serde_json::from_str(&std::fs::read_to_string(note_path(path)).ok()?).ok()?;
    let mapped = super::bigann::map_vectors(path, None).ok()?;
    (mapped.vectors.len() == rows && mapped.vectors.dim() == dim).then_some((mapped.vectors, note))
}

/// An earlier spill of `rows` rows of the dataset `identity`, whatever its dimension.
pub fn find(cache_dir: &Path, identity: &str, rows: usize) -> Option<(Vectors, SpillNote)> {
    let dim_of = |name: &str| -> Option<usize> {
        let probe = path_for(Path::new(""), identity, rows, 0);
        let prefix = probe
            .file_name()?
            .to_str()?
            .strip_suffix("0.fbin")?
            .to_string();
        name.strip_prefix(&prefix)?
            .strip_suffix(".fbin")?
            .parse()
            .ok()
    };
    std::fs::read_dir(cache_dir.join("mapped"))
        .ok()?
        .filter_map(Result::ok)
        .find_map(|entry| {
            let dim = dim_of(entry.file_name().to_str()?)?;
            reuse(&entry.path(), rows, dim)
        })
}

/// Where one dataset's train rows spill to: the cache directory, the dataset's identity and
/// the rows `--limit` keeps.
#[derive(Clone, Copy)]
pub struct SpillTarget<'a> {
    pub cache_dir: &'a Path,
    pub identity: &'a str,
    pub limit: Option<usize>,
    /// Decoded bytes above which rows are spilled ([`threshold`] unless a test says).
    pub above: u64,
    /// Told where the rows go when they are spilled.
    pub progress: &'a dyn Progress,
}

impl SpillTarget<'_> {
    /// Rows kept of a source of `rows_in_source`.
    pub fn kept(&self, rows_in_source: usize) -> usize {
        self.limit.map_or(rows_in_source, |l| l.min(rows_in_source))
    }

    /// An earlier spill of the rows kept from a source of `rows_in_source` rows.
    pub fn find(&self, rows_in_source: usize) -> Option<(Vectors, SpillNote)> {
        find(self.cache_dir, self.identity, self.kept(rows_in_source))
    }

    pub fn path(&self, rows: usize, dim: usize) -> PathBuf {
        path_for(self.cache_dir, self.identity, rows, dim)
    }

    /// A new spill file for `rows × dim` floats, announced.
    pub fn create(&self, rows: usize, dim: usize) -> Result<SpillFile, DatasetError> {
        let path = self.path(rows, dim);
        self.progress.message(&format!(
            "train vectors: {rows} × {dim} f32 ({:.1} GB) are more than {:.1} GB, so they are \
             written once to {} and memory-mapped (later runs map it directly)",
            rows as f64 * dim as f64 * 4.0 / 1e9,
            self.above as f64 / 1e9,
            path.display()
        ));
        SpillFile::create(&path, rows, dim)
    }

    /// Whether `rows × dim` decoded floats are too many for memory.
    pub fn needed(&self, rows: usize, dim: usize) -> bool {
        (rows as u64).saturating_mul(dim as u64).saturating_mul(4) > self.above
    }
}

/// A spill file being filled: `rows × dim` f32 values behind a writable map.
pub struct SpillFile {
    map: memmap2::MmapMut,
    partial: PathBuf,
    path: PathBuf,
    rows: usize,
    dim: usize,
}

impl SpillFile {
    /// Creates `path` (as `path.partial` until [`SpillFile::finish`]) with its blocks reserved.
    pub fn create(path: &Path, rows: usize, dim: usize) -> Result<SpillFile, DatasetError> {
        let fail = |message: String| DatasetError::Format {
            path: path.to_path_buf(),
            message,
        };
        let header_rows = u32::try_from(rows)
            .map_err(|_| fail(format!("{rows} rows do not fit a .fbin header (u32)")))?;
        let header_dim = u32::try_from(dim)
            .map_err(|_| fail(format!("dimension {dim} does not fit a .fbin header (u32)")))?;
        let bytes = rows
            .checked_mul(dim)
            .and_then(|n| n.checked_mul(4))
            .and_then(|n| n.checked_add(HEADER_BYTES))
            .ok_or_else(|| fail(format!("{rows} rows × {dim} overflow")))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| DatasetError::io(dir, e))?;
        let mut partial = path.as_os_str().to_os_string();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&partial)
            .map_err(|e| DatasetError::io(&partial, e))?;
        reserve(&file, bytes as u64).map_err(|e| {
            let _ = std::fs::remove_file(&partial);
            fail(format!(
                "cannot reserve {:.1} GB in {} for the memory-mapped copy of the train \
                 vectors ({e}); free space there, or point --data-dir (RAGDBEVAL_DATA_DIR) \
                 at a larger disk",
                bytes as f64 / 1e9,
                dir.display()
            ))
        })?;
        // SAFETY: the file was just created by this process and its blocks are reserved, so
        // writes through the map cannot fault for lack of space; nothing else opens it.
        let mut map = unsafe { memmap2::MmapMut::map_mut(&file) }
            .map_err(|e| DatasetError::io(&partial, e))?;
        map[..4].copy_from_slice(&header_rows.to_le_bytes());
        map[4..8].copy_from_slice(&header_dim.to_le_bytes());
        Ok(SpillFile {
            map,
            partial,
            path: path.to_path_buf(),
            rows,
            dim,
        })
    }

    /// The rows, to be filled in any order.
    pub fn as_mut_slice(&mut self) -> &mut [f32] {
        let values = &mut self.map[HEADER_BYTES..];
        debug_assert!((values.as_ptr() as usize).is_multiple_of(4));
        // SAFETY: the map starts on a page boundary, so byte 8 is 4-byte aligned; it holds
        // exactly rows × dim × 4 bytes after the header (the file was sized so), and every
        // bit pattern is a valid f32.
        unsafe {
            std::slice::from_raw_parts_mut(values.as_mut_ptr().cast::<f32>(), self.rows * self.dim)
        }
    }

    /// Writes the rows to disk, moves the file into place (its note first: a complete file
    /// always has one) and maps it read-only.
    pub fn finish(self, note: &SpillNote) -> Result<Vectors, DatasetError> {
        self.map
            .flush()
            .map_err(|e| DatasetError::io(&self.partial, e))?;
        let note_file = note_path(&self.path);
        let text = serde_json::to_string(note).unwrap_or_default();
        crate::atomic::write_atomic(&note_file, text.as_bytes())
            .map_err(|e| DatasetError::io(&note_file, e))?;
        std::fs::rename(&self.partial, &self.path).map_err(|e| DatasetError::io(&self.path, e))?;
        Ok(super::bigann::map_vectors(&self.path, None)?.vectors)
    }

    /// Where the finished file will be.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SpillFile {
    /// An unfinished spill (a read error halfway) leaves no partial file behind.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.partial);
    }
}

fn reserve(file: &File, bytes: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let len = libc::off_t::try_from(bytes)
        .map_err(|_| std::io::Error::other(format!("{bytes} bytes exceed off_t")))?;
    // SAFETY: a valid open descriptor and a non-negative length.
    match unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) } {
        0 => Ok(()),
        // File systems without fallocate (some network ones): size the file instead; a full
        // disk then shows only when pages are written back.
        libc::EOPNOTSUPP | libc::ENOSYS => file.set_len(bytes),
        code => Err(std::io::Error::from_raw_os_error(code)),
    }
}

/// Rows being decoded: in memory, or straight into a spill file when they are too many.
pub enum RowSink {
    Memory(Vec<f32>),
    Spill(SpillFile),
}

impl RowSink {
    /// Room for `rows × dim` values; spilled where `target` says when they are too many.
    /// `what` names the rows in the error when memory runs out.
    pub fn new(
        rows: usize,
        dim: usize,
        target: &SpillTarget<'_>,
        what: &Path,
    ) -> Result<RowSink, DatasetError> {
        let values = rows.checked_mul(dim).ok_or_else(|| DatasetError::Format {
            path: what.to_path_buf(),
            message: format!("{rows} rows × {dim} overflow"),
        })?;
        if target.needed(rows, dim) {
            return Ok(RowSink::Spill(target.create(rows, dim)?));
        }
        let mut data = Vec::new();
        data.try_reserve_exact(values)
            .map_err(|_| DatasetError::Format {
                path: what.to_path_buf(),
                message: format!(
                    "{rows} rows × {dim} components ({:.1} GB) do not fit in memory",
                    values as f64 * 4.0 / 1e9
                ),
            })?;
        data.resize(values, 0.0);
        Ok(RowSink::Memory(data))
    }

    pub fn as_mut_slice(&mut self) -> &mut [f32] {
        match self {
            RowSink::Memory(v) => v,
            RowSink::Spill(s) => s.as_mut_slice(),
        }
    }

    /// The filled rows as [`Vectors`]: owned, or the finished spill file mapped.
    pub fn finish(
        self,
        dim: usize,
        note: &SpillNote,
        what: &Path,
    ) -> Result<Vectors, DatasetError> {
        match self {
            RowSink::Memory(v) => Vectors::new(v, dim).map_err(|e| DatasetError::Format {
                path: what.to_path_buf(),
                message: e.to_string(),
            }),
            RowSink::Spill(s) => s.finish(note),
        }
    }
}

impl AsMut<[f32]> for RowSink {
    fn as_mut(&mut self) -> &mut [f32] {
        self.as_mut_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spill_file_is_a_fbin_mapped_with_the_rows_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(dir.path(), "abcdef", 3, 2);
        let mut spill = SpillFile::create(&path, 3, 2).unwrap();
        spill
            .as_mut_slice()
            .copy_from_slice(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let note = SpillNote {
            rows_in_source: 5,
            rounded: true,
        };
        let vectors = spill.finish(&note).unwrap();
        assert!(vectors.is_mapped());
        assert_eq!(vectors.as_flat(), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let (again, again_note) = reuse(&path, 3, 2).unwrap();
        assert_eq!(again.as_flat(), vectors.as_flat());
        assert_eq!(again_note, note);
        let (found, _) = find(dir.path(), "abcdef", 3).unwrap();
        assert_eq!(found.as_flat(), vectors.as_flat());
        assert!(find(dir.path(), "abcdef", 4).is_none());
        assert!(find(dir.path(), "abcdeg", 3).is_none());
        // Another shape under the same name is not taken for it.
        assert!(reuse(&path, 2, 3).is_none());
        assert!(
            !dir.path()
                .join("mapped")
                .join("abcdef-3x2.fbin.partial")
                .exists()
        );
    }

    #[test]
    fn an_unfinished_spill_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(dir.path(), "abc", 4, 4);
        let spill = SpillFile::create(&path, 4, 4).unwrap();
        drop(spill);
        assert!(
            std::fs::read_dir(dir.path().join("mapped"))
                .unwrap()
                .next()
                .is_none()
        );
        assert!(reuse(&path, 4, 4).is_none());
    }
}
