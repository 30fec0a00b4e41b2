//! Unit tests of the parent module.

use super::*;

/// An open-loop level written before drops were counted (`ragdbeval.result/1`, taken from
/// a real run) still loads, with the new figures absent rather than a made-up 0.
#[test]
fn old_open_level_loads_without_drop_figures() {
    let old = r#"{"kind": "open", "concurrency": 16, "target_rate": 200.0,
        "duration_s": 4.998584313, "completed": 1000, "errors": 0,
        "qps": 200.05664351789838, "latency": {"count": 1000, "mean_ms": 79.545,
        "p50_ms": 0.356351, "p90_ms": 408.682495, "p95_ms": 502.005759,
        "p99_ms": 540.540927, "p999_ms": 557.318143, "max_ms": 562.036735,
        "min_ms": 0.274944}, "max_send_lag_ms": 556.593564, "saturated": true,
        "resources": {"client": {"pid": 29560, "peak_rss_bytes": 615100416,
        "mean_cpu_percent": 51.56, "cpu_seconds": 2.58, "wall_seconds": 5.0036,
        "samples": 50}}}"#;
    let level: LoadLevel = serde_json::from_str(old).unwrap();
    assert_eq!(level.completed, 1000);
    assert_eq!(level.intended, None);
    assert_eq!(level.dropped, None);
    assert_eq!(level.sender_cpu_ms, None);
    assert_eq!(level.mean_send_lag_ms, None);
    // Absent figures stay absent when written again.
    let again = serde_json::to_string(&level).unwrap();
    assert!(
        !again.contains("dropped") && !again.contains("intended"),
        "{again}"
    );
}

/// A worker holds one per-second histogram at a time, hands each finished second to the
/// shared intervals, and keeps nothing past the cap but its total.
#[test]
fn recorder_holds_one_second_at_a_time() {
    let shared = Shared::new(Instant::now(), 122);
    let mut rec = Recorder::new(122);
    assert!(rec.current.is_none());
    rec.record(&shared.intervals, 1, Duration::from_micros(5));
    rec.record(&shared.intervals, 1, Duration::from_micros(7));
    assert_eq!(
        rec.current.as_ref().map(|(s, h)| (*s, h.len())),
        Some((1, 2))
    );
    rec.record(&shared.intervals, 3, Duration::from_micros(5));
    assert_eq!(
        rec.current.as_ref().map(|(s, _)| *s),
        Some(3),
        "second 1 handed over"
    );
    rec.record(&shared.intervals, 500, Duration::from_micros(5));
    assert_eq!(
        rec.current.as_ref().map(|(s, _)| *s),
        Some(3),
        "past the cap: total only"
    );
    assert_eq!(rec.total.len(), 4);
    shared.absorb(rec);
    let (total, intervals, errors) = shared.finish().unwrap();
    assert_eq!((total.len(), errors), (4, 0));
    let seconds: Vec<(u64, u64)> = intervals
        .iter()
        .map(|(t, h)| (t.as_secs(), h.len()))
        .collect();
    assert_eq!(seconds, [(1, 2), (3, 1)]);
}

#[test]
fn permutations_differ_per_client_and_cover_all_queries() {
    let a = permutation(100, 1);
    let b = permutation(100, 2);
    assert_ne!(a, b);
    let mut s = a.clone();
    s.sort();
    assert_eq!(s, (0..100).collect::<Vec<u32>>());
}
