//! Ground truth for every search step of a runbook: exact top-k over the live set at that
//! step, computed before the run (so engine timings are undisturbed and errors come early) and
//! cached on disk.
//!
//! The cache is keyed by a SHA-256 over everything that determines the truth: the dataset's
//! content hash, the train rows kept (`--limit`), the query vectors themselves (after
//! `--max-queries`), the distance, the depth k and the resolved live set of every step. The key
//! is also stored in the file's header and checked on load, together with the counts and
//! depths, which are bounded by the file's size before anything is allocated. A cache entry
//! that does not match in every respect is recomputed, never used.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::atomic::AtomicFile;
use crate::dataset::Dataset;
use crate::distance::Distance;
use crate::groundtruth::{GroundTruth, RowSelection, exact_knn};
use crate::runbook::Resolved;
use crate::types::PointId;
use crate::types::{Progress, ProgressUnit};

/// Format version 3: the header carries the cache key; the distances are those of
/// `Distance::between` with f64 block sums (version 2's f32 sums may differ by an ulp, and
/// would no longer compare bit for bit with the distances the harness recomputes).
const MAGIC: &[u8; 8] = b"RDBGT03\n";
/// Largest depth a cache file may claim (the bench caps k at 1000).
const MAX_CACHED_K: u64 = 1000;

/// Per runbook step: the ground truth of a search step, `None` for other steps.
pub type StepTruths = Vec<Option<Arc<GroundTruth>>>;

/// True when the live set is exactly train rows 0..n with id = row: the dataset's own ground
/// truth (possibly from its file) applies.
fn is_whole_dataset(live: &[(PointId, usize)], n: usize) -> bool {
    live.len() == n
        && live
            .iter()
            .enumerate()
            .all(|(i, (id, row))| *id == i as PointId && *row == i)
}

