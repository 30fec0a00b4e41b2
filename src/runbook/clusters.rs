//! Clusters of the train rows for drift runbooks (points inserted cluster by cluster, the
//! shape of big-ann-benchmarks' `msturing-10M-clustered` runbook): seeded k-means on a sample,
//! then every row assigned to its nearest centroid. The labels depend only on the data, the
//! number of clusters and the seed, so a runbook that names clusters resolves to the same ids
//! on every run (and its ground truth is cached under them).

use rayon::prelude::*;

use crate::rng::SplitMix64;
use crate::vectors::Vectors;

/// Rows k-means is fitted on, per cluster.
const SAMPLE_PER_CLUSTER: usize = 256;
/// Lloyd iterations on the sample.
const ITERATIONS: usize = 12;

fn squared_l2(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// The nearest centroid (ties: the lower index).
fn nearest(row: &[f32], centroids: &[Vec<f32>]) -> u32 {
    let mut best = (f32::INFINITY, 0u32);
    for (c, centroid) in centroids.iter().enumerate() {
        let d = squared_l2(row, centroid);
        if d < best.0 {
            best = (d, c as u32);
        }
    }
    best.1
}

/// The cluster (`0..of`) of every train row, by squared Euclidean distance to k-means
/// centroids. Clusters are numbered by size, largest first, so `index = 0` is the bulk of the
/// data whatever the seed; a cluster can be empty only when the data has fewer than `of`
/// distinct rows.
pub fn labels(train: &Vectors, of: usize, seed: u64) -> Vec<u32> {
    let n = train.len();
    let of = of.max(1);
    if n == 0 {
        return Vec::new();
    }
    let mut rng = SplitMix64::new(seed);
    // Seeded sample (partial Fisher-Yates over row numbers).
    let take = (of * SAMPLE_PER_CLUSTER).min(n);
    let mut order: Vec<usize> = (0..n).collect();
    for j in 0..take {
        let pick = j + rng.below((n - j) as u64) as usize;
        order.swap(j, pick);
    }
    let sample: Vec<&[f32]> = order[..take].iter().map(|&r| train.row(r)).collect();
    // k-means++ seeding on the sample.
    let mut centroids: Vec<Vec<f32>> = vec![sample[rng.below(take as u64) as usize].to_vec()];
    let mut closest: Vec<f32> = sample
        .iter()
        .map(|r| squared_l2(r, &centroids[0]))
        .collect();
    while centroids.len() < of {
        let total: f64 = closest.iter().map(|&d| d as f64).sum();
        let next = if total > 0.0 {
            let mut target = rng.next_f64() * total;
            closest
                .iter()
                .position(|&d| {
                    target -= d as f64;
                    target < 0.0
                })
                .unwrap_or(take - 1)
        } else {
            rng.below(take as u64) as usize
        };
        let centroid = sample[next].to_vec();
        for (d, r) in closest.iter_mut().zip(&sample) {
            *d = d.min(squared_l2(r, &centroid));
        }
        centroids.push(centroid);
    }
    // Lloyd on the sample; an emptied cluster keeps its centroid.
    let dim = train.dim();
    for _ in 0..ITERATIONS {
        let assigned: Vec<u32> = sample.par_iter().map(|r| nearest(r, &centroids)).collect();
        let mut sums = vec![vec![0f64; dim]; of];
        let mut counts = vec![0usize; of];
        for (r, &c) in sample.iter().zip(&assigned) {
            counts[c as usize] += 1;
            for (s, x) in sums[c as usize].iter_mut().zip(r.iter()) {
                *s += *x as f64;
            }
        }
        for ((centroid, sum), count) in centroids.iter_mut().zip(&sums).zip(&counts) {
            if *count > 0 {
                for (c, s) in centroid.iter_mut().zip(sum) {
                    *c = (s / *count as f64) as f32;
                }
            }
        }
    }
    let raw: Vec<u32> = (0..n)
        .into_par_iter()
        .map(|i| nearest(train.row(i), &centroids))
        .collect();
    // Renumber by size, largest first (ties: lower centroid index).
    let mut sizes = vec![0usize; of];
    for &c in &raw {
        sizes[c as usize] += 1;
    }
    let mut by_size: Vec<usize> = (0..of).collect();
    by_size.sort_by(|a, b| sizes[*b].cmp(&sizes[*a]).then(a.cmp(b)));
    let mut rank = vec![0u32; of];
    for (r, &c) in by_size.iter().enumerate() {
        rank[c] = r as u32;
    }
    raw.into_iter().map(|c| rank[c as usize]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three well-separated blobs of different sizes come out as three clusters numbered by
    /// size, the same for the same seed.
    #[test]
    fn separated_blobs_are_found_and_numbered_by_size() {
        let mut rng = SplitMix64::new(3);
        let mut data = Vec::new();
        let mut truth = Vec::new();
        for (blob, (size, centre)) in [(50usize, 0.0f32), (300, 100.0), (150, -100.0)]
            .into_iter()
            .enumerate()
        {
            for _ in 0..size {
                data.push(centre + rng.next_f64() as f32);
                data.push(centre - rng.next_f64() as f32);
                truth.push(blob);
            }
        }
        let train = Vectors::new(data, 2).unwrap();
        let labels = labels(&train, 3, 11);
        assert_eq!(labels, super::labels(&train, 3, 11));
        // Blob 1 (300 rows) is cluster 0, blob 2 (150) cluster 1, blob 0 (50) cluster 2.
        let expected = [2u32, 0, 1];
        for (l, t) in labels.iter().zip(&truth) {
            assert_eq!(*l, expected[*t]);
        }
    }
}
