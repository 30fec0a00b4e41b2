//! The BERT encoder of a sentence-transformers model, run on the CPU: embeddings, then per
//! layer self-attention and the feed-forward block, each followed by its residual and layer
//! norm, exactly as Hugging Face's `BertModel` computes the last hidden states.
//!
//! Why not a tensor library: the work is a handful of matrix products per layer, and the rest
//! (bias, GELU, layer norm, softmax) is where a general library's cost goes at these sizes (an
//! allocation and a pass over memory per operation: candle's BERT reached 0.45× the
//! sentence-transformers throughput on this model). Here the sequences of a batch are packed
//! end to end without padding, every buffer is reused across batches, each row-wise step is one
//! pass, and attention reads only a sequence's own tokens. The products are the `gemm`
//! crate's.
//!
//! One call encodes one batch on the calling thread; callers run batches in parallel.

mod kernels;
mod weights;

use std::path::Path;

use serde::Deserialize;

use super::EmbedError;
use kernels::{Activation, Rhs, add_bias, bias_activation, bias_layer_norm, matmul, softmax_rows};
use weights::Tensors;

/// The fields of a BERT `config.json` the encoder uses.
#[derive(Debug, Clone, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub hidden_act: String,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
    #[serde(default)]
    pub pad_token_id: usize,
    #[serde(default)]
    pub position_embedding_type: Option<String>,
    #[serde(default)]
    pub model_type: Option<String>,
}

/// A dense layer: `[inputs, outputs]` row-major weight, and its bias.
struct Dense {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

/// One encoder layer; query, key and value are one `[H, 3H]` product.
struct Layer {
    qkv: Dense,
    attention_out: Dense,
    attention_norm: Norm,
    up: Dense,
    down: Dense,
    out_norm: Norm,
}

/// A loaded encoder.
pub struct Bert {
    config: BertConfig,
    activation: Activation,
    /// `[vocab, H]`, `[max_positions, H]`, and token type 0's row `[H]`.
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

/// The buffers of one batch, kept between batches by the thread that runs them.
#[derive(Default)]
pub struct Scratch {
    /// Hidden states `[tokens, H]`: the output of [`Bert::encode`].
    states: Vec<f32>,
    qkv: Vec<f32>,
    context: Vec<f32>,
    intermediate: Vec<f32>,
    scores: Vec<f32>,
}

impl Bert {
    /// Reads `config.json` and `model.safetensors` of the transformer folder `dir`.
    pub fn load(dir: &Path) -> Result<Bert, EmbedError> {
        let config_path = dir.join("config.json");
        let text = crate::text::read_to_string(&config_path)
            .map_err(|e| EmbedError::file(&config_path, e))?;
        let config: BertConfig = serde_json::from_str(&text).map_err(|e| {
            EmbedError::file(&config_path, format!("not a BERT configuration: {e}"))
        })?;
        let activation = check(&config, &config_path)?;
        let weights_path = dir.join("model.safetensors");
        let bytes = std::fs::read(&weights_path).map_err(|e| EmbedError::file(&weights_path, e))?;
        let t = Tensors::parse(&bytes, &weights_path)?;
        let (h, i) = (config.hidden_size, config.intermediate_size);
        let token_types = t.get(
            "embeddings.token_type_embeddings.weight",
            &[config.type_vocab_size, h],
        )?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for l in 0..config.num_hidden_layers {
            layers.push(load_layer(&t, &format!("encoder.layer.{l}"), h, i)?);
        }
        let (gamma, beta) = t.norm("embeddings.LayerNorm", h)?;
        Ok(Bert {
            word: t.get("embeddings.word_embeddings.weight", &[config.vocab_size, h])?,
            position: t.get(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, h],
            )?,
            token_type: token_types[..h].to_vec(),
            embedding_norm: Norm { gamma, beta },
            layers,
            activation,
            config,
        })
    }

    pub fn config(&self) -> &BertConfig {
        &self.config
    }

