//! The collection's footprint, from seekdb's own views.
//!
//! The table's vector index is several tables of seekdb's (`__idx_<table id>_...`: the
//! incremental index, the persisted snapshot, the id mappings) and VSAG structures in memory,
//! which seekdb reports per index table in `oceanbase.__all_virtual_vector_mem_info`
//! (`vsag_snap_<id>`, `vsag_incr_<id>`, `ivf_cache_<id>`). An index just loaded is listed
//! under an unknown id (`18446744073709551615`) until a background task names it, within
//! seconds: the measurement waits for that.
//!
//! - Index: that memory, the structures searches run on. For HNSW it is the graph with its
//!   vectors; for IVF, only the cached centroids (the lists live in the index tables, counted
//!   in the total).
//! - Total: that memory, plus the disk the table and its index tables occupy
//!   (`oceanbase.DBA_OB_TABLE_SPACE_USAGE`), plus their rows still held in memory (memstores)
//!   before a freeze writes them out.
//!
//! After the table's id (looked up by name, a prepared statement), the views are read with
//! text queries that hold only numbers.

use std::time::{Duration, Instant};

use mysql::prelude::Queryable;

use super::{ENGINE, SeekDb};
use crate::adapters::support::poll;
use crate::engine::{EngineError, EngineResult, Footprint, IndexHolds, SourcedBytes};

/// The figures, each measured or missing for a reason.
struct Sizes {
    index: Result<u64, String>,
    disk: Result<u64, String>,
    memstore: Result<u64, String>,
}

impl SeekDb {
    pub(super) fn measure_footprint(&self) -> EngineResult<Footprint> {
        let table = self.table("footprint")?;
        let name = table.name.clone();
        let graph = !table.build.is_ivf();
        let sizes = self.with_session("footprint", |c| {
            let id: Option<u64> = c.exec_first(
                "SELECT object_id FROM oceanbase.DBA_OBJECTS WHERE owner = DATABASE() \
                 AND object_name = ? AND object_type = 'TABLE'",
                (name.as_str(),),
            )?;
            let Some(id) = id else {
                return Ok(None);
            };
            let mut ids: Vec<u64> = c.query(format!(
                "SELECT table_id FROM oceanbase.__all_table WHERE table_name LIKE '{}'",
                index_tables(id)
            ))?;
            let index = vector_memory(c, &ids);
            ids.push(id);
            Ok(Some(Sizes {
                index,
                disk: sum_of(c, "table space usage", &disk_sql(&ids)),
                memstore: sum_of(c, "memstore usage", &memstore_sql(&ids)),
            }))
        })?;
        let Some(sizes) = sizes else {
            return Err(EngineError::op(
                ENGINE,
                "footprint",
                format!("table `{name}` not found"),
            ));
        };
        Ok(footprint_of(sizes, graph))
    }
}

fn footprint_of(s: Sizes, graph: bool) -> Footprint {
    let total = match (&s.index, &s.disk, &s.memstore) {
        (Ok(i), Ok(d), Ok(m)) => Ok(SourcedBytes {
            bytes: i + d + m,
            source: "vector index memory (__all_virtual_vector_mem_info) + the table's and \
                     its index tables' disk (DBA_OB_TABLE_SPACE_USAGE) + their memstores"
                .into(),
        }),
        _ => Err([&s.index, &s.disk, &s.memstore]
            .iter()
            .filter_map(|r| r.as_ref().err().cloned())
            .collect::<Vec<_>>()
            .join("; ")),
    };
    let index = s.index.map(|bytes| SourcedBytes {
        bytes,
        source: "vector index memory (__all_virtual_vector_mem_info: the index's VSAG structures)"
            .into(),
    });
    let mut f = Footprint::default();
    match index {
        Ok(i) => f.index = Some(i),
        Err(why) => f.index_unmeasured = Some(why),
    }
    match total {
        Ok(t) => f.total = Some(t),
        Err(why) => f.total_unmeasured = Some(why),
    }
    if graph && f.index.is_some() {
        f = f.holding(IndexHolds::GraphAndVectors);
    }
    f
}

/// How long the measurement waits for seekdb to name a just-loaded index's memory.
const NAMING_WAIT: Duration = Duration::from_secs(20);

/// The memory seekdb reports for the index tables `ids`, once it names them.
fn vector_memory(c: &mut mysql::Conn, ids: &[u64]) -> Result<u64, String> {
    let started = Instant::now();
    loop {
        let detail: Option<String> = c
            .query_first(
                "SELECT vector_mem_detail_info FROM oceanbase.__all_virtual_vector_mem_info",
            )
            .map_err(|e| format!("vector memory: {}", super::conn::worded(&e)))?;
        let detail = detail.ok_or("seekdb reports no vector memory")?;
        if let Some(bytes) = memory_of(&detail, ids) {
            return Ok(bytes);
        }
        if started.elapsed() > NAMING_WAIT {
            return Err(format!(
                "seekdb's vector memory ({detail}) named none of the index tables {ids:?} within {} s",
                NAMING_WAIT.as_secs()
            ));
        }
        std::thread::sleep(poll::pause(started));
    }
}

/// The sum of the entries of `detail` (`{"vsag_snap_500100": 11139984, ...}`) whose key ends
/// with one of `ids`; `None` when none does.
fn memory_of(detail: &str, ids: &[u64]) -> Option<u64> {
    let entries: std::collections::BTreeMap<String, u64> = serde_json::from_str(detail).ok()?;
    let mine: Vec<u64> = entries
        .iter()
        .filter(|(key, _)| {
            key.rsplit_once('_')
                .and_then(|(_, id)| id.parse::<u64>().ok())
                .is_some_and(|id| ids.contains(&id))
        })
        .map(|(_, bytes)| *bytes)
        .collect();
    (!mine.is_empty()).then(|| mine.iter().sum())
}

/// The `LIKE` pattern of the index tables of table `id` (`__idx_<id>_...`), `_` escaped.
fn index_tables(id: u64) -> String {
    format!("\\_\\_idx\\_{id}\\_%")
}

fn id_list(ids: &[u64]) -> String {
    ids.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn disk_sql(ids: &[u64]) -> String {
    format!(
        "SELECT CAST(SUM(occupy_size) AS UNSIGNED) FROM oceanbase.DBA_OB_TABLE_SPACE_USAGE \
         WHERE table_id IN ({})",
        id_list(ids)
    )
}

fn memstore_sql(ids: &[u64]) -> String {
    format!(
        "SELECT CAST(SUM(m.mem_used) AS UNSIGNED) \
         FROM oceanbase.__all_virtual_tablet_memstore_info m \
         JOIN oceanbase.__all_tablet_to_table t ON m.tablet_id = t.tablet_id \
         WHERE t.table_id IN ({})",
        id_list(ids)
    )
}

/// A `SUM` query's figure (no rows: 0).
fn sum_of(c: &mut mysql::Conn, what: &str, sql: &str) -> Result<u64, String> {
    let bytes: Option<Option<u64>> = c
        .query_first(sql)
        .map_err(|e| format!("{what}: {}", super::conn::worded(&e)))?;
    Ok(bytes.flatten().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_of_an_index_is_its_tables_entries() {
        let d = r#"{"rb_used":0, "vsag_snap_500100":11139984, "vsag_incr_500097":1376, "vsag_snap_500068":7}"#;
        assert_eq!(memory_of(d, &[500097, 500100]), Some(11_141_360));
        assert_eq!(memory_of(d, &[1]), None);
        assert_eq!(index_tables(5), "\\_\\_idx\\_5\\_%");
    }
}
