//! Writing the ann-benchmarks HDF5 layout: the vectors first (with O_DIRECT where they are
//! large), the ground truth when it is known, into a temporary file renamed into place.

use std::path::Path;

use hdf5::types::VarLenUnicode;

use super::super::DatasetError;
use super::super::direct_write::{self, DIRECT_ALIGN};
use super::h5err;
use crate::atomic::AtomicFile;
use crate::distance::Distance;
use crate::groundtruth::GroundTruth;
use crate::vectors::Vectors;

/// Writes the ann-benchmarks layout (neighbors as int64, distances as float32), to a
/// temporary file renamed into place so a crash never leaves half a dataset.
pub fn write(
    path: &Path,
    distance: Distance,
    train: &Vectors,
    test: &Vectors,
    gt: &GroundTruth,
) -> Result<(), DatasetError> {
    begin_write(path, distance, train, test)?.finish(gt)
}

/// An ann-benchmarks file whose vectors are written and on their way to disk, waiting for
/// its ground truth: `dataset gt` writes the vectors while the truth is computed, so that
/// neither the copy nor the disk's flush of the largest part of the file adds to its time.
/// Dropped without [`PendingWrite::finish`], the temporary file vanishes.
pub struct PendingWrite {
    path: std::path::PathBuf,
    tmp: AtomicFile,
    file: hdf5::File,
}

/// Creates the temporary file of [`write`] with its attributes, `train` and `test`, and
/// flushes them to disk (the final flush then has only the ground truth left to write).
pub fn begin_write(
    path: &Path,
    distance: Distance,
    train: &Vectors,
    test: &Vectors,
) -> Result<PendingWrite, DatasetError> {
    hdf5::silence_errors(true);
    let mut tmp = AtomicFile::create(path).map_err(|e| DatasetError::io(path, e))?;
    let err = |what: &str, e: hdf5::Error| h5err(path, what, e);
    // Large objects start on a block boundary, so that `train` can be written with O_DIRECT.
    let file = hdf5::File::with_options()
        .with_fapl(|p| {
            p.file_locking(false)
                .alignment(DIRECT_MIN_BYTES as u64, DIRECT_ALIGN as u64)
        })
        .create(tmp.temp_path())
        .map_err(|e| err("creating", e))?;
    let put_str = |name: &str, value: &str| -> Result<(), DatasetError> {
        let v: VarLenUnicode = value
            .parse()
            .map_err(|e| h5err(path, "string attribute", e))?;
        file.new_attr::<VarLenUnicode>()
            .shape(())
            .create(name)
            .and_then(|a| a.write_scalar(&v))
            .map_err(|e| err(name, e))
    };
    put_str("distance", distance.as_str())?;
    put_str("point_type", "float")?;
    file.new_attr::<i64>()
        .shape(())
        .create("dimension")
        .and_then(|a| a.write_scalar(&(train.dim() as i64)))
        .map_err(|e| err("dimension", e))?;
    let put = |name: &str, rows: usize, cols: usize, data: &[f32]| {
        file.new_dataset::<f32>()
            .shape([rows, cols])
            .create(name)
            .and_then(|d| d.write_raw(data))
            .map_err(|e| err(name, e))
    };
    if train.byte_len() >= DIRECT_MIN_BYTES {
        put_direct(&file, tmp.temp_path(), path, "train", train)?;
    } else {
        put("train", train.len(), train.dim(), train.as_flat())?;
    }
    put("test", test.len(), test.dim(), test.as_flat())?;
    file.flush().map_err(|e| err("flushing", e))?;
    tmp.file()
        .sync_data()
        .map_err(|e| DatasetError::io(path, e))?;
    Ok(PendingWrite {
        path: path.to_path_buf(),
        tmp,
        file,
    })
}

/// Vector datasets at least this large are written with O_DIRECT (see `direct_write`).
const DIRECT_MIN_BYTES: usize = 8 << 20;

/// Writes `vectors` (at least [`DIRECT_MIN_BYTES`]) as the float dataset `name`: contiguous
/// storage allocated up front and filled with O_DIRECT behind HDF5's back (HDF5 never writes
/// or caches that raw data: no fill value, no chunk cache); where the file system refuses
/// O_DIRECT, through HDF5.
fn put_direct(
    file: &hdf5::File,
    temp: &Path,
    path: &Path,
    name: &str,
    vectors: &Vectors,
) -> Result<(), DatasetError> {
    let err = |what: &str, e: hdf5::Error| h5err(path, what, e);
    let dataset = file
        .new_dataset::<f32>()
        .shape([vectors.len(), vectors.dim()])
        .no_chunk()
        .alloc_time(Some(hdf5::plist::dataset_create::AllocTime::Early))
        .fill_time(hdf5::plist::dataset_create::FillTime::Never)
        .create(name)
        .map_err(|e| err(name, e))?;
    if let Some(offset) = dataset.offset() {
        // HDF5's own buffers hold nothing of the file yet that the direct write could
        // contradict; flushed, its metadata is on the file before the data goes around it.
        // (The dataset's file type is the native float, so the rows' little-endian bytes are
        // exactly what HDF5 would write.)
        file.flush().map_err(|e| err("flushing", e))?;
        let written = direct_write::write_at(temp, offset, vectors.byte_len(), |start, out| {
            vectors.copy_bytes(start, out)
        })
        .map_err(|e| DatasetError::io(path, e))?;
        if written {
            return Ok(());
        }
    }
    dataset
        .write_raw(vectors.as_flat())
        .map_err(|e| err(name, e))
}

impl PendingWrite {
    /// Adds `distances` and `neighbors`, closes the file and renames it into place.
    pub fn finish(self, gt: &GroundTruth) -> Result<(), DatasetError> {
        let PendingWrite { path, tmp, file } = self;
        let err = |what: &str, e: hdf5::Error| h5err(&path, what, e);
        file.new_dataset::<f32>()
            .shape([gt.queries(), gt.k])
            .create("distances")
            .and_then(|d| d.write_raw(&gt.distances))
            .map_err(|e| err("distances", e))?;
        let ids: Vec<i64> = gt.ids.iter().map(|&i| i as i64).collect();
        file.new_dataset::<i64>()
            .shape([gt.queries(), gt.k])
            .create("neighbors")
            .and_then(|d| d.write_raw(&ids))
            .map_err(|e| err("neighbors", e))?;
        file.close().map_err(|e| err("closing", e))?;
        tmp.commit().map_err(|e| DatasetError::io(&path, e))
    }
}
