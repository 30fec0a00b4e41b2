//! Ground truth for every search step of a runbook: exact top-k over the live set at that
//! step, computed before the run (so engine timings are undisturbed and errors come early) and
//! cached on disk, keyed by dataset hash, runbook hash, query count and k.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::atomic::AtomicFile;
use crate::dataset::Dataset;
use crate::engine::PointId;
use crate::groundtruth::{GroundTruth, RowSelection, exact_knn_rows};
use crate::output::progress;
use crate::runbook::Resolved;

const MAGIC: &[u8; 8] = b"RDBGT01\n";

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

/// Where the cached ground truth of a (dataset, runbook, queries, k) lives.
pub fn cache_path(cache_dir: &Path, dataset: &Dataset, runbook_hash: &str, k: usize) -> PathBuf {
    cache_dir.join("groundtruth").join(format!(
        "{}-{}-q{}-k{}.gt",
        &dataset.sha256[..dataset.sha256.len().min(16)],
        runbook_hash,
        dataset.test.len(),
        k
    ))
}

/// Computes (or loads from `cache`) the ground truth of every search step.
pub fn step_truths(
    dataset: &Dataset,
    steps: &[Resolved],
    k: usize,
    cache: Option<&Path>,
    quiet: bool,
) -> std::io::Result<StepTruths> {
    if let Some(path) = cache
        && let Ok(found) = read(path, steps.len())
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
        let bar = progress::count_bar(
            dataset.test.len() as u64,
            &format!("truth step {}", i + 1),
            quiet,
        );
        let gt = exact_knn_rows(
            &RowSelection {
                vectors: dataset.train.as_flat(),
                rows: &rows,
                ids: &ids,
                dim: dataset.train.dim(),
            },
            dataset.test.as_flat(),
            dataset.distance,
            k.min(live.len().max(1)),
            &|done| bar.set_position(done as u64),
        );
        bar.finish_and_clear();
        out[i] = Some(Arc::new(gt));
        computed_any = true;
    }
    if computed_any && let Some(path) = cache {
        // The cache is an optimisation: a read-only directory is not an error.
        let _ = write(path, &out);
    }
    Ok(out)
}

fn write(path: &Path, truths: &StepTruths) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = AtomicFile::create(path)?;
    {
        let mut w = BufWriter::new(file.file());
        w.write_all(MAGIC)?;
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

fn read(path: &Path, steps: usize) -> std::io::Result<StepTruths> {
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
    let mut r = BufReader::new(std::fs::File::open(path)?);
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)?;
    if &magic != MAGIC {
        return Err(bad("not a ragdbeval ground-truth cache"));
    }
    let mut word = [0u8; 8];
    let mut u64_le = |r: &mut BufReader<std::fs::File>| -> std::io::Result<u64> {
        r.read_exact(&mut word)?;
        Ok(u64::from_le_bytes(word))
    };
    if u64_le(&mut r)? as usize != steps {
        return Err(bad("step count differs"));
    }
    let mut out = Vec::with_capacity(steps);
    for _ in 0..steps {
        let k = u64_le(&mut r)?;
        if k == u64::MAX {
            out.push(None);
            continue;
        }
        let nq = u64_le(&mut r)? as usize;
        let len = nq * k as usize;
        let mut bytes = vec![0u8; len * 8];
        r.read_exact(&mut bytes)?;
        let ids = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect();
        let mut bytes = vec![0u8; len * 4];
        r.read_exact(&mut bytes)?;
        let distances = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        out.push(Some(Arc::new(GroundTruth {
            k: k as usize,
            ids,
            distances,
        })));
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
        let cache = dir.path().join("x.gt");
        let truths = step_truths(&ds, &steps, 10, Some(&cache), true).unwrap();
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
        let again = read(&cache, steps.len()).unwrap();
        assert_eq!(again, truths);
    }
}