    /// The last hidden states of `seqs` (token ids, special tokens included, each at most
    /// `max_position_embeddings` long), packed: `[Σ len, H]`, sequence after sequence.
    pub fn encode<'s>(
        &self,
        seqs: &[&[u32]],
        scratch: &'s mut Scratch,
    ) -> Result<&'s [f32], EmbedError> {
        let h = self.config.hidden_size;
        let tokens: usize = seqs.iter().map(|s| s.len()).sum();
        let longest = seqs.iter().map(|s| s.len()).max().unwrap_or(0);
        if longest > self.config.max_position_embeddings {
            return Err(EmbedError::Model(format!(
                "a sequence of {longest} tokens is longer than the model's {} positions",
                self.config.max_position_embeddings
            )));
        }
        self.embed(seqs, &mut scratch.states)?;
        scratch.qkv.resize(tokens * 3 * h, 0.0);
        scratch.context.resize(tokens * h, 0.0);
        scratch
            .intermediate
            .resize(tokens * self.config.intermediate_size, 0.0);
        scratch.scores.resize(longest * longest, 0.0);
        for layer in &self.layers {
            self.layer(layer, seqs, scratch);
        }
        Ok(&scratch.states[..tokens * h])
    }

    /// Word + position + token-type embeddings, layer-normalised, into `states`.
    fn embed(&self, seqs: &[&[u32]], states: &mut Vec<f32>) -> Result<(), EmbedError> {
        let h = self.config.hidden_size;
        states.clear();
        for seq in seqs {
            for (pos, &id) in seq.iter().enumerate() {
                let id = id as usize;
                if id >= self.config.vocab_size {
                    return Err(EmbedError::Model(format!(
                        "token id {id} is outside the vocabulary of {}",
                        self.config.vocab_size
                    )));
                }
                let word = &self.word[id * h..(id + 1) * h];
                let position = &self.position[pos * h..(pos + 1) * h];
                states.extend(
                    word.iter()
                        .zip(position)
                        .zip(&self.token_type)
                        .map(|((w, p), t)| w + p + t),
                );
            }
        }
        let zero = vec![0f32; h];
        let n = &self.embedding_norm;
        bias_layer_norm(states, &zero, &n.gamma, &n.beta, self.eps());
        Ok(())
    }

    fn eps(&self) -> f32 {
        self.config.layer_norm_eps as f32
    }

    /// One encoder layer over the packed states, in place.
    fn layer(&self, layer: &Layer, seqs: &[&[u32]], s: &mut Scratch) {
        let h = self.config.hidden_size;
        let inter = self.config.intermediate_size;
        let tokens = s.context.len() / h;
        let states = &mut s.states[..tokens * h];
        dense(&mut s.qkv, states, &layer.qkv, (tokens, h, 3 * h), false);
        add_bias(&mut s.qkv, &layer.qkv.bias);
        self.attention(seqs, &s.qkv, &mut s.context, &mut s.scores);
        // states += context · W_o, then LayerNorm(states + b_o).
        dense(
            states,
            &s.context,
            &layer.attention_out,
            (tokens, h, h),
            true,
        );
        let n = &layer.attention_norm;
        bias_layer_norm(
            states,
            &layer.attention_out.bias,
            &n.gamma,
            &n.beta,
            self.eps(),
        );
        dense(
            &mut s.intermediate,
            states,
            &layer.up,
            (tokens, h, inter),
            false,
        );
        bias_activation(&mut s.intermediate, &layer.up.bias, self.activation);
        dense(
            states,
            &s.intermediate,
            &layer.down,
            (tokens, inter, h),
            true,
        );
        let n = &layer.out_norm;
        bias_layer_norm(states, &layer.down.bias, &n.gamma, &n.beta, self.eps());
    }

    /// Multi-head self-attention of each sequence over its own tokens: `context` gets, per
    /// head, `softmax(Q Kᵀ / √d) V`.
    fn attention(&self, seqs: &[&[u32]], qkv: &[f32], context: &mut [f32], scores: &mut [f32]) {
        let h = self.config.hidden_size;
        let heads = self.config.num_attention_heads;
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        let mut start = 0;
        for seq in seqs {
            let len = seq.len();
            let rows = &qkv[start * 3 * h..(start + len) * 3 * h];
            let out = &mut context[start * h..(start + len) * h];
            let sc = &mut scores[..len * len];
            for head in 0..heads {
                let q = &rows[head * d..];
                let k = &rows[h + head * d..];
                let v = &rows[2 * h + head * d..];
                let keys = Rhs::Transposed { data: k, ld: 3 * h };
                matmul(sc, len, q, 3 * h, keys, (len, len, d), scale, false);
                softmax_rows(sc, len);
                let values = Rhs::Rows { data: v, ld: 3 * h };
                matmul(
                    &mut out[head * d..],
                    h,
                    sc,
                    len,
                    values,
                    (len, d, len),
                    1.0,
                    false,
                );
            }
            start += len;
        }
    }
}

