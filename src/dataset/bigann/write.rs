//! Writing big-ann-benchmarks' binary files: vector files of any element type (refusing
//! values the type cannot hold), ground-truth files, and a whole dataset directory.

use std::io::{BufWriter, Write};
use std::path::Path;

use super::{CHUNK_BYTES, ElementType, bad};
use crate::atomic::AtomicFile;
use crate::dataset::DatasetError;
use crate::groundtruth::GroundTruth;
use crate::vectors::Vectors;

/// Refuses vectors an integer type cannot hold exactly, naming the first offending
/// component; `what` and `path` name them in the error.
fn check_representable(
    vectors: &Vectors,
    elem: ElementType,
    what: &str,
    path: &Path,
) -> Result<(), DatasetError> {
    if elem == ElementType::Float16 {
        let why = "big-ann vector files hold float32, uint8 or int8 (convert to fbin)";
        return Err(bad(path, format!("cannot write {what} as float16: {why}")));
    }
    let Some((lo, hi)) = elem.integer_range() else {
        return Ok(());
    };
    for (row, v) in vectors.iter().enumerate() {
        if let Some((col, x)) = v
            .iter()
            .enumerate()
            .find(|(_, x)| !(x.fract() == 0.0 && **x >= lo && **x <= hi))
        {
            return Err(bad(
                path,
                format!(
                    "cannot write {what} as {}: vector {row} has {x} at position \
                     {col}, not an integer in {lo}..={hi} (convert to fbin to keep them)",
                    elem.name()
                ),
            ));
        }
    }
    Ok(())
}

fn header_bytes(rows: usize, cols: usize, path: &Path) -> Result<[u8; 8], DatasetError> {
    let as_u32 = |x: usize| {
        u32::try_from(x).map_err(|_| {
            bad(
                path,
                format!("{rows} × {cols} does not fit the format's u32 header"),
            )
        })
    };
    let mut out = [0u8; 8];
    out[..4].copy_from_slice(&as_u32(rows)?.to_le_bytes());
    out[4..].copy_from_slice(&as_u32(cols)?.to_le_bytes());
    Ok(out)
}

/// Writes `parts` after the header `rows, cols` to `path`, atomically.
fn write_file(
    path: &Path,
    header: [u8; 8],
    parts: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), DatasetError> {
    let mut out = AtomicFile::create(path).map_err(|e| DatasetError::io(path, e))?;
    {
        let mut w = BufWriter::with_capacity(CHUNK_BYTES, out.file());
        w.write_all(&header)
            .and_then(|_| parts(&mut w))
            .and_then(|_| w.flush())
            .map_err(|e| DatasetError::io(path, e))?;
    }
    out.commit().map_err(|e| DatasetError::io(path, e))
}

/// Writes `vectors` as a big-ann vector file of `elem` components, atomically. Integer types
/// refuse (before writing anything) a component that is not an integer in their range.
pub fn write_vectors(
    path: &Path,
    vectors: &Vectors,
    elem: ElementType,
) -> Result<(), DatasetError> {
    check_representable(vectors, elem, "these vectors", path)?;
    let header = header_bytes(vectors.len(), vectors.dim(), path)?;
    write_file(path, header, &mut |w| write_components(w, vectors, elem))
}

fn write_components(
    w: &mut dyn Write,
    vectors: &Vectors,
    elem: ElementType,
) -> std::io::Result<()> {
    for x in vectors.as_flat() {
        // Range and integrality were checked: the casts are exact.
        match elem {
            ElementType::Float32 => w.write_all(&x.to_le_bytes())?,
            ElementType::Uint8 => w.write_all(&[*x as u8])?,
            ElementType::Int8 => w.write_all(&(*x as i8).to_le_bytes())?,
            ElementType::Float16 => {
                return Err(std::io::Error::other("big-ann files have no float16 type"));
            }
        }
    }
    Ok(())
}

/// Writes a ground truth in big-ann's layout (`n, k`, int32 ids, float32 distances),
/// atomically.
pub fn write_truth(path: &Path, truth: &GroundTruth) -> Result<(), DatasetError> {
    if let Some(id) = truth.ids.iter().find(|&&id| i32::try_from(id).is_err()) {
        return Err(bad(
            path,
            format!("neighbour id {id} does not fit the format's int32 ids"),
        ));
    }
    let header = header_bytes(truth.queries(), truth.k, path)?;
    write_file(path, header, &mut |w| {
        for id in &truth.ids {
            // Checked above: every id fits an i32.
            w.write_all(&(*id as i32).to_le_bytes())?;
        }
        for d in &truth.distances {
            w.write_all(&d.to_le_bytes())?;
        }
        Ok(())
    })
}

/// File names [`write_dataset`] uses inside its directory.
pub fn dataset_file_names(elem: ElementType) -> [String; 3] {
    [
        format!("base.{}", super::extension(elem)),
        format!("query.{}", super::extension(elem)),
        "gt.ibin".to_string(),
    ]
}

/// Writes a dataset as a big-ann directory at `dir` (`base.<ext>`, `query.<ext>`, `gt.ibin`).
/// Everything is checked first and written into a hidden temporary directory next to `dir`
/// that is renamed into place at the end, so a failure leaves nothing behind. `dir` must not
/// exist, or be an empty directory.
pub fn write_dataset(
    dir: &Path,
    elem: ElementType,
    train: &Vectors,
    test: &Vectors,
    truth: &GroundTruth,
) -> Result<(), DatasetError> {
    check_representable(train, elem, "the base vectors", dir)?;
    check_representable(test, elem, "the query vectors", dir)?;
    if dir.is_file() || std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(bad(
            dir,
            "already exists and is not an empty directory; give a new path".into(),
        ));
    }
    let tmp = crate::atomic::staging_dir(dir).map_err(|e| DatasetError::io(dir, e))?;
    let [base_name, query_name, gt_name] = dataset_file_names(elem);
    write_vectors(&tmp.path().join(base_name), train, elem)?;
    write_vectors(&tmp.path().join(query_name), test, elem)?;
    write_truth(&tmp.path().join(gt_name), truth)?;
    // Dropped on error before this point, the temporary directory is removed.
    let kept = tmp.keep();
    std::fs::rename(&kept, dir).map_err(|e| {
        let _ = std::fs::remove_dir_all(&kept);
        DatasetError::io(dir, e)
    })
}
