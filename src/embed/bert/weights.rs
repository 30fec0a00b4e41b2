//! The encoder's tensors, read from `model.safetensors` by their Hugging Face names
//! (`embeddings.word_embeddings.weight`, `encoder.layer.0.attention.self.query.weight`, ...),
//! with or without the `bert.` prefix of a checkpoint saved with a task head, and with the
//! `gamma`/`beta` names of older layer norms. F32, F16 and BF16 tensors are read as f32.

use std::path::{Path, PathBuf};

use safetensors::{Dtype, SafeTensors};

use super::super::EmbedError;

/// A safetensors file, parsed, and the prefix its BERT tensors carry.
pub struct Tensors<'a> {
    file: SafeTensors<'a>,
    prefix: &'static str,
    path: PathBuf,
}

impl<'a> Tensors<'a> {
    /// Parses the bytes of `path`.
    pub fn parse(bytes: &'a [u8], path: &Path) -> Result<Tensors<'a>, EmbedError> {
        let file = SafeTensors::deserialize(bytes)
            .map_err(|e| EmbedError::file(path, format!("not a safetensors file: {e}")))?;
        let prefix = if file
            .names()
            .iter()
            .any(|n| n.starts_with("bert.embeddings."))
        {
            "bert."
        } else {
            ""
        };
        Ok(Tensors {
            file,
            prefix,
            path: path.to_path_buf(),
        })
    }

    /// The tensor `name` as f32, checked to have `shape`.
    pub fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EmbedError> {
        let full = format!("{}{name}", self.prefix);
        let view = self.file.tensor(&full).map_err(|_| {
            EmbedError::file(
                &self.path,
                format!("no tensor `{full}` (not a BERT model?)"),
            )
        })?;
        if view.shape() != shape {
            return Err(EmbedError::file(
                &self.path,
                format!(
                    "tensor `{full}` has shape {:?}; config.json implies {shape:?}",
                    view.shape()
                ),
            ));
        }
        let data = view.data();
        Ok(match view.dtype() {
            Dtype::F32 => data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Dtype::F16 => data
                .chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            Dtype::BF16 => data
                .chunks_exact(2)
                .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            other => {
                return Err(EmbedError::file(
                    &self.path,
                    format!("tensor `{full}` is {other:?}; only F32, F16 and BF16 are read"),
                ));
            }
        })
    }

    /// A layer norm's scale and shift (`weight`/`bias`, or the older `gamma`/`beta`).
    pub fn norm(&self, at: &str, dim: usize) -> Result<(Vec<f32>, Vec<f32>), EmbedError> {
        let has = |n: &str| {
            self.file
                .names()
                .iter()
                .any(|x| *x == format!("{}{at}.{n}", self.prefix))
        };
        let (w, b) = if !has("weight") && has("gamma") {
            ("gamma", "beta")
        } else {
            ("weight", "bias")
        };
        Ok((
            self.get(&format!("{at}.{w}"), &[dim])?,
            self.get(&format!("{at}.{b}"), &[dim])?,
        ))
    }

    /// A dense layer's weight (`[outputs, inputs]`, as torch stores it) transposed to
    /// `[inputs, outputs]` row-major, and its bias.
    pub fn linear(
        &self,
        at: &str,
        inputs: usize,
        outputs: usize,
    ) -> Result<(Vec<f32>, Vec<f32>), EmbedError> {
        let w = self.get(&format!("{at}.weight"), &[outputs, inputs])?;
        let mut t = vec![0f32; w.len()];
        for (o, row) in w.chunks_exact(inputs).enumerate() {
            for (i, v) in row.iter().enumerate() {
                t[i * outputs + o] = *v;
            }
        }
        Ok((t, self.get(&format!("{at}.bias"), &[outputs])?))
    }
}
