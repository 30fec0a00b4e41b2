//! The ann-benchmarks HDF5 layout: datasets `train` [N,D], `test` [Q,D], `neighbors` [Q,k]
//! (int32 or int64) and `distances` [Q,k] (float32 or float64); root attributes `distance`
//! (string), optional `dimension` and `point_type`. Files written by h5py store strings as
//! variable-length UTF-8; fixed-length and ASCII strings are read too.
//!
//! ragdbeval's extension for filtered search: an optional group `attributes` holding one 1-D
//! dataset per point attribute, as long as `train` (row i = point i): integer datasets are
//! integer attributes (ranges), string datasets keyword attributes (equality). Names must be
//! lowercase identifiers. With h5py:
//!
//! ```text
//! f.create_dataset("attributes/category", data=np.array(cats, dtype=h5py.string_dtype()))
//! f.create_dataset("attributes/price", data=np.array(prices, dtype=np.int64))
//! ```

use std::path::Path;

use hdf5::types::{FixedAscii, FixedUnicode, VarLenAscii, VarLenUnicode};

mod write;

pub use write::{PendingWrite, begin_write, write};

use super::DatasetError;
use super::spill::{SpillNote, SpillTarget};
use crate::distance::Distance;
use crate::filter::{Attributes, Column};
use crate::types::ElementType;
use crate::vectors::Vectors;

/// A file's `neighbors` and `distances`: their depth `k`, then `k` train row ids and `k`
/// distances per query, row-major.
pub type StoredNeighbors = (usize, Vec<i64>, Vec<f32>);

/// What an HDF5 file holds, read in full.
pub struct Hdf5Contents {
    pub distance: Distance,
    pub point_type: Option<String>,
    /// The train rows read: all, or the prefix `--limit` keeps when the matrix was spilled.
    pub train: Vectors,
    /// Rows of the file's `train` matrix, read or not.
    pub train_rows_in_file: usize,
    pub test: Vectors,
    /// Neighbours as stored (ids unchecked), with the file's own distances.
    pub neighbors: Option<StoredNeighbors>,
    /// What reading changed that the reader of a result must know (integer components that
    /// f32 cannot hold exactly).
    pub warnings: Vec<String>,
    /// The points' attributes from the `attributes` group, if the file has one.
    pub attributes: Option<Attributes>,
    /// `uint8` (or `int8`) when `train` and `test` are both stored as integers and every
    /// component fits that type; `float32` otherwise (see [`integer_element_type`]).
    pub element_type: ElementType,
}

/// Layout facts read without loading the vectors (`dataset info`).
#[derive(Debug, serde::Serialize)]
pub struct Hdf5Layout {
    pub datasets: Vec<(String, Vec<usize>, String)>,
    pub attributes: Vec<(String, String)>,
}

fn h5err(path: &Path, what: &str, e: impl std::fmt::Display) -> DatasetError {
    DatasetError::Format {
        path: path.to_path_buf(),
        message: format!("{what}: {e}"),
    }
}

/// Reads a string attribute whatever string type it was written with.
fn read_string_attr(file: &hdf5::File, name: &str) -> Option<String> {
    let attr = file.attr(name).ok()?;
    if let Ok(s) = attr.read_scalar::<VarLenUnicode>() {
        return Some(s.as_str().to_string());
    }
    if let Ok(s) = attr.read_scalar::<VarLenAscii>() {
        return Some(s.as_str().to_string());
    }
    if let Ok(s) = attr.read_scalar::<FixedUnicode<256>>() {
        return Some(s.as_str().to_string());
    }
    if let Ok(s) = attr.read_scalar::<FixedAscii<256>>() {
        return Some(s.as_str().to_string());
    }
    None
}

fn open(path: &Path) -> Result<hdf5::File, DatasetError> {
    // The HDF5 C library prints its own error stack to stderr; ours is clearer.
    hdf5::silence_errors(true);
    if !path.exists() {
        return Err(DatasetError::NotFound(path.to_path_buf()));
    }
    // No file lock (as `main` also says through HDF5_USE_FILE_LOCKING, for code that links
    // the library without it): a lock held by any process that inherited the descriptor —
    // a child spawned by another thread while the file was being written — would make
    // reading a finished file fail.
    hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(path)
        .map_err(|e| h5err(path, "not a readable HDF5 file", e))
}

/// The largest integer magnitude below which f32 holds every integer exactly (2^24).
const F32_EXACT_INTEGERS: i64 = 1 << 24;

/// Rows read per slab when the train matrix goes to a spill file.
const SLAB_BYTES: usize = 64 << 20;

