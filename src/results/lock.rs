//! One writer per result: a run holds a lock on its result name (`DIR/.NAME.lock`, holding
//! the owner's process id) for as long as it writes `DIR/NAME.json` and its sidecar, so a
//! second run given the same `--out` and `--name` fails at once instead of overwriting the
//! first one's files. The lock is an exclusive lock on that file (`File::try_lock`, `flock` on
//! Linux): the kernel releases it when its owner ends, however it ends, so the lock of a
//! killed run is taken over by the next one.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why a result name could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "{result} is being written by {owner} (lock {lock}): give another --name or --out, or \
         wait for that run to end"
    )]
    Held {
        result: PathBuf,
        /// `process 1234`, or `another process` when it has not written its id yet.
        owner: String,
        lock: PathBuf,
    },
    #[error("cannot create {path} (the lock on the result's name): {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The lock on one result name; released (and its file removed) when dropped.
#[derive(Debug)]
pub struct ResultLock {
    path: PathBuf,
    /// Holds the lock; closing it releases it.
    _file: File,
}

/// The lock file of the result at `result`: `DIR/NAME.json` → `DIR/.NAME.lock`.
pub fn lock_path(result: &Path) -> PathBuf {
    let stem = result
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    result.with_file_name(format!(".{stem}.lock"))
}

impl ResultLock {
    /// Locks the name of the result at `result` (creating its directory if needed).
    pub fn acquire(result: &Path) -> Result<ResultLock, LockError> {
        let path = lock_path(result);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        loop {
            let mut file = File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(io)?;
            if let Err(err) = file.try_lock() {
                if let std::fs::TryLockError::Error(err) = err {
                    return Err(io(err));
                }
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let owner = match text.trim().parse::<u32>() {
                    Ok(pid) => format!("process {pid}"),
                    Err(_) => "another process".to_string(),
                };
                return Err(LockError::Held {
                    result: result.to_path_buf(),
                    owner,
                    lock: path,
                });
            }
            // The owner before us removes the file as it lets go: if it did so between our
            // open and our lock, we hold a lock on a file nobody else will look at. Retry.
            let ours = file.metadata().map_err(io)?;
            match std::fs::metadata(&path) {
                Ok(now) if now.ino() == ours.ino() && now.dev() == ours.dev() => {}
                _ => continue,
            }
            file.set_len(0).map_err(io)?;
            writeln!(file, "{}", std::process::id()).map_err(io)?;
            return Ok(ResultLock { path, _file: file });
        }
    }

    /// Locks the first free name among `DIR/STEM.json`, `DIR/STEM-2.json`, … that is neither
    /// locked nor taken by an earlier result: for names made up by ragdbeval (a timestamp),
    /// which two runs started in the same second would otherwise share.
    pub fn acquire_distinct(dir: &Path, stem: &str) -> Result<(String, ResultLock), LockError> {
        let mut name = stem.to_string();
        for n in 2usize.. {
            let result = dir.join(format!("{name}.json"));
            match ResultLock::acquire(&result) {
                Ok(lock) if !result.exists() => return Ok((name, lock)),
                Ok(_) | Err(LockError::Held { .. }) => name = format!("{stem}-{n}"),
                Err(e) => return Err(e),
            }
        }
        Err(LockError::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::other("no free result name"),
        })
    }
}

impl Drop for ResultLock {
    fn drop(&mut self) {
        // Removed while still held (the descriptor closes after this), so that a run waiting
        // on this file sees it replaced and retries (see `acquire`).
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_name_is_refused_with_its_owner_and_freed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let result = dir.path().join("r.json");
        let held = ResultLock::acquire(&result).unwrap();
        let text = std::fs::read_to_string(lock_path(&result)).unwrap();
        assert_eq!(text.trim(), std::process::id().to_string());
        // flock locks belong to the open file description: a second open in this process
        // conflicts like another process would.
        let err = ResultLock::acquire(&result).unwrap_err().to_string();
        assert!(
            err.contains(&format!("process {}", std::process::id())),
            "{err}"
        );
        assert!(err.contains("r.json is being written by"), "{err}");
        drop(held);
        assert!(!lock_path(&result).exists(), "the lock file is removed");
        let again = ResultLock::acquire(&result).unwrap();
        drop(again);
    }

    #[test]
    fn a_lock_file_left_without_an_owner_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let result = dir.path().join("r.json");
        // What a killed run leaves: the file with its (now dead) id, and no flock.
        std::fs::write(lock_path(&result), "999999999\n").unwrap();
        let lock = ResultLock::acquire(&result).unwrap();
        let text = std::fs::read_to_string(lock_path(&result)).unwrap();
        assert_eq!(text.trim(), std::process::id().to_string());
        drop(lock);
    }

    #[test]
    fn made_up_names_step_past_held_and_existing_ones() {
        let dir = tempfile::tempdir().unwrap();
        let _first = ResultLock::acquire(&dir.path().join("t.json")).unwrap();
        std::fs::write(dir.path().join("t-2.json"), "{}").unwrap();
        let (name, _lock) = ResultLock::acquire_distinct(dir.path(), "t").unwrap();
        assert_eq!(name, "t-3");
    }
}
