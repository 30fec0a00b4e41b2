//! Connections to the collection's database: sqlite-vec registered on each, and the
//! pragmas every connection shares.
//!
//! The database is a file in WAL mode: one writer and any number of readers at once, each
//! reader on its own connection, each statement reading the last committed state. A write
//! acknowledged (its transaction committed) is seen by every search that starts afterwards.

use std::ffi::{c_char, c_int};
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, ffi};

use super::params::BuildSettings;

/// How long a connection waits for a lock before it fails (a checkpoint can hold one).
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);
/// Prepared statements kept per connection: every predicate shape is its own statement.
const STATEMENT_CACHE: usize = 64;

/// The signature of an SQLite extension's entry point; the `sqlite-vec` crate declares
/// `sqlite3_vec_init` without its arguments.
type ExtensionInit =
    unsafe extern "C" fn(*mut ffi::sqlite3, *mut *mut c_char, *const ffi::sqlite3_api_routines) -> c_int;

/// Registers sqlite-vec's functions and the `vec0` module on `conn`.
pub(super) fn register_vec(conn: &Connection) -> Result<(), String> {
    // SAFETY: `sqlite3_vec_init` is the C entry point compiled into the `sqlite-vec` crate
    // with SQLITE_CORE; its real signature is `ExtensionInit`. It is given the live handle
    // of `conn` and an error slot it may fill with memory from `sqlite3_malloc`, freed here.
    unsafe {
        let init = std::mem::transmute::<*const (), ExtensionInit>(
            sqlite_vec::sqlite3_vec_init as *const (),
        );
        let mut message: *mut c_char = std::ptr::null_mut();
        let rc = init(conn.handle(), &mut message, std::ptr::null());
        if rc == ffi::SQLITE_OK {
            return Ok(());
        }
        let text = if message.is_null() {
            format!("sqlite3_vec_init returned {rc}")
        } else {
            let text = std::ffi::CStr::from_ptr(message)
                .to_string_lossy()
                .into_owned();
            ffi::sqlite3_free(message.cast());
            text
        };
        Err(text)
    }
}

/// An in-memory connection with sqlite-vec, to read the versions before any collection.
pub(super) fn versions() -> Result<(String, String), String> {
    let conn = Connection::open_in_memory().map_err(|e| e.to_string())?;
    register_vec(&conn)?;
    conn.query_row("SELECT vec_version(), sqlite_version()", [], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
    .map_err(|e| e.to_string())
}

/// Opens the database at `path` (creating it) with sqlite-vec and the settings' pragmas.
pub(super) fn open(path: &Path, settings: &BuildSettings) -> Result<Connection, String> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| format!("opening {}: {e}", path.display()))?;
    register_vec(&conn)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| e.to_string())?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(|e| format!("journal_mode: {e}"))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(format!("journal_mode WAL refused (got {mode})"));
    }
    // A negative cache_size is in KiB; NORMAL is the usual durability of WAL mode (a commit
    // is durable once the WAL is synced at a checkpoint, never corrupt).
    let pragmas = format!(
        "PRAGMA synchronous = NORMAL; PRAGMA cache_size = -{}; PRAGMA mmap_size = {};",
        settings.cache_mb.saturating_mul(1024),
        settings.mmap_mb.saturating_mul(1 << 20),
    );
    conn.execute_batch(&pragmas)
        .map_err(|e| format!("pragmas: {e}"))?;
    Ok(conn)
}

/// One integer pragma's value (`page_count`, `page_size`, `mmap_size`).
pub(super) fn pragma_i64(conn: &Connection, name: &str) -> rusqlite::Result<i64> {
    conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
}
