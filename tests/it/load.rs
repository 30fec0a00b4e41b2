//! Load generation: open-loop latency must include queueing behind a stall (no coordinated
//! omission), closed loops report per-level figures, interval logs merge.
//!
//! The engine used here is a stub (`stubs::Stub`) that exists only to test the harness (it
//! injects a stall on demand); it is never registered as an engine.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::common::{stderr, stdout, succeeds, succeeds_in_temp};
use crate::stubs::Stub;
use ragdbeval::output::warnings::Warning;
use ragdbeval::results::RunResult;
use ragdbeval::runner::load::{LoadLevel, closed_loop, open_loop};
use ragdbeval::vectors::Vectors;

/// Answers every query in 500 µs, except call number 50, which takes 300 ms.
fn stub() -> Stub {
    Stub::stalling(Duration::from_micros(500), 50, Duration::from_millis(300))
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
    let engine = Stub::steady(Duration::from_millis(2));
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

/// The counts and timings of a level, without its histograms (for assertion messages).
fn brief(l: &LoadLevel) -> String {
    format!(
        "intended {:?}, completed {}, errors {}, dropped {:?}, {:.3} s, {:.0} QPS, p50 {:.3} ms, \
         p99 {:.3} ms, send lag mean {:?} max {:?} ms, sender CPU {:?} ms, saturated {}",
        l.intended,
        l.completed,
        l.errors,
        l.dropped,
        l.duration_s,
        l.qps,
        l.latency.p50_ms,
        l.latency.p99_ms,
        l.mean_send_lag_ms,
        l.max_send_lag_ms,
        l.sender_cpu_ms,
        l.saturated
    )
}

/// The open-loop sender must sleep between sends, not spin, nor allocate what it does not use:
/// at 200 queries/s against an engine that answers at once, its threads' CPU time is a few
/// milliseconds per second (measured: 11–14 ms). A sender that spins the last millisecond
/// before each send burned 168–175 ms here, and 16 workers each allocating 122 per-second
/// histograms up front another ~200 ms (381 ms with both): CPU taken from the engine measured.
#[test]
fn open_loop_sender_sleeps_instead_of_spinning() {
    let queries = Vectors::new(vec![0.0; 40], 4).unwrap();
    let engine = Stub::steady(Duration::ZERO);
    // 16 workers, as the CLI's default: sleeping workers must cost nothing either.
    let level = open_loop(
        &engine,
        &queries,
        1,
        200.0,
        Duration::from_secs(1),
        16,
        Duration::from_millis(50),
    )
    .unwrap();
    eprintln!("{}", brief(&level));
    let cpu_ms = level
        .sender_cpu_ms
        .expect("per-thread CPU time is readable on Linux");
    assert!(
        cpu_ms < 50.0,
        "sender CPU {cpu_ms:.1} ms for 200 sends: {}",
        brief(&level)
    );
    // Nothing was dropped and the counts add up.
    assert_eq!(level.intended, Some(200), "{}", brief(&level));
    assert_eq!(level.dropped, Some(0), "{}", brief(&level));
    assert_eq!(level.completed, 200, "{}", brief(&level));
}

/// A saturated level ends after its grace period with the unsent backlog counted as dropped:
/// 1000 queries/s for 0.5 s through one sender into an engine that takes 5 ms (at most 200/s)
/// schedules 500 queries; in the 0.5 s + 0.5 s grace about 200 are sent, the rest are dropped.
/// Before, the backlog was silently drained for up to 5 s more, or left out when it was not.
#[test]
fn saturated_open_loop_counts_dropped_queries() {
    let queries = Vectors::new(vec![0.0; 40], 4).unwrap();
    let engine = Stub::steady(Duration::from_millis(5));
    let level = open_loop(
        &engine,
        &queries,
        1,
        1000.0,
        Duration::from_millis(500),
        1,
        Duration::from_millis(50),
    )
    .unwrap();
    assert!(level.saturated, "{}", brief(&level));
    assert_eq!(level.intended, Some(500), "{}", brief(&level));
    let dropped = level.dropped.unwrap();
    assert!(dropped > 0, "{}", brief(&level));
    // Every scheduled query is accounted for: answered, failed, or dropped.
    assert_eq!(
        level.completed + level.errors + dropped,
        500,
        "{}",
        brief(&level)
    );
    assert_eq!(level.latency.count, level.completed, "{}", brief(&level));
    // The engine was called exactly for the queries sent.
    assert_eq!(
        engine.calls.load(Ordering::Relaxed),
        level.completed,
        "{}",
        brief(&level)
    );
    // The level lasted its duration plus at most the same again (and one call in flight).
    assert!(level.duration_s < 1.0 + 0.2, "{}", brief(&level));
}

#[test]
fn closed_loop_scales_with_clients() {
    let queries = Vectors::new(vec![0.0; 400], 4).unwrap();
    let engine = Stub::steady(Duration::from_millis(2));
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
    let (dir, out) = succeeds_in_temp(&argv![
        "bench --db exact --dataset gen:uniform:n=2000,dim=8,queries=200 --runbook build-search --concurrency 1,2 --rate 100 --duration 500ms --histogram-logs -q --name load"
    ]);
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
    // The open level accounts for its schedule: 100/s for 0.5 s, nothing dropped at this rate.
    assert_eq!(s.load[2].intended, Some(50));
    assert_eq!(s.load[2].dropped, Some(0));
    assert_eq!(s.load[2].completed, 50);
    // The summary shows every level with its drops; closed loops have none to show.
    let table = stdout(&out);
    assert!(table.contains("dropped"), "{table}");
    let open_row = table
        .lines()
        .find(|l| l.contains("open 100/s x16"))
        .unwrap_or_else(|| panic!("no open-loop row: {table}"));
    assert!(
        open_row.contains(" 50 ") && open_row.ends_with(" ok"),
        "{open_row}"
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
    let merged = succeeds(dir.path(), &args);
    let total: u64 = s.load.iter().map(|l| l.completed).sum();
    assert!(
        stdout(&merged).contains(&format!("{total} queries")),
        "{}",
        stdout(&merged)
    );
}

/// A real engine driven far past what one sender can do: the level gives up on its backlog,
/// and the drops are in the result, the summary, the Markdown report and a warning.
#[test]
fn cli_saturated_level_reports_dropped_queries() {
    let (dir, out) = succeeds_in_temp(&argv![
        "bench --db exact --dataset gen:uniform:n=2000,dim=8,queries=50 --runbook build-search --rate 1000000 --workers 1 --duration 200ms -q --name drops"
    ]);
    let r = RunResult::load(&dir.path().join("results/drops.json")).unwrap();
    let l = &r.configs[0].searches().next().unwrap().load[0];
    let (intended, dropped) = (l.intended.unwrap(), l.dropped.unwrap());
    assert_eq!(intended, 200_000, "{}", brief(l));
    // One sender into a brute-force scan of 2000 points cannot send 200 000 queries in 0.4 s.
    assert!(dropped > 0 && l.saturated, "{}", brief(l));
    assert_eq!(l.completed + l.errors + dropped, intended, "{}", brief(l));
    assert!(l.duration_s < 0.4 + 0.2, "{}", brief(l));
    assert!(
        r.warnings.iter().any(|w| matches!(
            w,
            Warning::DroppedQueries { dropped: d, intended: 200_000, .. } if *d == dropped
        )),
        "{:?}",
        r.warnings
    );
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        text.contains(&format!("dropped {dropped} of 200000 scheduled queries")),
        "{text}"
    );
    assert!(text.contains(&format!(" {dropped} ")), "{text}");

    let md = succeeds(
        dir.path(),
        &["report", "results/drops.json", "--format", "markdown"],
    );
    let md = stdout(&md);
    assert!(md.contains("### Load (exact)"), "{md}");
    assert!(
        md.lines()
            .any(|l| l.contains("open 1000000/s x1") && l.contains(&format!("| {dropped} |"))),
        "{md}"
    );
    assert!(md.contains(&format!("dropped {dropped} of 200000")), "{md}");
}