/// `out[rows × outputs] (+= when accumulate) = input[rows × inputs] · weight`; the bias is
/// added by the row step that follows.
fn dense(
    out: &mut [f32],
    input: &[f32],
    layer: &Dense,
    (rows, inputs, outputs): (usize, usize, usize),
    accumulate: bool,
) {
    let weight = Rhs::Rows {
        data: &layer.weight,
        ld: outputs,
    };
    matmul(
        out,
        outputs,
        input,
        inputs,
        weight,
        (rows, outputs, inputs),
        1.0,
        accumulate,
    );
}

fn load_layer(t: &Tensors<'_>, at: &str, h: usize, i: usize) -> Result<Layer, EmbedError> {
    let [q, k, v] = ["query", "key", "value"]
        .map(|part| t.linear(&format!("{at}.attention.self.{part}"), h, h));
    let (q, k, v) = (q?, k?, v?);
    // [H, 3H]: each input row holds its query, key and value outputs side by side.
    let mut weight = Vec::with_capacity(3 * h * h);
    for r in 0..h {
        for part in [&q.0, &k.0, &v.0] {
            weight.extend_from_slice(&part[r * h..(r + 1) * h]);
        }
    }
    let bias = [q.1, k.1, v.1].concat();
    let (w, b) = t.linear(&format!("{at}.attention.output.dense"), h, h)?;
    let (g1, b1) = t.norm(&format!("{at}.attention.output.LayerNorm"), h)?;
    let (uw, ub) = t.linear(&format!("{at}.intermediate.dense"), h, i)?;
    let (dw, db) = t.linear(&format!("{at}.output.dense"), i, h)?;
    let (g2, b2) = t.norm(&format!("{at}.output.LayerNorm"), h)?;
    Ok(Layer {
        qkv: Dense { weight, bias },
        attention_out: Dense { weight: w, bias: b },
        attention_norm: Norm {
            gamma: g1,
            beta: b1,
        },
        up: Dense {
            weight: uw,
            bias: ub,
        },
        down: Dense {
            weight: dw,
            bias: db,
        },
        out_norm: Norm {
            gamma: g2,
            beta: b2,
        },
    })
}

/// The activation `config` names, after checking it is a BERT this encoder computes.
fn check(config: &BertConfig, path: &Path) -> Result<Activation, EmbedError> {
    let unsupported = |what: String| EmbedError::file(path, what);
    if let Some(kind) = config.model_type.as_deref().filter(|k| *k != "bert") {
        return Err(unsupported(format!(
            "model_type `{kind}`: only BERT encoders are implemented"
        )));
    }
    if let Some(p) = config
        .position_embedding_type
        .as_deref()
        .filter(|p| *p != "absolute")
    {
        return Err(unsupported(format!(
            "position_embedding_type `{p}`: only absolute positions are implemented"
        )));
    }
    let heads = config.num_attention_heads;
    if heads == 0 || !config.hidden_size.is_multiple_of(heads) {
        return Err(unsupported(format!(
            "hidden_size {} is not a multiple of num_attention_heads {heads}",
            config.hidden_size
        )));
    }
    if config.type_vocab_size == 0 {
        return Err(unsupported("type_vocab_size is 0: no token type 0".into()));
    }
    match config.hidden_act.as_str() {
        "gelu" => Ok(Activation::Gelu),
        "gelu_new" | "gelu_pytorch_tanh" => Ok(Activation::GeluTanh),
        "relu" => Ok(Activation::Relu),
        other => Err(unsupported(format!(
            "hidden_act `{other}` is not implemented (gelu, gelu_new, relu)"
        ))),
    }
}
