//! Seeded synthetic datasets: uniform and clustered-Gaussian vectors.
//!
//! The generator is [`crate::rng::SplitMix64`], so that a seed gives the same vectors on every
//! platform and every version of ragdbeval.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::distance::Distance;
use crate::vectors::Vectors;

/// The generator, re-exported where it was first defined.
pub use crate::rng::SplitMix64;

/// How the vectors are spread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SyntheticKind {
    /// Every coordinate uniform in [-1, 1).
    Uniform,
    /// Gaussian blobs: cluster centres drawn from N(0, 1), points at N(centre, `spread`²).
    Clustered,
}

/// Everything that determines a synthetic dataset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyntheticSpec {
    pub kind: SyntheticKind,
    pub n: usize,
    pub queries: usize,
    pub dim: usize,
    pub distance: Distance,
    pub seed: u64,
    pub clusters: usize,
    pub spread: f32,
    /// Added to every coordinate after drawing: data far from the origin, where
    /// `|x|² − 2q·x` loses every digit that separates neighbours in f32.
    pub offset: f32,
    /// Every coordinate is multiplied by this (before the offset): tiny or huge magnitudes.
    pub scale: f32,
    /// Share of train rows (0..1) replaced by a copy of an earlier row: exact ties.
    pub duplicates: f32,
}

impl SyntheticSpec {
    /// The embedded default of `ragdbeval bench`: small enough to run in seconds, clustered so
    /// that an ANN index has real work to do.
    pub fn demo() -> SyntheticSpec {
        SyntheticSpec {
            kind: SyntheticKind::Clustered,
            n: 20_000,
            queries: 500,
            dim: 64,
            distance: Distance::Euclidean,
            seed: 42,
            clusters: 32,
            spread: 0.5,
            offset: 0.0,
            scale: 1.0,
            duplicates: 0.0,
        }
    }

    /// `,offset=…,scale=…,duplicates=…` for the shape options that differ from the defaults
    /// (empty for plain specs, so their names and spec strings stay as they were).
    fn shape_suffix(&self, sep: &str) -> String {
        let mut out = String::new();
        if self.offset != 0.0 {
            out.push_str(&format!("{sep}offset={}", self.offset));
        }
        if self.scale != 1.0 {
            out.push_str(&format!("{sep}scale={}", self.scale));
        }
        if self.duplicates != 0.0 {
            out.push_str(&format!("{sep}duplicates={}", self.duplicates));
        }
        out
    }

    /// A short stable name such as `clustered-20000x64-euclidean-s42`.
    pub fn name(&self) -> String {
        let kind = match self.kind {
            SyntheticKind::Uniform => "uniform",
            SyntheticKind::Clustered => "clustered",
        };
        format!(
            "{kind}-{}x{}-{}-s{}{}",
            self.n,
            self.dim,
            self.distance,
            self.seed,
            self.shape_suffix("-")
        )
    }

    /// Generates (train, test).
    pub fn generate(&self) -> (Vectors, Vectors) {
        let mut rng = SplitMix64::new(self.seed);
        let clusters = self.clusters.max(1);
        let centres: Vec<f32> = match self.kind {
            SyntheticKind::Uniform => Vec::new(),
            SyntheticKind::Clustered => (0..clusters * self.dim)
                .map(|_| rng.next_gaussian())
                .collect(),
        };
        let draw = |count: usize, rng: &mut SplitMix64| -> Vec<f32> {
            let mut out = crate::vectors::matrix_with_capacity(count * self.dim);
            for _ in 0..count {
                match self.kind {
                    SyntheticKind::Uniform => {
                        out.extend((0..self.dim).map(|_| rng.next_f32() * 2.0 - 1.0))
                    }
                    SyntheticKind::Clustered => {
                        let c = rng.below(clusters as u64) as usize;
                        let centre = &centres[c * self.dim..(c + 1) * self.dim];
                        out.extend(centre.iter().map(|m| m + self.spread * rng.next_gaussian()));
                    }
                }
            }
            out
        };
        let mut train = draw(self.n, &mut rng);
        let mut test = draw(self.queries, &mut rng);
        if self.duplicates > 0.0 && self.n > 1 {
            let copies =
                ((self.n as f64 * self.duplicates.clamp(0.0, 1.0) as f64) as usize).min(self.n - 1);
            for _ in 0..copies {
                // Copy a random earlier row over a random later one.
                let to = 1 + rng.below(self.n as u64 - 1) as usize;
                let from = rng.below(to as u64) as usize;
                let (head, tail) = train.split_at_mut(to * self.dim);
                tail[..self.dim].copy_from_slice(&head[from * self.dim..(from + 1) * self.dim]);
            }
        }
        if self.scale != 1.0 || self.offset != 0.0 {
            for v in train.iter_mut().chain(test.iter_mut()) {
                *v = *v * self.scale + self.offset;
            }
        }
        // Both buffers are whole rows of dim >= 1 by construction.
        let dim = self.dim.max(1);
        (
            Vectors::new(train, dim).unwrap_or_default(),
            Vectors::new(test, dim).unwrap_or_default(),
        )
    }
}

/// A malformed `gen:` dataset spec.
#[derive(Debug, thiserror::Error)]
#[error(
    "bad generated-dataset spec `{spec}`: {reason}. Expected e.g. \
     gen:clustered:n=100000,dim=128,queries=1000,distance=euclidean,seed=1"
)]
pub struct SpecError {
    pub spec: String,
    pub reason: String,
}