fn read_matrix(
    file: &hdf5::File,
    path: &Path,
    name: &str,
    warnings: &mut Vec<String>,
    spill: Option<SpillTarget<'_>>,
) -> Result<Vectors, DatasetError> {
    let ds = file.dataset(name).map_err(|_| DatasetError::MissingField {
        path: path.to_path_buf(),
        field: name.to_string(),
    })?;
    let shape = ds.shape();
    if shape.len() != 2 {
        return Err(h5err(
            path,
            &format!("`{name}` must be 2-dimensional"),
            format!("shape {shape:?}"),
        ));
    }
    let data: Vec<f32> = if wide_integers(&ds) {
        // HDF5 would convert silently; reading the integers first tells how many of them f32
        // rounds (above 2^24 the spacing of f32 values exceeds 1), which changes distances.
        let ints: Vec<i64> = ds
            .read_raw::<i64>()
            .map_err(|e| h5err(path, &format!("reading `{name}`"), e))?;
        let inexact = ints
            .iter()
            .filter(|v| v.unsigned_abs() > F32_EXACT_INTEGERS as u64)
            .count();
        if inexact > 0 {
            warnings.push(format!(
                "{}: {inexact} of the {} integer components of `{name}` exceed 2^24 in \
                 magnitude and were rounded to the nearest f32 (distances are computed on the \
                 rounded values)",
                path.display(),
                ints.len()
            ));
        }
        ints.into_iter().map(|v| v as f32).collect()
    } else if let Some(target) = spill
        && target.needed(target.kept(shape[0]), shape[1])
    {
        return read_spilled(&ds, path, name, shape[0], shape[1], target);
    } else {
        let mut data = crate::vectors::zeroed_matrix::<f32>(ds.size());
        ds.read_into_raw(&mut data)
            .map_err(|e| h5err(path, &format!("reading `{name}`"), e))?;
        data
    };
    Vectors::new(data, shape[1]).map_err(|e| h5err(path, &format!("`{name}`"), e))
}

/// A float matrix too large for memory: an earlier spill of it, or the rows `--limit` keeps
/// read in slabs into a new spill file, then mapped.
fn read_spilled(
    ds: &hdf5::Dataset,
    path: &Path,
    name: &str,
    rows: usize,
    dim: usize,
    target: SpillTarget<'_>,
) -> Result<Vectors, DatasetError> {
    if let Some((vectors, _)) = target.find(rows) {
        return Ok(vectors);
    }
    let kept = target.kept(rows);
    let mut spill = target.create(kept, dim)?;
    let out = spill.as_mut_slice();
    let slab = (SLAB_BYTES / (dim * 4)).max(1);
    for start in (0..kept).step_by(slab) {
        let end = (start + slab).min(kept);
        let block = ds
            .read_slice_2d::<f32, _>((start..end, ..))
            .map_err(|e| h5err(path, &format!("reading rows {start}..{end} of `{name}`"), e))?;
        let values = out
            .get_mut(start * dim..end * dim)
            .ok_or_else(|| h5err(path, name, "slab beyond the spill file"))?;
        match block.as_slice() {
            Some(flat) if flat.len() == values.len() => values.copy_from_slice(flat),
            _ => {
                for (o, v) in values.iter_mut().zip(block.iter()) {
                    *o = *v;
                }
            }
        }
    }
    spill.finish(&SpillNote {
        rows_in_source: rows,
        rounded: false,
    })
}

/// Reads the whole file. A train matrix too large for memory goes to a spill file (see
/// [`super::spill`]) when `spill` says where; `None` always reads it into memory.
pub fn read(path: &Path, spill: Option<SpillTarget<'_>>) -> Result<Hdf5Contents, DatasetError> {
    let file = open(path)?;
    let mut warnings = Vec::new();
    let distance = read_distance(&file, path, &mut warnings)?;
    let point_type = read_string_attr(&file, "point_type");
    let train = read_matrix(&file, path, "train", &mut warnings, spill)?;
    let train_rows_in_file = file
        .dataset("train")
        .map_or(train.len(), |d| d.shape().first().copied().unwrap_or(0));
    let test = read_matrix(&file, path, "test", &mut warnings, None)?;
    let stored_as_integers = ["train", "test"].iter().all(|name| {
        file.dataset(name)
            .is_ok_and(|d| element_kind(&d) == ElementKind::Integer)
    });
    let element_type = if stored_as_integers {
        integer_element_type(&train, &test)
    } else {
        ElementType::Float32
    };

    let neighbors = read_neighbors(&file, path)?;
    let attributes = read_attributes(&file, path, train.len())?;
    Ok(Hdf5Contents {
        distance,
        point_type,
        train,
        train_rows_in_file,
        test,
        neighbors,
        warnings,
        attributes,
        element_type,
    })
}

