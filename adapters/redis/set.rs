//! A vector set's settings: quantization, `VADD` options and the vector blob.

/// Vector quantization of a vector set (`VADD` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Quantization {
    NoQuant,
    Q8,
    Bin,
}

impl Quantization {
    pub(super) fn parse(text: &str) -> Option<Quantization> {
        match text.to_ascii_lowercase().as_str() {
            "noquant" => Some(Quantization::NoQuant),
            "q8" => Some(Quantization::Q8),
            "bin" => Some(Quantization::Bin),
            _ => None,
        }
    }

    pub(super) fn option(self) -> &'static str {
        match self {
            Quantization::NoQuant => "NOQUANT",
            Quantization::Q8 => "Q8",
            Quantization::Bin => "BIN",
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Quantization::NoQuant => "noquant",
            Quantization::Q8 => "q8",
            Quantization::Bin => "bin",
        }
    }
}

/// The collection created by [`VectorEngine::create`].
#[derive(Debug, Clone)]
pub(super) struct SetSpec {
    pub(super) key: String,
    pub(super) dim: usize,
    pub(super) quantization: Quantization,
    pub(super) m: Option<u64>,
    pub(super) ef_construction: Option<u64>,
    pub(super) normalize: bool,
    /// The elements' attributes, sent with every `VADD` (`SETATTR`), when the run searches
    /// with filters.
    pub(super) attributes: Option<std::sync::Arc<crate::filter::Attributes>>,
}

impl SetSpec {
    /// Options after the element of every `VADD`. Redis refuses a `VADD` whose quantization
    /// differs from the set's, so every add (bulk load and upserts alike) sends the same.
    pub(super) fn vadd_options(&self, cmd: &mut redis::Cmd) {
        cmd.arg(self.quantization.option());
        if let Some(ef) = self.ef_construction {
            cmd.arg("EF").arg(ef);
        }
        if let Some(m) = self.m {
            cmd.arg("M").arg(m);
        }
    }

    /// Little-endian FP32 blob of one vector (normalised when asked to): far less to send and
    /// parse than `VALUES` with decimal text.
    pub(super) fn blob(&self, v: &[f32]) -> Vec<u8> {
        let scale = if self.normalize {
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            // A zero vector stays zero: there is no direction to keep.
            if norm > 0.0 { 1.0 / norm } else { 1.0 }
        } else {
            1.0
        };
        let mut out = Vec::with_capacity(v.len() * 4);
        for x in v {
            out.extend_from_slice(&(x * scale).to_le_bytes());
        }
        out
    }
}
