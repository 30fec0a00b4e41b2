//! What the engine reports about itself: its size on disk ([`VectorEngine::footprint`]) and
//! the settings and server facts recorded in the result file ([`VectorEngine::describe`]).

use super::*;
use crate::engine::IndexHolds;
use super::sql::IndexKind;

impl PgVector {
    /// [`VectorEngine::footprint`].
    pub(super) fn measure_footprint(&self) -> EngineResult<Footprint> {
        let Some(col) = &self.collection else {
            return Ok(Footprint::unmeasured("no collection created"));
        };
        let gone = |what: &str| format!("{what} not found in the catalog");
        let index = if col.index.is_some() {
            let name = quote_ident(&col.index_name);
            self.relation_size("pg_relation_size", &name)?
                .map(|bytes| SourcedBytes {
                    bytes,
                    source: "pg_relation_size(ANN index)".into(),
                })
                .ok_or_else(|| gone("the index"))
        } else {
            Err("no ANN index: every search is a sequential scan".into())
        };
        let total = self
            .relation_size("pg_total_relation_size", &col.table)?
            .map(|bytes| SourcedBytes {
                bytes,
                source: "pg_total_relation_size(table): heap + TOAST + indexes (WAL excluded)"
                    .into(),
            })
            .ok_or_else(|| gone("the table"));
        // pgvector's index pages carry each vector beside its links or list entry.
        let holds = match col.build.index {
            IndexKind::Hnsw => IndexHolds::GraphAndVectors,
            IndexKind::IvfFlat => IndexHolds::ListsAndVectors,
        };
        Ok(Footprint::new(index, total).holding(holds))
    }
}

impl PgVector {
    /// [`VectorEngine::describe`].
    pub(super) fn describe_engine(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("server".into(), self.version.clone().into());
        m.insert("url".into(), self.target.clone().into());
        m.insert("auto_started".into(), self.auto_started.into());
        m.insert("search".into(), self.search.to_json());
        m.insert("search_client".into(), super::wire::search_client(self).into());
        let Some(col) = &self.collection else {
            return m;
        };
        m.insert("table".into(), col.name.clone().into());
        m.insert(
            "column".into(),
            format!("{}({})", col.build.vec_type.name(), col.dim).into(),
        );
        m.insert(
            "distance_operator".into(),
            distance_operator(col.distance).into(),
        );
        m.insert("build".into(), col.build.to_json());
        // The filtered plans: which path the planner takes for each predicate shape searched.
        match self.explain_filtered() {
            Ok(plans) if !plans.is_empty() => {
                m.insert("filtered_plans".into(), Value::Array(plans));
            }
            Ok(_) => {}
            Err(e) => {
                m.insert("filtered_plans_error".into(), e.to_string().into());
            }
        }
        if let Some(info) = &col.index {
            m.insert("index".into(), col.index_name.clone().into());
            m.insert("index_definition".into(), info.definition.clone().into());
            m.insert("index_build_s".into(), info.build_s.into());
            if let Some(lists) = info.lists {
                m.insert("lists".into(), lists.into());
            }
            m.insert(
                "maintenance_work_mem".into(),
                info.maintenance_work_mem.clone().into(),
            );
            m.insert(
                "max_parallel_maintenance_workers".into(),
                info.max_parallel_maintenance_workers.clone().into(),
            );
            m.insert("index_notices".into(), json!(info.notices));
        }
        if !col.plans.is_empty() {
            m.insert("plans".into(), Value::Object(col.plans.clone()));
        }
        match self.relation_size("pg_total_relation_size", &col.table) {
            Ok(bytes) => {
                m.insert("table_bytes".into(), json!(bytes));
            }
            Err(e) => {
                m.insert("table_bytes_error".into(), e.to_string().into());
            }
        }
        if col.index.is_some() {
            match self.relation_size("pg_relation_size", &quote_ident(&col.index_name)) {
                Ok(bytes) => {
                    m.insert("index_bytes".into(), json!(bytes));
                }
                Err(e) => {
                    m.insert("index_bytes_error".into(), e.to_string().into());
                }
            }
        }
        m
    }
}
