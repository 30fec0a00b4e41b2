//! On-disk size of one collection, read from the server's SQLite catalogue.

use super::*;

/// This collection's part of `chroma.sqlite3`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct SqliteRows {
    /// Id of its VECTOR segment, which names its HNSW directory in the persist directory.
    pub(super) vector_segment: Option<String>,
    /// Summed byte lengths of the values in its rows of `embeddings`, `embedding_metadata`
    /// and the `embeddings_queue` log.
    pub(super) bytes: u64,
}

#[derive(Debug)]
pub(super) enum SqliteError {
    /// The `sqlite3` command is missing: the figures cannot be measured here.
    NoCli(String),
    Failed(String),
}

/// Reads this collection's segment id and row bytes from `chroma.sqlite3` with the `sqlite3`
/// command, read-only (ragdbeval has no SQLite library, and the server keeps writing the file:
/// SQLite's own locking makes the read consistent). `collection_id` comes from the server and
/// is checked to be a UUID before it goes into the SQL.
pub(super) fn collection_sqlite_bytes(
    db: &Path,
    collection_id: &str,
) -> Result<SqliteRows, SqliteError> {
    if collection_id.is_empty()
        || !collection_id
            .chars()
            .all(|c| c.is_ascii_hexdigit() || c == '-')
    {
        return Err(SqliteError::Failed(format!(
            "collection id {collection_id:?} is not a UUID"
        )));
    }
    let cid = collection_id;
    // `length(CAST(x AS BLOB))` is the stored byte length of any value (NULL counts 0).
    let b = |x: &str| format!("coalesce(length(CAST({x} AS BLOB)), 0)");
    let sql = format!(
        "SELECT (SELECT id FROM segments WHERE collection = '{cid}' AND scope = 'VECTOR'), \
         (SELECT coalesce(sum({e}), 0) FROM embeddings e JOIN segments s ON e.segment_id = s.id \
          WHERE s.collection = '{cid}') + \
         (SELECT coalesce(sum({m}), 0) FROM embedding_metadata m \
          JOIN embeddings e ON m.id = e.id JOIN segments s ON e.segment_id = s.id \
          WHERE s.collection = '{cid}') + \
         (SELECT coalesce(sum({q}), 0) FROM embeddings_queue q \
          WHERE q.topic LIKE '%/{cid}');",
        e = [
            b("e.id"),
            b("e.segment_id"),
            b("e.embedding_id"),
            b("e.seq_id"),
            b("e.created_at"),
        ]
        .join(" + "),
        m = [
            b("m.id"),
            b("m.key"),
            b("m.string_value"),
            b("m.int_value"),
            b("m.float_value"),
            b("m.bool_value"),
        ]
        .join(" + "),
        q = [
            b("q.seq_id"),
            b("q.created_at"),
            b("q.operation"),
            b("q.topic"),
            b("q.id"),
            b("q.vector"),
            b("q.encoding"),
            b("q.metadata"),
        ]
        .join(" + "),
    );
    let output = Command::new("sqlite3")
        .args(["-readonly", "-batch", "-noheader", "-separator", "|"])
        .args(["-cmd", ".timeout 10000"])
        .arg(db)
        .arg(&sql)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SqliteError::NoCli(
                "the sqlite3 command is needed to find this collection's segment in \
                 chroma.sqlite3 and is not installed"
                    .into(),
            ),
            _ => SqliteError::Failed(format!("running sqlite3: {e}")),
        })?;
    if !output.status.success() {
        return Err(SqliteError::Failed(format!(
            "sqlite3 {}: {}",
            db.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.trim();
    let (segment, bytes) = line
        .split_once('|')
        .ok_or_else(|| SqliteError::Failed(format!("unexpected sqlite3 output {line:?}")))?;
    let bytes = bytes.parse().map_err(|e| {
        SqliteError::Failed(format!("unexpected sqlite3 byte count {bytes:?}: {e}"))
    })?;
    Ok(SqliteRows {
        vector_segment: (!segment.is_empty()).then(|| segment.to_string()),
        bytes,
    })
}

impl ChromaEngine {
    /// [`VectorEngine::footprint`]: the collection's bytes on disk and in the catalogue.
    pub(super) fn measure_footprint(&self) -> EngineResult<Footprint> {
        let Some(dir) = self.storage_dir() else {
            return Ok(Footprint::unmeasured(
                "needs --server-storage (the persist directory, on this machine)",
            ));
        };
        let Some(col) = &self.collection else {
            return Ok(Footprint::unmeasured("no collection created"));
        };
        let db = dir.join("chroma.sqlite3");
        if !db.is_file() {
            return Err(EngineError::op(
                ENGINE,
                "footprint",
                format!(
                    "{} does not exist: --server-storage must be the directory the server was \
                     started with (`chroma run --path DIR`), on this machine",
                    db.display()
                ),
            ));
        }
        let rows = match collection_sqlite_bytes(&db, &col.id) {
            Ok(rows) => rows,
            // No sqlite3 command here: say so rather than guess which directory is ours.
            Err(SqliteError::NoCli(why)) => return Ok(Footprint::unmeasured(why)),
            Err(SqliteError::Failed(why)) => {
                return Err(EngineError::op(ENGINE, "footprint", why));
            }
        };
        let Some(segment) = rows.vector_segment else {
            return Err(EngineError::op(
                ENGINE,
                "footprint",
                format!(
                    "chroma.sqlite3 has no VECTOR segment for collection {}",
                    col.id
                ),
            ));
        };
        let seg_dir = dir.join(&segment);
        if !seg_dir.is_dir() {
            // Chroma writes the HNSW files only every `sync_threshold` writes; until then the
            // vectors are in the log (counted in the SQLite rows).
            let why = format!("vector segment {segment} not yet written to disk");
            return Ok(Footprint::new(
                Err(why.clone()),
                Err(format!("{why}: the vectors are still in the SQLite log")),
            ));
        }
        let index = crate::storage::dir_bytes(
            ENGINE,
            &seg_dir,
            "this collection's vector segment directory (HNSW: vectors + graph)",
        )?;
        let total = SourcedBytes {
            bytes: index.bytes + rows.bytes,
            source: format!(
                "vector segment directory ({} B, allocated blocks) + this collection's rows in \
                 chroma.sqlite3 ({} B of stored values: ids, metadata, log; SQLite page and \
                 index overhead excluded)",
                index.bytes, rows.bytes
            ),
        };
        Ok(Footprint::new(Ok(index), Ok(total)).holding(crate::engine::IndexHolds::GraphAndVectors))
    }
}
