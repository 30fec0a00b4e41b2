//! Load generation: open-loop latency must include queueing behind a stall (no coordinated
//! omission), closed loops report per-level figures, interval logs merge.
//!
//! The engine stub here exists only to test the harness (it injects a stall on demand); it
//! is never registered as an engine.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::{ragdbeval, stderr, stdout};
use ragdbeval::engine::{
    CollectionSpec, EngineResult, IndexReport, Neighbor, PointId, SourcedBytes, VectorEngine,
};
use ragdbeval::params::ParamMap;
use ragdbeval::results::RunResult;
use ragdbeval::runner::load::{closed_loop, open_loop};
use ragdbeval::vectors::Vectors;

/// Answers every query in `service`, except call number `stall_at`, which takes `stall`.
struct StallingStub {
    calls: AtomicU64,
    service: Duration,
    stall_at: u64,
    stall: Duration,
}

impl VectorEngine for StallingStub {
    fn name(&self) -> &str {
        "stalling-stub"
    }
    fn version(&self) -> String {
        "test".into()
    }
    fn create(&mut self, _: &CollectionSpec) -> EngineResult<()> {
        Ok(())
    }
    fn insert_batch(&mut self, _: &[PointId], _: &[f32]) -> EngineResult<()> {
        Ok(())
    }
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        Ok(IndexReport::default())
    }
    fn upsert_batch(&mut self, _: &[PointId], _: &[f32]) -> EngineResult<()> {
        Ok(())
    }
    fn delete_batch(&mut self, _: &[PointId]) -> EngineResult<()> {
        Ok(())
    }
    fn set_search_params(&mut self, _: &ParamMap) -> EngineResult<()> {
        Ok(())
    }
    fn search(&self, _: &[f32], _: usize, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(if n == self.stall_at {
            self.stall
        } else {
            self.service
        });
        out.clear();
        out.push(Neighbor { id: 0, score: 0.0 });
        Ok(())
    }
    fn index_size(&self) -> EngineResult<Option<SourcedBytes>> {
        Ok(None)
    }
    fn in_process(&self) -> bool {
        true
    }
}

fn stub() -> StallingStub {
    StallingStub {
        calls: AtomicU64::new(0),
        service: Duration::from_micros(500),
        stall_at: 50,
        stall: Duration::from_millis(300),
    }
}

#[test]
fn open_loop_latency_includes_queueing_behind_a_stall() {
    let queries = Vectors::new(vec![0.0; 40], 4).unwrap();
    // 200 queries/s for 2 s through one sender: during the 300 ms stall, ~60 queries fall
    // due; each waits for the stall to end, and that wait must be in its latency.
    let engine = stub();
    let open = open_loop(
        &engine,
        &queries,
        1,
        200.0,
        Duration::from_secs(2),
        1,
        Duration::from_millis(50),
    )
    .unwrap();
    assert!(open.completed >= 390, "{open:?}");
    assert!(
        open.latency.p90_ms > 50.0,
        "queueing hidden: {:?}",
        open.latency
    );
    assert!(open.latency.max_ms >= 290.0, "{:?}", open.latency);
    assert!(open.max_send_lag_ms.unwrap() > 200.0);

    // The same engine and stall measured closed-loop: only the one stalled call is slow, so
    // its p90 looks healthy. That is exactly the omission the open loop avoids.
    let engine = stub();
    let closed = closed_loop(
        &engine,
        &queries,
        1,
        1,
        Duration::from_secs(1),
        Duration::from_millis(50),
    )
    .unwrap();
    assert!(closed.latency.p90_ms < 5.0, "{:?}", closed.latency);
    assert!(closed.latency.max_ms >= 290.0, "{:?}", closed.latency);
}

#[test]
fn open_loop_reports_saturation() {
    let queries = Vectors::new(vec![0.0; 40], 4).unwrap();
    // One sender, 2 ms per query: at most 500/s; ask for 2000/s.
    let engine = StallingStub {
        calls: AtomicU64::new(0),
        service: Duration::from_millis(2),
        stall_at: u64::MAX,
        stall: Duration::ZERO,
    };
    let level = open_loop(
        &engine,
        &queries,
        1,
        2000.0,
        Duration::from_millis(500),
        1,
        Duration::from_millis(50),
    )
    .unwrap();
    assert!(level.saturated, "{level:?}");
    assert!(level.qps < 600.0);
}

#[test]
fn closed_loop_scales_with_clients() {
    let queries = Vectors::new(vec![0.0; 400], 4).unwrap();
    let engine = StallingStub {
        calls: AtomicU64::new(0),
        service: Duration::from_millis(2),
        stall_at: u64::MAX,
        stall: Duration::ZERO,
    };
    let one = closed_loop(
        &engine,
        &queries,
        1,
        1,
        Duration::from_millis(400),
        Duration::from_millis(50),
    )
    .unwrap();
    let four = closed_loop(
        &engine,
        &queries,
        1,
        4,
        Duration::from_millis(400),
        Duration::from_millis(50),
    )
    .unwrap();
    // Sleeping engines do not compete for CPU: four clients get about four times the rate.
    assert!(
        four.qps > 2.5 * one.qps,
        "1: {} QPS, 4: {} QPS",
        one.qps,
        four.qps
    );
    assert!(!one.intervals.is_empty());
}

#[test]
fn cli_load_levels_logs_and_merge() {
    let dir = tempfile::tempdir().unwrap();
    let out = ragdbeval(
        dir.path(),
        &[
            "bench",
            "--db",
            "exact",
            "--dataset",
            "gen:uniform:n=2000,dim=8,queries=200",
            "--runbook",
            "build-search",
            "--concurrency",
            "1,2",
            "--rate",
            "100",
            "--duration",
            "500ms",
            "--histogram-logs",
            "-q",
            "--name",
            "load",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let r = RunResult::load(&dir.path().join("results/load.json")).unwrap();
    let s = r.configs[0].searches().next().unwrap();
    assert_eq!(s.load.len(), 3);
    assert_eq!(s.load[0].kind, "closed");
    assert_eq!(s.load[2].kind, "open");
    assert_eq!(s.load[2].target_rate, Some(100.0));
    assert!(
        s.load
            .iter()
            .all(|l| l.completed > 0 && l.latency.count > 0)
    );
    assert!(s.cold_start_ms.is_some());
    assert!(!r.curves.is_empty() && !r.curves[0].curve.frontier.is_empty());
    let logs: Vec<String> = s
        .load
        .iter()
        .map(|l| l.histogram_log.clone().unwrap())
        .collect();
    let mut args = vec!["merge"];
    args.extend(logs.iter().map(|s| s.as_str()));
    let merged = ragdbeval(dir.path(), &args);
    assert!(merged.status.success(), "{}", stderr(&merged));
    let total: u64 = s.load.iter().map(|l| l.completed).sum();
    assert!(
        stdout(&merged).contains(&format!("{total} queries")),
        "{}",
        stdout(&merged)
    );
}