impl FromStr for SyntheticSpec {
    type Err = SpecError;

    /// Parses `gen:KIND[:key=value,...]` (keys: n, dim, queries, distance, seed, clusters,
    /// spread, offset, scale, duplicates). Missing keys take the demo's values.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason: String| SpecError {
            spec: s.to_string(),
            reason,
        };
        let rest = s
            .strip_prefix("gen:")
            .ok_or_else(|| err("it must start with `gen:`".into()))?;
        let (kind, opts) = rest.split_once(':').unwrap_or((rest, ""));
        let mut spec = SyntheticSpec::demo();
        spec.kind = match kind {
            "uniform" => SyntheticKind::Uniform,
            "clustered" => SyntheticKind::Clustered,
            other => return Err(err(format!("unknown kind `{other}` (uniform, clustered)"))),
        };
        for pair in opts.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| err(format!("`{pair}` is not key=value")))?;
            let int = |v: &str| {
                v.trim()
                    .replace('_', "")
                    .parse::<usize>()
                    .map_err(|_| err(format!("`{k}` needs a whole number, got `{v}`")))
            };
            match k.trim() {
                "n" => spec.n = int(v)?,
                "dim" => spec.dim = int(v)?,
                "queries" => spec.queries = int(v)?,
                "seed" => spec.seed = int(v)? as u64,
                "clusters" => spec.clusters = int(v)?,
                "spread" => {
                    spec.spread = v
                        .trim()
                        .parse()
                        .map_err(|_| err(format!("`spread` needs a number, got `{v}`")))?
                }
                "distance" => spec.distance = v.parse().map_err(|e| err(format!("{e}")))?,
                "offset" | "scale" | "duplicates" => {
                    let x: f32 = v
                        .trim()
                        .parse()
                        .map_err(|_| err(format!("`{}` needs a number, got `{v}`", k.trim())))?;
                    if !x.is_finite() {
                        return Err(err(format!("`{}` must be finite", k.trim())));
                    }
                    match k.trim() {
                        "offset" => spec.offset = x,
                        "scale" => spec.scale = x,
                        _ if (0.0..=1.0).contains(&x) => spec.duplicates = x,
                        _ => return Err(err("`duplicates` is a share between 0 and 1".into())),
                    }
                }
                other => return Err(err(format!("unknown key `{other}`"))),
            }
        }
        if spec.n == 0 || spec.dim == 0 || spec.queries == 0 {
            return Err(err("n, dim and queries must be at least 1".into()));
        }
        // Checked before anything is allocated: an impossible size must be an error naming
        // the spec, not an allocation failure that aborts the process.
        let bytes = spec
            .n
            .checked_add(spec.queries)
            .and_then(|rows| rows.checked_mul(spec.dim))
            .and_then(|values| values.checked_mul(std::mem::size_of::<f32>()));
        let ram = crate::resources::MachineLimits::this_machine().ram_bytes;
        match (bytes, ram) {
            (None, _) => {
                return Err(err(
                    "n × dim overflows: far more than any machine holds".into()
                ));
            }
            (Some(b), Some(ram)) if b as u64 > ram => {
                return Err(err(format!(
                    "(n + queries) × dim × 4 bytes = {:.1} GB of vectors, more than this \
                     machine's {:.1} GB of RAM",
                    b as f64 / 1e9,
                    ram as f64 / 1e9
                )));
            }
            _ => {}
        }
        Ok(spec)
    }
}

impl fmt::Display for SyntheticSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            SyntheticKind::Uniform => "uniform",
            SyntheticKind::Clustered => "clustered",
        };
        write!(
            f,
            "gen:{kind}:n={},dim={},queries={},distance={},seed={},clusters={},spread={}{}",
            self.n,
            self.dim,
            self.queries,
            self.distance,
            self.seed,
            self.clusters,
            self.spread,
            self.shape_suffix(",")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_data() {
        let spec: SyntheticSpec = "gen:clustered:n=100,dim=8,queries=5,seed=7"
            .parse()
            .unwrap();
        let (a, qa) = spec.generate();
        let (b, qb) = spec.generate();
        assert_eq!(a, b);
        assert_eq!(qa, qb);
        assert_eq!(a.len(), 100);
        assert_eq!(qa.len(), 5);
        let other: SyntheticSpec = "gen:clustered:n=100,dim=8,queries=5,seed=8"
            .parse()
            .unwrap();
        assert_ne!(other.generate().0, a);
    }

    #[test]
    fn spec_round_trips_through_display() {
        let spec: SyntheticSpec = "gen:uniform:n=10,dim=3,queries=2,distance=angular"
            .parse()
            .unwrap();
        assert_eq!(spec.kind, SyntheticKind::Uniform);
        assert_eq!(spec.distance, Distance::Angular);
        let again: SyntheticSpec = spec.to_string().parse().unwrap();
        assert_eq!(again, spec);
        assert!("gen:weird".parse::<SyntheticSpec>().is_err());
        assert!("gen:uniform:n=0".parse::<SyntheticSpec>().is_err());
        assert!("gen:uniform:bogus=1".parse::<SyntheticSpec>().is_err());
    }

    #[test]
    fn uniform_values_stay_in_range() {
        let (train, _) = "gen:uniform:n=200,dim=4,queries=1"
            .parse::<SyntheticSpec>()
            .unwrap()
            .generate();
        assert!(train.as_flat().iter().all(|v| (-1.0..1.0).contains(v)));
    }
}
