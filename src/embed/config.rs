//! A sentence-transformers model folder's configuration: `modules.json` (which modules run,
//! in order), the pooling module's `config.json`, and `sentence_bert_config.json`
//! (`max_seq_length`, `do_lower_case`). The modules implemented are a BERT `Transformer`, a
//! `Pooling` by mean or by the CLS token, and `Normalize`; any other module or pooling mode is
//! refused by name rather than embedded differently from sentence-transformers.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::EmbedError;
use super::pooling::Pooling;

/// What the folder says about how to turn token states into one sentence vector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentenceConfig {
    /// Where the transformer's files (`config.json`, `model.safetensors`, `tokenizer.json`) are.
    pub transformer_dir: PathBuf,
    pub pooling: Pooling,
    /// L2-normalise the pooled vector (a `Normalize` module follows the pooling).
    pub normalize: bool,
    /// Tokens the transformer reads, special tokens included (sentence-transformers
    /// truncates to this); `None` when the folder does not say.
    pub max_seq_length: Option<usize>,
    /// Lower-case the text before tokenising.
    pub do_lower_case: bool,
}

fn read_json(path: &Path) -> Result<Value, EmbedError> {
    let text = crate::text::read_to_string(path).map_err(|e| EmbedError::file(path, e))?;
    serde_json::from_str(&text).map_err(|e| EmbedError::file(path, format!("not JSON: {e}")))
}

/// Reads the configuration of the sentence-transformers folder `dir`.
pub fn read(dir: &Path) -> Result<SentenceConfig, EmbedError> {
    let modules_path = dir.join("modules.json");
    let modules = read_json(&modules_path)?;
    let Some(modules) = modules.as_array() else {
        return Err(EmbedError::file(
            &modules_path,
            "not a JSON list of modules",
        ));
    };
    let mut transformer_dir = None;
    let mut pooling = None;
    let mut normalize = false;
    for module in modules {
        let kind = module.get("type").and_then(Value::as_str).unwrap_or("");
        let sub = dir.join(module.get("path").and_then(Value::as_str).unwrap_or(""));
        match kind.rsplit('.').next().unwrap_or("") {
            "Transformer" if transformer_dir.is_none() && pooling.is_none() => {
                transformer_dir = Some(sub)
            }
            "Pooling" if transformer_dir.is_some() && pooling.is_none() => {
                pooling = Some(read_pooling(&sub.join("config.json"))?)
            }
            "Normalize" if pooling.is_some() && !normalize => normalize = true,
            _ => {
                return Err(EmbedError::Unsupported(format!(
                    "{}: module `{kind}` at this place is not implemented (only Transformer, \
                     Pooling, Normalize, in that order)",
                    modules_path.display()
                )));
            }
        }
    }
    let (Some(transformer_dir), Some(pooling)) = (transformer_dir, pooling) else {
        return Err(EmbedError::Unsupported(format!(
            "{}: needs a Transformer and a Pooling module",
            modules_path.display()
        )));
    };
    let (max_seq_length, do_lower_case) = read_sbert(&dir.join("sentence_bert_config.json"))?;
    Ok(SentenceConfig {
        transformer_dir,
        pooling,
        normalize,
        max_seq_length,
        do_lower_case,
    })
}

/// The pooling of `1_Pooling/config.json`: exactly one mode set, and one implemented.
fn read_pooling(path: &Path) -> Result<Pooling, EmbedError> {
    let config = read_json(path)?;
    let Some(fields) = config.as_object() else {
        return Err(EmbedError::file(path, "not a JSON object"));
    };
    let modes: Vec<&str> = fields
        .iter()
        .filter(|(name, value)| name.starts_with("pooling_mode_") && value.as_bool() == Some(true))
        .map(|(name, _)| name.as_str())
        .collect();
    match modes[..] {
        ["pooling_mode_mean_tokens"] => Ok(Pooling::Mean),
        ["pooling_mode_cls_token"] => Ok(Pooling::Cls),
        _ => Err(EmbedError::Unsupported(format!(
            "{}: pooling {} is not implemented (mean tokens or CLS token, one of them)",
            path.display(),
            if modes.is_empty() {
                "none".to_string()
            } else {
                modes.join(" + ")
            }
        ))),
    }
}

/// `max_seq_length` and `do_lower_case` of `sentence_bert_config.json`, if the file exists.
fn read_sbert(path: &Path) -> Result<(Option<usize>, bool), EmbedError> {
    if !path.exists() {
        return Ok((None, false));
    }
    let config = read_json(path)?;
    let max = match config.get("max_seq_length") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().filter(|&n| n >= 3).ok_or_else(|| {
            EmbedError::file(path, "max_seq_length is not a whole number of at least 3")
        })? as usize),
    };
    let lower = config
        .get("do_lower_case")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok((max, lower))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULES: &str = r#"[
      {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
      {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
      {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
    ]"#;

    fn folder(modules: &str, pooling: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("modules.json"), modules).unwrap();
        std::fs::create_dir(dir.path().join("1_Pooling")).unwrap();
        std::fs::write(dir.path().join("1_Pooling/config.json"), pooling).unwrap();
        std::fs::write(
            dir.path().join("sentence_bert_config.json"),
            r#"{"max_seq_length": 256, "do_lower_case": false}"#,
        )
        .unwrap();
        dir
    }

    #[test]
    fn minilm_s_folder_is_mean_pooling_then_normalisation() {
        let dir = folder(
            MODULES,
            r#"{"word_embedding_dimension": 384, "pooling_mode_cls_token": false,
                "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false,
                "pooling_mode_mean_sqrt_len_tokens": false}"#,
        );
        let config = read(dir.path()).unwrap();
        assert_eq!(config.pooling, Pooling::Mean);
        assert!(config.normalize);
        assert_eq!(config.max_seq_length, Some(256));
        assert!(!config.do_lower_case);
        assert_eq!(config.transformer_dir, dir.path().join(""));
    }

    #[test]
    fn unimplemented_pooling_and_modules_are_refused_by_name() {
        let dir = folder(MODULES, r#"{"pooling_mode_max_tokens": true}"#);
        let err = read(dir.path()).unwrap_err().to_string();
        assert!(
            err.ends_with("pooling pooling_mode_max_tokens is not implemented (mean tokens or CLS token, one of them)"),
            "{err}"
        );
        let dense = MODULES.replace("models.Normalize", "models.Dense");
        let dir = folder(&dense, r#"{"pooling_mode_mean_tokens": true}"#);
        let err = read(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("module `sentence_transformers.models.Dense`"),
            "{err}"
        );
    }
}