/// The root attribute `distance` (VIBE's `normalized` read as angular, with a warning).
fn read_distance(
    file: &hdf5::File,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<Distance, DatasetError> {
    let distance_name = match read_string_attr(file, "distance") {
        Some(name) => name,
        // Present but not a string: "missing" would send the user looking for nothing.
        None if file.attr("distance").is_ok() => {
            let stored = file
                .attr("distance")
                .and_then(|a| a.dtype())
                .and_then(|t| t.to_descriptor())
                .map_or_else(|_| "an unreadable type".to_string(), |d| d.to_string());
            return Err(h5err(
                path,
                "root attribute `distance` must be a string (euclidean, angular or dot)",
                format!("it is {stored}"),
            ));
        }
        None => {
            return Err(DatasetError::MissingField {
                path: path.to_path_buf(),
                field: "distance (root attribute)".into(),
            });
        }
    };
    // VIBE's `normalized`: unit vectors, under which euclidean, angular and inner product
    // rank alike; angular is the metric that stays right if a vector is not quite unit.
    if distance_name.trim().eq_ignore_ascii_case("normalized") {
        warnings.push(
            "distance `normalized` (VIBE: unit vectors, any metric ranks alike) read as angular"
                .to_string(),
        );
        Ok(Distance::Angular)
    } else {
        distance_name
            .parse()
            .map_err(|e| h5err(path, "root attribute `distance`", e))
    }
}

/// The stored `neighbors` (depth, ids) and their `distances` (NaN when the file has none),
/// refused when either holds the other's element kind.
fn read_neighbors(file: &hdf5::File, path: &Path) -> Result<Option<StoredNeighbors>, DatasetError> {
    Ok(match file.dataset("neighbors") {
        Err(_) => None,
        Ok(ds) => {
            let shape = ds.shape();
            if shape.len() != 2 {
                return Err(h5err(
                    path,
                    "`neighbors` must be 2-dimensional",
                    format!("{shape:?}"),
                ));
            }
            // HDF5 converts on read: float ids would arrive truncated (a `distances` array
            // stored as `neighbors` passes every range check as small integers), so the stored
            // type must be an integer one.
            let kind = element_kind(&ds);
            if kind != ElementKind::Integer {
                return Err(h5err(
                    path,
                    "`neighbors` must hold integer ids",
                    format!(
                        "it holds {}{}",
                        kind.as_str(),
                        if kind == ElementKind::Float {
                            "; are `neighbors` and `distances` swapped?"
                        } else {
                            ""
                        }
                    ),
                ));
            }
            if let Ok(d) = file.dataset("distances")
                && element_kind(&d) == ElementKind::Integer
            {
                return Err(h5err(
                    path,
                    "`distances` must hold floats",
                    "it holds integers; are `neighbors` and `distances` swapped?",
                ));
            }
            let ids: Vec<i64> = ds
                .read_raw::<i64>()
                .map_err(|e| h5err(path, "reading `neighbors`", e))?;
            let dists: Vec<f32> = match file.dataset("distances") {
                Ok(d) => d
                    .read_raw::<f32>()
                    .map_err(|e| h5err(path, "reading `distances`", e))?,
                Err(_) => vec![f32::NAN; ids.len()],
            };
            if dists.len() != ids.len() {
                return Err(h5err(
                    path,
                    "`distances` and `neighbors` differ in shape",
                    format!("{} vs {} values", dists.len(), ids.len()),
                ));
            }
            Some((shape[1], ids, dists))
        }
    })
}

/// The element type of vectors an HDF5 file stores as integers (of any width): `uint8` when
/// every component of both sets is in 0..=255, else `int8` when every one is in -128..=127,
/// else `float32` (wider integers are held as f32, rounded above 2^24 with a warning). The
/// rule looks at the values, not the width, because ann-benchmarks-style files often store
/// byte data (MNIST, BIGANN) in wider integer types.
pub fn integer_element_type(train: &Vectors, test: &Vectors) -> ElementType {
    let all = |lo: f32, hi: f32| {
        train
            .as_flat()
            .iter()
            .chain(test.as_flat())
            .all(|x| *x >= lo && *x <= hi)
    };
    if all(0.0, 255.0) {
        ElementType::Uint8
    } else if all(-128.0, 127.0) {
        ElementType::Int8
    } else {
        ElementType::Float32
    }
}

/// Reads a 1-D string dataset whatever string type it was written with.
fn read_strings(ds: &hdf5::Dataset) -> Option<Vec<String>> {
    if let Ok(v) = ds.read_raw::<VarLenUnicode>() {
        return Some(v.iter().map(|s| s.as_str().to_string()).collect());
    }
    if let Ok(v) = ds.read_raw::<VarLenAscii>() {
        return Some(v.iter().map(|s| s.as_str().to_string()).collect());
    }
    if let Ok(v) = ds.read_raw::<FixedUnicode<256>>() {
        return Some(v.iter().map(|s| s.as_str().to_string()).collect());
    }
    if let Ok(v) = ds.read_raw::<FixedAscii<256>>() {
        return Some(v.iter().map(|s| s.as_str().to_string()).collect());
    }
    None
}

/// The `attributes` group: one column per 1-D dataset of `n` values.
fn read_attributes(
    file: &hdf5::File,
    path: &Path,
    n: usize,
) -> Result<Option<Attributes>, DatasetError> {
    let Ok(group) = file.group("attributes") else {
        return Ok(None);
    };
    let names = group
        .member_names()
        .map_err(|e| h5err(path, "listing `attributes`", e))?;
    let mut attributes = Attributes::new(n);
    for name in names {
        let what = format!("attribute `attributes/{name}`");
        let ds = group
            .dataset(&name)
            .map_err(|e| h5err(path, &format!("{what} is not a dataset"), e))?;
        if ds.shape() != [n] {
            return Err(h5err(
                path,
                &what,
                format!(
                    "shape {:?}, expected [{n}] (one value per train row)",
                    ds.shape()
                ),
            ));
        }
        let column = match element_kind(&ds) {
            ElementKind::Integer => Column::Integer(
                ds.read_raw::<i64>()
                    .map_err(|e| h5err(path, &format!("reading {what}"), e))?,
            ),
            ElementKind::Float => {
                return Err(h5err(
                    path,
                    &what,
                    "floats are not attributes: use integers (ranges) or strings (keywords)",
                ));
            }
            ElementKind::Other => {
                let values = read_strings(&ds)
                    .ok_or_else(|| h5err(path, &what, "neither integers nor strings"))?;
                let mut dictionary: Vec<String> = Vec::new();
                let mut index = std::collections::HashMap::new();
                let codes = values
                    .into_iter()
                    .map(|v| {
                        *index.entry(v.clone()).or_insert_with(|| {
                            dictionary.push(v);
                            (dictionary.len() - 1) as u32
                        })
                    })
                    .collect();
                Column::Keyword { dictionary, codes }
            }
        };
        attributes
            .push(&name, column)
            .map_err(|e| h5err(path, &what, e))?;
    }
    Ok(Some(attributes))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ElementKind {
    Integer,
    Float,
    Other,
}

impl ElementKind {
    fn as_str(self) -> &'static str {
        match self {
            ElementKind::Integer => "integers",
            ElementKind::Float => "floating-point values",
            ElementKind::Other => "values that are neither integers nor floats",
        }
    }
}

/// Whether a dataset stores integers of more than 24 significant bits (32- or 64-bit),
/// which f32 may not hold exactly.
fn wide_integers(ds: &hdf5::Dataset) -> bool {
    use hdf5::types::{IntSize, TypeDescriptor};
    matches!(
        ds.dtype().and_then(|t| t.to_descriptor()),
        Ok(TypeDescriptor::Integer(IntSize::U4 | IntSize::U8)
            | TypeDescriptor::Unsigned(IntSize::U4 | IntSize::U8))
    )
}

/// The stored element type of a dataset, as far as the checks here care.
fn element_kind(ds: &hdf5::Dataset) -> ElementKind {
    use hdf5::types::TypeDescriptor;
    match ds.dtype().and_then(|t| t.to_descriptor()) {
        Ok(TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_)) => ElementKind::Integer,
        Ok(TypeDescriptor::Float(_)) => ElementKind::Float,
        _ => ElementKind::Other,
    }
}

/// Lists datasets (name, shape, element type) and root attributes, without reading vectors.
pub fn layout(path: &Path) -> Result<Hdf5Layout, DatasetError> {
    let file = open(path)?;
    let mut datasets = Vec::new();
    for name in file
        .member_names()
        .map_err(|e| h5err(path, "listing members", e))?
    {
        if let Ok(ds) = file.dataset(&name) {
            let dtype = ds
                .dtype()
                .and_then(|t| t.to_descriptor())
                .map(|d| format!("{d}"))
                .unwrap_or_else(|_| "?".into());
            datasets.push((name, ds.shape(), dtype));
        }
    }
    let mut attributes = Vec::new();
    for name in file
        .attr_names()
        .map_err(|e| h5err(path, "listing attributes", e))?
    {
        let value = read_string_attr(&file, &name)
            .or_else(|| {
                file.attr(&name)
                    .ok()
                    .and_then(|a| a.read_scalar::<i64>().ok())
                    .map(|v| v.to_string())
            })
            .unwrap_or_else(|| "?".into());
        attributes.push((name, value));
    }
    Ok(Hdf5Layout {
        datasets,
        attributes,
    })
}
