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
        let bytes = crate::text::read(path).map_err(|e| ResultFileError::Read {
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
                let plain =
                    checked_v2_histogram(&raw).map_err(|m| bad(format!("bad histogram: {m}")))?;
                let hist: Histogram<u64> = deserializer
                    .deserialize(&mut plain.as_slice())
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

/// HdrHistogram's V2 encoding: a cookie, then (compressed form) a length and a zlib stream
/// holding the plain form, whose 40-byte header claims its payload's length.
/// The cookies carry the word size (`| 0x10`), as `hdrhistogram` writes and expects them.
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;
const V2_HEADER_LEN: usize = 40;
/// Far above any real interval histogram (1 ns .. 1 h at 3 digits encodes in under 0.5 MB).
const MAX_DECOMPRESSED_HISTOGRAM: u64 = 64 << 20;

/// The plain V2 form of an encoded histogram, with the payload length its header claims
/// checked against the bytes that are really there. The `hdrhistogram` deserializer allocates
/// the claimed length before reading, so a corrupt or hostile log claiming 4 GB would abort
/// the process (found by the `interval_log` fuzz target).
fn checked_v2_histogram(raw: &[u8]) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let word = |b: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let cookie = word(raw, 0).ok_or("shorter than its cookie")?;
    let plain = match cookie {
        V2_COOKIE => raw.to_vec(),
        V2_COMPRESSED_COOKIE => {
            let len = word(raw, 4).ok_or("shorter than its length field")? as usize;
            let stream = raw
                .get(8..8usize.saturating_add(len))
                .ok_or_else(|| format!("claims {len} compressed bytes, holds {}", raw.len() - 8))?;
            let mut plain = Vec::new();
            flate2::read::ZlibDecoder::new(stream)
                .take(MAX_DECOMPRESSED_HISTOGRAM + 1)
                .read_to_end(&mut plain)
                .map_err(|e| format!("not a zlib stream: {e}"))?;
            if plain.len() as u64 > MAX_DECOMPRESSED_HISTOGRAM {
                return Err(format!(
                    "decompresses to more than {MAX_DECOMPRESSED_HISTOGRAM} bytes"
                ));
            }
            plain
        }
        other => return Err(format!("unknown cookie {other:#x}")),
    };
    if word(&plain, 0) != Some(V2_COOKIE) {
        return Err("the compressed form does not hold a V2 histogram".into());
    }
    let claimed = word(&plain, 4).ok_or("shorter than its header")? as usize;
    let held = plain.len().saturating_sub(V2_HEADER_LEN);
    if plain.len() < V2_HEADER_LEN || claimed > held {
        return Err(format!("claims a {claimed}-byte payload, holds {held}"));
    }
    Ok(plain)
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
    use hdrhistogram::serialization::Serializer as _;

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

    /// A histogram whose header claims a payload far larger than it holds is refused before
    /// anything that size is allocated (the `interval_log` fuzz target found the abort).
    #[test]
    fn claimed_payload_lengths_are_checked() {
        let mut h = new_histogram();
        h.record(1234).unwrap();
        let mut plain = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(&h, &mut plain)
            .unwrap();
        assert!(checked_v2_histogram(&plain).is_ok());
        let mut lying = plain.clone();
        lying[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let err = checked_v2_histogram(&lying).unwrap_err();
        assert!(err.contains("claims a 4294967295-byte payload"), "{err}");

        let mut compressed = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&h, &mut compressed)
            .unwrap();
        assert_eq!(checked_v2_histogram(&compressed).unwrap(), plain);
        // The same lie inside the zlib stream.
        let mut deflated = Vec::new();
        {
            use std::io::Write as _;
            let mut z = flate2::write::ZlibEncoder::new(&mut deflated, flate2::Compression::fast());
            z.write_all(&lying).unwrap();
            z.finish().unwrap();
        }
        let mut framed = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        framed.extend((deflated.len() as u32).to_be_bytes());
        framed.extend(&deflated);
        assert!(checked_v2_histogram(&framed).is_err());
        let mut short = framed.clone();
        short[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(
            checked_v2_histogram(&short)
                .unwrap_err()
                .contains("compressed bytes")
        );
        assert!(checked_v2_histogram(&[0x1c, 0x84]).is_err());
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