/// SHA-256 (hex) of everything the truth of `steps` depends on.
pub fn cache_key(dataset: &Dataset, steps: &[Resolved], k: usize) -> String {
    let mut h = Sha256::new();
    h.update(MAGIC);
    // The source's content hash plus the number of train rows kept: `--limit` keeps a prefix,
    // so the two identify the train vectors exactly.
    h.update(dataset.sha256.as_bytes());
    h.update((dataset.train.len() as u64).to_le_bytes());
    h.update((dataset.train.dim() as u64).to_le_bytes());
    h.update(dataset.distance.as_str().as_bytes());
    h.update((k as u64).to_le_bytes());
    // The queries themselves: cheap to hash and immune to any subsetting rule.
    h.update((dataset.test.len() as u64).to_le_bytes());
    for v in dataset.test.as_flat() {
        h.update(v.to_le_bytes());
    }
    // The dataset's own ground truth serves whole-dataset steps: its depth and source matter.
    h.update((dataset.ground_truth.k as u64).to_le_bytes());
    h.update(format!("{:?}", dataset.ground_truth_source).as_bytes());
    h.update((steps.len() as u64).to_le_bytes());
    for step in steps {
        h.update(step.kind().as_bytes());
        if let Resolved::Search { live } = step {
            h.update((live.len() as u64).to_le_bytes());
            for (id, row) in live {
                h.update(id.to_le_bytes());
                h.update((*row as u64).to_le_bytes());
            }
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A ground-truth cache file and the key its contents must carry: computed once, used both
/// to name the file and to check what it holds.
#[derive(Debug, Clone)]
pub struct GtCache {
    pub path: PathBuf,
    pub key: String,
}

/// Where the cached ground truth of (dataset, resolved steps, k) lives: one file per key.
pub fn cache_path(cache_dir: &Path, dataset: &Dataset, steps: &[Resolved], k: usize) -> GtCache {
    let key = cache_key(dataset, steps, k);
    GtCache {
        path: cache_dir
            .join("groundtruth")
            .join(format!("{}-k{k}.gt", &key[..32])),
        key,
    }
}

/// Computes (or loads from `cache`) the ground truth of every search step.
pub fn step_truths(
    dataset: &Dataset,
    steps: &[Resolved],
    k: usize,
    cache: Option<&GtCache>,
    progress: &dyn Progress,
) -> std::io::Result<StepTruths> {
    if let Some(cache) = cache
        && let Ok(found) = read(
            &cache.path,
            &cache.key,
            steps,
            dataset.test.len(),
            dataset.distance,
        )
    {
        return Ok(found);
    }
    let n = dataset.train.len();
    let mut out: StepTruths = vec![None; steps.len()];
    let mut computed_any = false;
    for (i, step) in steps.iter().enumerate() {
        let Resolved::Search { live } = step else {
            continue;
        };
        if is_whole_dataset(live, n) && dataset.ground_truth.k >= k {
            out[i] = Some(Arc::new(dataset.ground_truth.clone()));
            continue;
        }
        // Reuse an identical live set computed for an earlier step.
        if let Some(prev) = (0..i)
            .rev()
            .find(|j| matches!(&steps[*j], Resolved::Search { live: l } if l == live))
        {
            out[i] = out[prev].clone();
            continue;
        }
        let rows: Vec<usize> = live.iter().map(|(_, r)| *r).collect();
        let ids: Vec<PointId> = live.iter().map(|(id, _)| *id).collect();
        let bar = progress.task(
            &format!("truth step {}", i + 1),
            Some(dataset.test.len() as u64),
            ProgressUnit::Items,
        );
        let gt = exact_knn(
            &RowSelection {
                vectors: dataset.train.as_flat(),
                rows: &rows,
                ids: &ids,
                dim: dataset.train.dim(),
            },
            dataset.test.as_flat(),
            dataset.distance,
            k.min(live.len().max(1)),
            &|done| bar.set(done as u64),
        );
        drop(bar);
        out[i] = Some(Arc::new(gt));
        computed_any = true;
    }
    if computed_any && let Some(cache) = cache {
        // The cache is an optimisation: a read-only directory is not an error.
        let _ = write(&cache.path, &cache.key, &out);
    }
    Ok(out)
}

/// Loads the truths cached in `cache` for `steps` of `dataset` (an error when absent or not
/// exactly for them).
pub(super) fn read_cache(
    cache: &GtCache,
    steps: &[Resolved],
    dataset: &Dataset,
) -> std::io::Result<StepTruths> {
    read(
        &cache.path,
        &cache.key,
        steps,
        dataset.test.len(),
        dataset.distance,
    )
}

/// Writes `truths` to `cache`.
pub(super) fn write_cache(cache: &GtCache, truths: &StepTruths) -> std::io::Result<()> {
    write(&cache.path, &cache.key, truths)
}

fn write(path: &Path, key: &str, truths: &StepTruths) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = AtomicFile::create(path)?;
    {
        let mut w = BufWriter::new(file.file());
        w.write_all(&cache_header(key))?;
        w.write_all(&(truths.len() as u64).to_le_bytes())?;
        for t in truths {
            match t {
                None => w.write_all(&u64::MAX.to_le_bytes())?,
                Some(gt) => {
                    w.write_all(&(gt.k as u64).to_le_bytes())?;
                    w.write_all(&(gt.queries() as u64).to_le_bytes())?;
                    for id in &gt.ids {
                        w.write_all(&id.to_le_bytes())?;
                    }
                    for d in &gt.distances {
                        w.write_all(&d.to_le_bytes())?;
                    }
                }
            }
        }
        w.flush()?;
    }
    file.commit()
}

/// A reader that knows how many bytes the file still holds, so no length read from the file
/// is trusted before it is checked against the data that should follow.
struct Bounded<R: Read> {
    reader: R,
    remaining: u64,
}

impl<R: Read> Bounded<R> {
    fn bytes(&mut self, buf: &mut [u8]) -> std::io::Result<()> {
        if buf.len() as u64 > self.remaining {
            return Err(invalid("truncated ground-truth cache"));
        }
        self.reader.read_exact(buf)?;
        self.remaining -= buf.len() as u64;
        Ok(())
    }

    fn u64(&mut self) -> std::io::Result<u64> {
        let mut word = [0u8; 8];
        self.bytes(&mut word)?;
        Ok(u64::from_le_bytes(word))
    }
}

fn invalid(message: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message.into())
}

/// Loads a cache file written for `key`, checking that it describes exactly `steps` over
/// `queries` queries. Every count is checked against the bytes the file still holds before
/// anything is allocated, so a corrupt or hostile header cannot exhaust memory.
fn read(
    path: &Path,
    key: &str,
    steps: &[Resolved],
    queries: usize,
    distance: Distance,
) -> std::io::Result<StepTruths> {
    let file = std::fs::File::open(path)?;
    let remaining = file.metadata()?.len();
    read_from(
        BufReader::new(file),
        remaining,
        key,
        steps,
        queries,
        distance,
    )
}

/// [`read`] on bytes already in memory: what the fuzz target `gt_cache` drives.
pub fn parse_cache(
    bytes: &[u8],
    key: &str,
    steps: &[Resolved],
    queries: usize,
    distance: Distance,
) -> std::io::Result<StepTruths> {
    read_from(bytes, bytes.len() as u64, key, steps, queries, distance)
}

/// The header a cache written for `key` starts with, so that the fuzz target can get past
/// the key check and exercise what follows it.
pub fn cache_header(key: &str) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&(key.len() as u64).to_le_bytes());
    out.extend_from_slice(key.as_bytes());
    out
}

