//! Man pages as known items: every page file of the chosen sections of a man directory
//! (`/usr/share/man/man1`, ...), rendered by groff as `man` renders it for a terminal
//! (`groff -k -t -mandoc -Tutf8`, without bold, underline or colour, on 1000-en lines so that
//! a paragraph is one line).
//!
//! - id: the file name without `.gz` (`ls.1`); names: the file's stem and the names before the
//!   dash of the NAME section (`gcc, g++ - GNU project C and C++ compiler`);
//! - description (the query): the NAME section after the dash;
//! - text (the document): the DESCRIPTION section, else every section after NAME and
//!   SYNOPSIS; whitespace collapsed, typographic quotes and dashes made ASCII, cut to its first
//!   `words` words.
//!
//! Left out, and counted: symbolic links (an alias of a page, or a page kept elsewhere),
//! `.so` redirects (a page that includes another), pages with no NAME line of the form
//! `names - description`, and pages whose text is empty.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use serde_json::{Value, json};

use super::known_item::{Item, Tally};
use super::{TextSetError, normalise};
use crate::types::ProgressTask;

/// The groff command line that renders one page from standard input.
pub const GROFF_ARGS: [&str; 6] = ["-k", "-t", "-mandoc", "-Tutf8", "-P-cbou", "-rLL=1000n"];

/// Where the pages are and how much of each is kept.
#[derive(Debug, Clone)]
pub struct ManSource {
    /// A man directory holding `man<section>` folders.
    pub dir: PathBuf,
    /// Sections to read (`1`, `8`, ...), in this order.
    pub sections: Vec<String>,
    /// Words of a page's text kept in its document.
    pub words: usize,
}

/// What became of one page file.
enum Page {
    Item(Item),
    LeftOut(&'static str),
}

impl ManSource {
    /// What `construction.json` says of this source.
    pub fn describe(&self, groff_version: &str) -> Value {
        json!({
            "name": "manpages",
            "dir": self.dir,
            "sections": self.sections,
            "words": self.words,
            "render": format!("groff {}", GROFF_ARGS.join(" ")),
            "groff": groff_version,
        })
    }

    /// The page files, in section order then by name, and the links left out.
    pub fn files(&self) -> Result<(Vec<PathBuf>, Tally), TextSetError> {
        let mut files = Vec::new();
        let mut left = Tally::new();
        for section in &self.sections {
            let dir = self.dir.join(format!("man{section}"));
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(TextSetError::io(&dir, e)),
            };
            let mut here = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|e| TextSetError::io(&dir, e))?;
                let kind = entry
                    .file_type()
                    .map_err(|e| TextSetError::io(entry.path(), e))?;
                if kind.is_symlink() {
                    *left.entry("symbolic link").or_default() += 1;
                } else if kind.is_file() {
                    here.push(entry.path());
                }
            }
            here.sort();
            files.extend(here);
        }
        Ok((files, left))
    }

    /// Every page rendered and read (on all cores), in file order, and what was left out.
    pub fn items(
        &self,
        files: &[PathBuf],
        progress: &dyn ProgressTask,
    ) -> Result<(Vec<Item>, Tally), TextSetError> {
        let done = AtomicU64::new(0);
        let pages: Vec<Page> = files
            .par_iter()
            .map(|path| {
                let page = self.page(path);
                progress.set(done.fetch_add(1, Ordering::Relaxed) + 1);
                page
            })
            .collect::<Result<_, _>>()?;
        let mut items = Vec::new();
        let mut left = Tally::new();
        for page in pages {
            match page {
                Page::Item(item) => items.push(item),
                Page::LeftOut(reason) => *left.entry(reason).or_default() += 1,
            }
        }
        Ok((items, left))
    }

    /// One page file: read, rendered and parsed.
    fn page(&self, path: &Path) -> Result<Page, TextSetError> {
        let source = read_source(path)?;
        if source.starts_with(b".so ") {
            return Ok(Page::LeftOut("`.so` redirect"));
        }
        let rendered = render(&source).map_err(|e| TextSetError::io(path, e))?;
        let id = page_id(path);
        Ok(match parse(&rendered, self.words) {
            Err(reason) => Page::LeftOut(reason),
            Ok((mut names, description, text)) => {
                let stem = id.rsplit_once('.').map_or(id.as_str(), |(s, _)| s);
                if !names.iter().any(|n| n == stem) {
                    names.push(stem.to_string());
                }
                Page::Item(Item {
                    id,
                    names,
                    description,
                    text,
                })
            }
        })
    }
}

/// The page's id: its file name without `.gz`.
fn page_id(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.strip_suffix(".gz").map(str::to_string).unwrap_or(name)
}

