//! Atomic file output: write to a temporary file in the destination's directory, then rename.
//! A crash or an error part-way never leaves a half-written result or dataset behind.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Makes, with `make`, a hidden temporary `.<name>.XXXX.tmp` in the directory of `dest`
/// (created if missing; `.` for a bare name), for an output that appears by a rename.
fn beside<T>(
    dest: &Path,
    make: impl FnOnce(&tempfile::Builder, &Path) -> io::Result<T>,
) -> io::Result<T> {
    let dir = dest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    make(tempfile::Builder::new().prefix(&prefix).suffix(".tmp"), dir)
}

/// A temporary directory beside `dest`, for an output directory filled and then renamed
/// into place (a dataset's files).
pub fn staging_dir(dest: &Path) -> io::Result<tempfile::TempDir> {
    beside(dest, |names, dir| names.tempdir_in(dir))
}

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
        let tmp = beside(dest, |names, dir| names.tempfile_in(dir))?;
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

    /// Flushes, makes the file world-readable like any normal output, and renames it into
    /// place; the directory is synced too, so the new name survives a power loss.
    pub fn commit(self) -> io::Result<()> {
        self.commit_or_return().map_err(|(e, _)| e)
    }

    /// As [`AtomicFile::commit`], but a failure leaves the temporary file where it is (and
    /// names it), for outputs a later run can recover from (a resumed benchmark's sidecar).
    pub fn commit_or_leave(self) -> Result<(), (io::Error, Option<PathBuf>)> {
        self.commit_or_return().map_err(|(e, tmp)| {
            let left = tmp.and_then(|t| t.keep().ok()).map(|(_, path)| path);
            (e, left)
        })
    }

    /// Gives up on the rename but keeps the temporary file (and names it), as
    /// [`AtomicFile::commit_or_leave`] does on failure.
    pub fn leave(self) -> Option<PathBuf> {
        self.tmp.keep().ok().map(|(_, path)| path)
    }

    fn commit_or_return(self) -> Result<(), (io::Error, Option<tempfile::NamedTempFile>)> {
        if let Err(e) = self.tmp.as_file().sync_all() {
            return Err((e, Some(self.tmp)));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let readable = std::fs::Permissions::from_mode(0o644);
            if let Err(e) = std::fs::set_permissions(self.tmp.path(), readable) {
                return Err((e, Some(self.tmp)));
            }
        }
        self.tmp
            .persist(&self.dest)
            .map_err(|e| (e.error, Some(e.file)))?;
        sync_parent(&self.dest).map_err(|e| (e, None))
    }
}

/// Syncs the directory holding `path`, so that a file created or renamed there is still
/// there after a power loss (a file's own sync does not cover its name).
pub fn sync_parent(path: &Path) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    sync_dir(dir)
}

/// Syncs a directory's entries to disk.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// A directory of outputs (a report) whose files reach their destination only when
/// [`AtomicDir::commit`] is called, all written by then: a write error part-way (a full disk)
/// leaves the destination as it was. Dropped without commit, the files vanish.
pub struct AtomicDir {
    tmp: tempfile::TempDir,
    dest: PathBuf,
    /// The destination did not exist: the temporary directory itself is renamed into place.
    fresh: bool,
}

impl AtomicDir {
    /// Creates the temporary directory: beside `dest` when `dest` does not exist yet, else
    /// inside it (hidden), on the same file system either way so that commit only renames.
    pub fn create(dest: &Path) -> io::Result<AtomicDir> {
        let fresh = match std::fs::metadata(dest) {
            Ok(meta) if meta.is_dir() => false,
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "exists and is not a directory",
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => true,
            Err(e) => return Err(e),
        };
        let (home, name) = if fresh {
            let parent = dest
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            std::fs::create_dir_all(parent)?;
            let name = dest
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (parent.to_path_buf(), name)
        } else {
            (dest.to_path_buf(), "new".to_string())
        };
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempdir_in(home)?;
        Ok(AtomicDir {
            tmp,
            dest: dest.to_path_buf(),
            fresh,
        })
    }

    /// Where to write the files (mirrors the destination's layout).
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// Moves the files into place: a new destination appears whole (one rename); into an
    /// existing one, which may hold other files (a report written beside its results), each
    /// file is renamed over its namesake. Renames need no space, so a full disk cannot stop
    /// this part-way.
    pub fn commit(self) -> io::Result<()> {
        if self.fresh {
            let tmp = self.tmp.keep();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
            }
            std::fs::rename(&tmp, &self.dest)?;
            return sync_parent(&self.dest);
        }
        move_into(self.tmp.path(), &self.dest)?;
        sync_dir(&self.dest)
    }
}

/// Renames every entry of `from` into `to` (an existing directory), merging directories that
/// exist on both sides.
fn move_into(from: &Path, to: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() && target.is_dir() {
            move_into(&entry.path(), &target)?;
            sync_dir(&target)?;
        } else {
            std::fs::rename(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// The temporary files [`AtomicFile`] made for `dest` (`.<name>.<random>.tmp`) that are still
/// there: left by a process that was killed before it could rename or remove them.
pub fn leftover_temps(dest: &Path) -> Vec<PathBuf> {
    let dir = dest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Some(name) = dest.file_name() else {
        return Vec::new();
    };
    let prefix = format!(".{}.", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(&prefix) && name.ends_with(".tmp")
        })
        .map(|e| e.path())
        .collect()
}

/// Writes `bytes` to `dest` atomically.
pub fn write_atomic(dest: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_pieces(dest, &[bytes])
}

/// Writes `pieces` one after another to `dest` atomically: a large document need not be
/// copied into one buffer first.
pub fn write_atomic_pieces(dest: &Path, pieces: &[impl AsRef<[u8]>]) -> io::Result<()> {
    let mut f = AtomicFile::create(dest)?;
    for piece in pieces {
        f.file().write_all(piece.as_ref())?;
    }
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
    fn a_directory_appears_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("report");
        {
            let staged = AtomicDir::create(&dest).unwrap();
            std::fs::write(staged.path().join("index.html"), "half").unwrap();
        }
        assert!(!dest.exists(), "dropped: nothing appears");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

        let staged = AtomicDir::create(&dest).unwrap();
        std::fs::create_dir(staged.path().join("plots")).unwrap();
        std::fs::write(staged.path().join("plots/a.svg"), "a1").unwrap();
        std::fs::write(staged.path().join("index.html"), "one").unwrap();
        staged.commit().unwrap();
        assert_eq!(
            std::fs::read_to_string(dest.join("plots/a.svg")).unwrap(),
            "a1"
        );

        // Into an existing directory: other files stay, namesakes are replaced.
        std::fs::write(dest.join("mine.json"), "{}").unwrap();
        let staged = AtomicDir::create(&dest).unwrap();
        std::fs::create_dir(staged.path().join("plots")).unwrap();
        std::fs::write(staged.path().join("plots/a.svg"), "a2").unwrap();
        std::fs::write(staged.path().join("index.html"), "two").unwrap();
        staged.commit().unwrap();
        assert_eq!(
            std::fs::read_to_string(dest.join("index.html")).unwrap(),
            "two"
        );
        assert_eq!(
            std::fs::read_to_string(dest.join("plots/a.svg")).unwrap(),
            "a2"
        );
        assert_eq!(
            std::fs::read_to_string(dest.join("mine.json")).unwrap(),
            "{}"
        );
        let names: Vec<String> = std::fs::read_dir(&dest)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 3, "no staging directory left: {names:?}");
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
