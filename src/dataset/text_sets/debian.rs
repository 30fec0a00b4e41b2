//! Debian's package descriptions as known items, from the English translation files apt keeps
//! (`/var/lib/apt/lists/*_i18n_Translation-en*`, read through `apt-helper cat-file`, which
//! undoes any compression apt uses). A machine whose apt is set not to fetch them (Debian's
//! container images set `Acquire::Languages "none"`) gets them with
//! `apt-get update -o Acquire::Languages=en`, which the builder runs when it may.
//!
//! - id and name: the package name;
//! - description (the query): the synopsis, the first line of `Description-en`;
//! - text (the document): the long description after it, paragraphs joined, whitespace
//!   collapsed, cut to its first `words` words.
//!
//! Left out, and counted: a package listed again (in another suite's file: the first is
//! kept) and a package with no long description.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use super::known_item::{Item, Tally};
use super::{TextSetError, normalise};

/// apt's helper that prints a lists file uncompressed, whatever its compression.
const APT_HELPER: &str = "/usr/lib/apt/apt-helper";

/// Where apt's lists are and how much of each description is kept.
#[derive(Debug, Clone)]
pub struct DebianSource {
    pub lists: PathBuf,
    pub words: usize,
}

impl DebianSource {
    /// What `construction.json` says of this source.
    pub fn describe(&self, files: &[PathBuf]) -> Value {
        json!({
            "name": "debian-packages",
            "lists": self.lists,
            "files": files,
            "words": self.words,
        })
    }

    /// The English translation files in the lists directory, by name.
    pub fn files(&self) -> Result<Vec<PathBuf>, TextSetError> {
        let entries =
            std::fs::read_dir(&self.lists).map_err(|e| TextSetError::io(&self.lists, e))?;
        let mut files = Vec::new();
        for entry in entries {
            let path = entry.map_err(|e| TextSetError::io(&self.lists, e))?.path();
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            if name.is_some_and(|n| n.contains("_i18n_Translation-en")) {
                files.push(path);
            }
        }
        files.sort();
        Ok(files)
    }

    /// Every package of `files`, in file order, and what was left out.
    pub fn items(&self, files: &[PathBuf]) -> Result<(Vec<Item>, Tally), TextSetError> {
        let mut items = Vec::new();
        let mut left = Tally::new();
        let mut seen = HashSet::new();
        for path in files {
            let (found, lost) = parse(&read(path)?, self.words);
            for (reason, n) in lost {
                *left.entry(reason).or_default() += n;
            }
            for item in found {
                if seen.insert(item.id.clone()) {
                    items.push(item);
                } else {
                    *left.entry("package listed again").or_default() += 1;
                }
            }
        }
        Ok((items, left))
    }
}

/// Fetches the English descriptions: `apt-get update -o Acquire::Languages=en`.
pub fn fetch() -> Result<(), TextSetError> {
    let status = Command::new("apt-get")
        .args(["update", "-qq", "-o", "Acquire::Languages=en"])
        .status()
        .map_err(|e| TextSetError::Tool(format!("running apt-get: {e}")))?;
    if !status.success() {
        return Err(TextSetError::Tool(format!(
            "`apt-get update -o Acquire::Languages=en` failed ({status}); run it as root, then \
             this command again"
        )));
    }
    Ok(())
}

/// A lists file, uncompressed.
fn read(path: &Path) -> Result<String, TextSetError> {
    let out = Command::new(APT_HELPER)
        .arg("cat-file")
        .arg(path)
        .output()
        .map_err(|e| TextSetError::Tool(format!("running {APT_HELPER}: {e}")))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        return Err(TextSetError::io(
            path,
            std::io::Error::other(format!("apt-helper cat-file: {}", why.trim())),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The packages of one translation file (records separated by blank lines; `Package:` and
/// `Description-en:` with its continuation lines, where ` .` separates paragraphs).
pub fn parse(text: &str, words: usize) -> (Vec<Item>, Tally) {
    let mut items = Vec::new();
    let mut left = Tally::new();
    for record in text.split("\n\n").filter(|r| !r.trim().is_empty()) {
        let mut package = None;
        let mut synopsis = None;
        let mut long = String::new();
        let mut in_description = false;
        for line in record.lines() {
            if let Some(rest) = line.strip_prefix(' ') {
                if in_description && rest.trim() != "." {
                    long.push_str(rest);
                    long.push('\n');
                }
                continue;
            }
            in_description = false;
            if let Some(name) = line.strip_prefix("Package:") {
                package = Some(name.trim());
            } else if let Some(first) = line.strip_prefix("Description-en:") {
                synopsis = Some(first.trim());
                in_description = true;
            }
        }
        let (Some(package), Some(synopsis)) = (package, synopsis) else {
            *left
                .entry("record without package or description")
                .or_default() += 1;
            continue;
        };
        let text = normalise(&long, words);
        if text.is_empty() || synopsis.is_empty() {
            *left.entry("no long description").or_default() += 1;
            continue;
        }
        items.push(Item {
            id: package.to_string(),
            names: vec![package.to_string()],
            description: normalise(synopsis, usize::MAX),
            text,
        });
    }
    (items, left)
}
