//! Atomic file output: write to a temporary file in the destination's directory, then rename.
//! A crash or an error part-way never leaves a half-written result or dataset behind.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A file that appears at its destination only when [`AtomicFile::commit`] is called;
/// dropped without commit, it vanishes.
pub struct AtomicFile {
    tmp: tempfile::NamedTempFile,
    dest: PathBuf,
}

impl AtomicFile {
    /// Creates the temporary file next to `dest` (creating the directory if needed). Refuses
    /// a `dest` that exists and is not a regular file: the rename in [`AtomicFile::commit`]
    /// would replace it (`--out /dev/null` run as root replaced the device with a file).
    pub fn create(dest: &Path) -> io::Result<AtomicFile> {
        if let Ok(meta) = std::fs::metadata(dest)
            && !meta.is_file()
        {
            let kind = if meta.is_dir() {
                "a directory"
            } else {
                "not a regular file (a device, pipe or socket)"
            };
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                // Callers name the path.
                format!(
                    "exists and is {kind}; outputs are written to a new file and renamed into \
                     place, which would replace it: name a file instead"
                ),
            ));
        }
        let dir = dest
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(dir)?;
        Ok(AtomicFile {
            tmp,
            dest: dest.to_path_buf(),
        })
    }

    /// Path of the temporary file, for libraries that write by path (HDF5).
    pub fn temp_path(&self) -> &Path {
        self.tmp.path()
    }

    pub fn file(&mut self) -> &mut File {
        self.tmp.as_file_mut()
    }

    /// Flushes, makes the file world-readable like any normal output, and renames it into place.
    pub fn commit(self) -> io::Result<()> {
        self.tmp.as_file().sync_all()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(self.tmp.path(), std::fs::Permissions::from_mode(0o644))?;
        }
        self.tmp.persist(&self.dest).map_err(|e| e.error)?;
        Ok(())
    }
}

/// Writes `bytes` to `dest` atomically.
pub fn write_atomic(dest: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = AtomicFile::create(dest)?;
    f.file().write_all(bytes)?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appears_only_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("sub/out.json");
        let mut f = AtomicFile::create(&dest).unwrap();
        f.file().write_all(b"{}").unwrap();
        assert!(!dest.exists());
        f.commit().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"{}");

        let dest2 = dir.path().join("dropped.json");
        {
            let mut f = AtomicFile::create(&dest2).unwrap();
            f.file().write_all(b"partial").unwrap();
        }
        assert!(!dest2.exists());
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "only sub/ may remain: {leftovers:?}");
    }

    #[test]
    fn refuses_to_replace_what_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = AtomicFile::create(dir.path())
            .err()
            .expect("a directory is refused");
        assert!(err.to_string().contains("is a directory"), "{err}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            let err = AtomicFile::create(Path::new("/dev/null"))
                .err()
                .expect("a device is refused");
            assert!(err.to_string().contains("not a regular file"), "{err}");
            let meta = std::fs::metadata("/dev/null").unwrap();
            assert!(meta.file_type().is_char_device());
        }
    }
}
