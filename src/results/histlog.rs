//! HdrHistogram interval logs: every load level can write its per-second latency histograms
//! in the standard interval-log format (readable by HdrHistogram's own tools), and
//! `ragdbeval merge` adds logs from several processes or machines into one distribution.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, LogIteratorError, Tag,
};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};

use super::ResultFileError;
use crate::atomic::AtomicFile;
use crate::metrics::latency::{HISTOGRAM_UNIT, new_histogram};

fn werr(path: &Path, e: impl std::fmt::Display) -> ResultFileError {
    ResultFileError::Write {
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    }
}

/// Writes `intervals` (offset from the level's start, histogram in ns) tagged `tag`.
pub fn write(
    path: &Path,
    tag: &str,
    started: SystemTime,
    intervals: &[(Duration, Histogram<u64>)],
) -> Result<(), ResultFileError> {
    let mut file = AtomicFile::create(path).map_err(|e| werr(path, e))?;
    {
        let out = file.file();
        let mut serializer = V2DeflateSerializer::new();
        let mut builder = IntervalLogWriterBuilder::new();
        builder
            .add_comment(&format!(
                "ragdbeval latency log, values in {HISTOGRAM_UNIT}"
            ))
            .with_start_time(started)
            .with_base_time(started)
            // The MaxValue column in milliseconds, as HdrHistogram's own tools expect.
            .with_max_value_divisor(1e6);
        let mut log = builder
            .begin_log_with(&mut *out, &mut serializer)
            .map_err(|e| werr(path, e))?;
        let tag = Tag::new(tag);
        for (offset, h) in intervals {
            log.write_histogram(h, *offset, Duration::from_secs(1), tag)
                .map_err(|e| werr(path, format!("{e:?}")))?;
        }
    }
    file.file().flush().map_err(|e| werr(path, e))?;
    file.commit().map_err(|e| werr(path, e))
}

/// Adds every interval histogram of every log into one histogram (ns). Logs written before
/// latencies were recorded in nanoseconds say "values in microseconds" in their header
/// comment; their values are scaled to ns.
pub fn merge(paths: &[&Path]) -> Result<(Histogram<u64>, usize), ResultFileError> {
    let mut logs = Vec::with_capacity(paths.len());
    for path in paths {
        let bytes = std::fs::read(path).map_err(|e| ResultFileError::Read {
            path: path.to_path_buf(),
            source: e,
        })?;
        logs.push((*path, bytes));
    }
    let logs: Vec<(&Path, &[u8])> = logs.iter().map(|(p, b)| (*p, b.as_slice())).collect();
    merge_logs(&logs)
}

/// [`merge`] on logs already in memory, each named by its path in errors (the fuzz target
/// `interval_log` drives this).
pub fn merge_logs(logs: &[(&Path, &[u8])]) -> Result<(Histogram<u64>, usize), ResultFileError> {
    let mut total = new_histogram();
    let mut intervals = 0;
    let mut deserializer = Deserializer::new();
    for &(path, bytes) in logs {
        let bad = |m: String| ResultFileError::IntervalLog {
            path: path.to_path_buf(),
            message: m,
        };
        let intervals_before = intervals;
        let scale: u64 = if header_says_microseconds(bytes) {
            1000
        } else {
            1
        };
        for entry in IntervalLogIterator::new(bytes) {
            let entry = entry.map_err(|e| match e {
                LogIteratorError::ParseError { offset } => {
                    bad(format!("unreadable from byte {offset} on"))
                }
            })?;
            if let LogEntry::Interval(h) = entry {
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(h.encoded_histogram())
                    .map_err(|e| bad(format!("bad histogram encoding: {e}")))?;
                let hist: Histogram<u64> = deserializer
                    .deserialize(&mut raw.as_slice())
                    .map_err(|e| bad(format!("bad histogram: {e}")))?;
                if scale == 1 {
                    total.add(&hist).map_err(|e| bad(e.to_string()))?;
                } else {
                    for v in hist.iter_recorded() {
                        total
                            .record_n(v.value_iterated_to() * scale, v.count_at_value())
                            .map_err(|e| bad(e.to_string()))?;
                    }
                }
                intervals += 1;
            }
        }
        // An empty log would merge into a distribution of zeros that looks like a result.
        if intervals == intervals_before {
            return Err(bad("it holds no latency intervals".into()));
        }
    }
    Ok((total, intervals))
}

/// True when the log's leading comment lines name microseconds (ragdbeval's logs before
/// values were recorded in nanoseconds).
fn header_says_microseconds(bytes: &[u8]) -> bool {
    bytes
        .split(|b| *b == b'\n')
        .take_while(|line| line.first() == Some(&b'#'))
        .any(|line| String::from_utf8_lossy(line).contains("values in microseconds"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::latency::record;

    #[test]
    fn logs_round_trip_and_merge() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = new_histogram();
        let mut b = new_histogram();
        for us in 1..=100u64 {
            record(&mut a, Duration::from_micros(us));
            record(&mut b, Duration::from_micros(1000 + us));
        }
        let (pa, pb) = (dir.path().join("a.hlog"), dir.path().join("b.hlog"));
        write(&pa, "c1", SystemTime::now(), &[(Duration::ZERO, a.clone())]).unwrap();
        write(
            &pb,
            "c2",
            SystemTime::now(),
            &[
                (Duration::ZERO, b.clone()),
                (Duration::from_secs(1), a.clone()),
            ],
        )
        .unwrap();
        let (merged, n) = merge(&[&pa, &pb]).unwrap();
        assert_eq!(n, 3);
        assert_eq!(merged.len(), 300);
        assert_eq!(merged.max(), b.max());
        assert_eq!(merged.min(), 1000, "1 µs is 1000 ns");
        assert!(merge(&[&dir.path().join("missing.hlog")]).is_err());
    }

    /// Logs written when values were whole microseconds are scaled to nanoseconds on merge.
    #[test]
    fn microsecond_logs_are_scaled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.hlog");
        let mut old = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        old.record(250).unwrap();
        let mut bytes = Vec::new();
        {
            let mut serializer = V2DeflateSerializer::new();
            let mut builder = IntervalLogWriterBuilder::new();
            builder.add_comment("ragdbeval latency log, values in microseconds");
            let mut log = builder.begin_log_with(&mut bytes, &mut serializer).unwrap();
            log.write_histogram(&old, Duration::ZERO, Duration::from_secs(1), Tag::new("c1"))
                .unwrap();
        }
        std::fs::write(&path, bytes).unwrap();
        let (merged, n) = merge(&[&path]).unwrap();
        assert_eq!(n, 1);
        assert_eq!(merged.len(), 1);
        assert!(merged.equivalent(merged.max(), 250_000), "{}", merged.max());
    }
}