/// The page's roff source, gunzipped when its name ends in `.gz`.
fn read_source(path: &Path) -> Result<Vec<u8>, TextSetError> {
    let raw = std::fs::read(path).map_err(|e| TextSetError::io(path, e))?;
    if path.extension().is_none_or(|e| e != "gz") {
        return Ok(raw);
    }
    let mut out = Vec::with_capacity(raw.len() * 4);
    flate2::read::GzDecoder::new(raw.as_slice())
        .read_to_end(&mut out)
        .map_err(|e| TextSetError::io(path, e))?;
    Ok(out)
}

/// The page rendered by groff (its warnings are dropped: many pages have some).
fn render(source: &[u8]) -> std::io::Result<String> {
    let mut child = Command::new("groff")
        .args(GROFF_ARGS)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child.stdin.take();
    let output = std::thread::scope(|s| {
        // Written from another thread: groff may fill its output pipe before it has read all.
        let writer = s.spawn(move || stdin.as_mut().map(|w| w.write_all(source)));
        let output = child.wait_with_output();
        let _ = writer.join();
        output
    })?;
    if !output.status.success() {
        return Err(std::io::Error::other(format!(
            "groff failed ({})",
            output.status
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The version line of the groff on the PATH; when there is none, Debian's `groff-base` is
/// installed with apt first (as root, or through sudo), as the builder's other tools are.
pub fn groff_version() -> Result<String, TextSetError> {
    match installed_groff() {
        Ok(version) => Ok(version),
        Err(why) if Path::new("/usr/bin/apt-get").exists() => {
            eprintln!(
                "groff is needed to render the man pages ({why}): installing groff-base with apt-get"
            );
            install_groff_base()?;
            installed_groff().map_err(missing_groff)
        }
        Err(why) => Err(missing_groff(why)),
    }
}

fn missing_groff(why: String) -> TextSetError {
    TextSetError::Tool(format!(
        "groff is needed to render the man pages ({why}); install it (Debian: `apt-get install \
         groff-base`)"
    ))
}

/// `groff --version`'s first line, or why it did not answer.
fn installed_groff() -> Result<String, String> {
    let out = Command::new("groff")
        .arg("--version")
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text.lines().next() {
        Some(line) if out.status.success() => Ok(line.trim().to_string()),
        _ => Err(format!("`groff --version` exited with {}", out.status)),
    }
}

/// `apt-get install -y groff-base`, through sudo unless running as root.
fn install_groff_base() -> Result<(), TextSetError> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let mut cmd = if root {
        Command::new("apt-get")
    } else {
        let mut sudo = Command::new("sudo");
        sudo.arg("apt-get");
        sudo
    };
    let status = cmd
        .args(["install", "-y", "-qq", "groff-base"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .map_err(|e| missing_groff(format!("running apt-get: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(missing_groff(format!(
            "`apt-get install groff-base` failed ({status})"
        )))
    }
}

/// Names, description and text of a rendered page, or why it has none.
pub fn parse(rendered: &str, words: usize) -> Result<(Vec<String>, String, String), &'static str> {
    let sections = sections(rendered);
    let name = sections
        .iter()
        .find(|(h, _)| h == "NAME")
        .map(|(_, body)| normalise(body, usize::MAX))
        .ok_or("no NAME section")?;
    let (names, description) = split_name(&name).ok_or("no `names - description` in NAME")?;
    let body = match sections.iter().find(|(h, _)| h == "DESCRIPTION") {
        Some((_, body)) => body.clone(),
        None => sections
            .iter()
            .filter(|(h, _)| h != "NAME" && h != "SYNOPSIS")
            .map(|(_, b)| b.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let text = normalise(&body, words);
    if text.is_empty() {
        return Err("empty text");
    }
    Ok((names, description, text))
}

/// The sections of a rendered page: a heading is a line at the left margin with no lower-case
/// letter (`NAME`, `SEE ALSO`); its body, the indented lines up to the next heading. Other
/// lines at the margin (the running header and footer) belong to no section.
fn sections(rendered: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in rendered.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            if let Some((_, body)) = out.last_mut() {
                body.push_str(line);
                body.push('\n');
            }
        } else if line.chars().any(char::is_alphabetic) && !line.chars().any(char::is_lowercase) {
            out.push((line.trim().to_string(), String::new()));
        }
    }
    out
}

/// `names - description` split at its first spaced dash (groff renders `\-` as U+2212).
fn split_name(name: &str) -> Option<(Vec<String>, String)> {
    let (names, description) = [
        " - ",
        " \u{2212} ",
        " \u{2010} ",
        " \u{2013} ",
        " \u{2014} ",
    ]
    .iter()
    .filter_map(|dash| name.split_once(dash))
    .min_by_key(|(names, _)| names.len())?;
    let description = description.trim();
    if description.is_empty() {
        return None;
    }
    let names = names
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    Some((names, normalise(description, usize::MAX)))
}