fn read_from(
    reader: impl Read,
    remaining: u64,
    key: &str,
    steps: &[Resolved],
    queries: usize,
    distance: Distance,
) -> std::io::Result<StepTruths> {
    let mut r = Bounded { reader, remaining };
    let mut magic = [0u8; 8];
    r.bytes(&mut magic)?;
    if &magic != MAGIC {
        return Err(invalid("not a ragdbeval ground-truth cache (v2)"));
    }
    if r.u64()? != key.len() as u64 {
        return Err(invalid("cache key differs"));
    }
    let mut stored_key = vec![0u8; key.len()];
    r.bytes(&mut stored_key)?;
    if stored_key != key.as_bytes() {
        return Err(invalid("cache key differs"));
    }
    if r.u64()? != steps.len() as u64 {
        return Err(invalid("step count differs"));
    }
    let mut out = Vec::with_capacity(steps.len());
    for step in steps {
        let k = r.u64()?;
        let live = match step {
            Resolved::Search { live } => Some(live),
            _ => None,
        };
        let is_search = live.is_some();
        if k == u64::MAX {
            if is_search {
                return Err(invalid("a search step has no cached truth"));
            }
            out.push(None);
            continue;
        }
        if !is_search {
            return Err(invalid("a non-search step has a cached truth"));
        }
        let nq = r.u64()?;
        if k == 0 || k > MAX_CACHED_K || nq != queries as u64 {
            return Err(invalid(format!(
                "cached truth has depth {k} and {nq} queries; expected 1..={MAX_CACHED_K} and {queries}"
            )));
        }
        let len = nq * k;
        // 8 bytes of id and 4 of distance per entry must still be in the file.
        if len.saturating_mul(12) > r.remaining {
            return Err(invalid("truncated ground-truth cache"));
        }
        let len = len as usize;
        let mut bytes = vec![0u8; len * 8];
        r.bytes(&mut bytes)?;
        let ids = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect();
        let mut bytes = vec![0u8; len * 4];
        r.bytes(&mut bytes)?;
        let distances = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let truth = GroundTruth {
            k: k as usize,
            ids,
            distances,
        };
        // A damaged or foreign cache must not pass for the truth: the key says which inputs
        // it claims to belong to, this says whether it can belong to them at all.
        let mut live_ids: Vec<PointId> = live.into_iter().flatten().map(|(id, _)| *id).collect();
        live_ids.sort_unstable();
        truth
            .check(distance, |id| live_ids.binary_search(&id).is_ok())
            .map_err(|why| invalid(format!("cached truth of step {}: {why}", out.len() + 1)))?;
        out.push(Some(Arc::new(truth)));
    }
    if r.remaining != 0 {
        return Err(invalid("trailing bytes after the cached truth"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{LoadOptions, load};
    use crate::groundtruth::naive_knn;
    use crate::runbook::Runbook;

    #[test]
    fn live_set_truth_matches_naive_and_round_trips_through_the_cache() {
        let opts = LoadOptions {
            gt_k: 10,
            ..LoadOptions::default()
        };
        let ds = load("gen:uniform:n=400,dim=6,queries=4,seed=3", &opts).unwrap();
        let steps = Runbook::default_mutations().resolve(400).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let cache = GtCache {
            path: dir.path().join("x.gt"),
            key: cache_key(&ds, &steps, 10),
        };
        let truths = step_truths(&ds, &steps, 10, Some(&cache), &crate::types::Silent).unwrap();
        for (i, step) in steps.iter().enumerate() {
            let Resolved::Search { live } = step else {
                assert!(truths[i].is_none());
                continue;
            };
            let gt = truths[i].as_ref().unwrap();
            let mut base = Vec::new();
            let ids: Vec<PointId> = live.iter().map(|(id, _)| *id).collect();
            for (_, row) in live {
                base.extend_from_slice(ds.train.row(*row));
            }
            for q in 0..4 {
                let want = naive_knn(&base, &ids, 6, ds.test.row(q), ds.distance, 10);
                let got: Vec<_> = gt
                    .ids_of(q)
                    .iter()
                    .copied()
                    .zip(gt.distances_of(q).iter().copied())
                    .collect();
                assert_eq!(got, want, "step {i} query {q}");
            }
        }
        let again = read(&cache.path, &cache.key, &steps, 4, ds.distance).unwrap();
        assert_eq!(again, truths);
    }
}
