//! `dataset make-text`: a known-item retrieval set from the text on this machine (man pages,
//! Debian's package descriptions), written as a BEIR directory (`OUT/beir`) and then embedded
//! into a dataset with judgments (`OUT/embedded`) by `embed`'s own code. Each phase is kept once done: a second run with
//! the same parameters reuses it, one with other parameters is refused.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::cli::{EmbedArgs, MakeTextArgs, TextSource};
use crate::dataset;
use crate::dataset::text_sets::beir::{self, CONSTRUCTION};
use crate::dataset::text_sets::debian::{self, DebianSource};
use crate::dataset::text_sets::known_item::{
    Item, KnownItemSet, REPEATED, Rule, Tally, draw, select, unique_texts,
};
use crate::dataset::text_sets::manpages::{self, ManSource};
use crate::output::progress;
use crate::types::ProgressUnit;

/// Documents and queries a default build is meant to reach; fewer are reported.
const EXPECTED: (usize, usize) = (10_000, 2_000);

/// Packages drawn by default: a corpus of the size of the man page set, embedded in minutes.
const DEFAULT_PACKAGES: usize = 10_000;

/// The source to read, ready: its files found (fetched when missing).
enum Plan {
    Man(ManSource),
    Debian(DebianSource, Vec<PathBuf>),
}

pub(super) fn make_text(args: MakeTextArgs) -> anyhow::Result<ExitCode> {
    let name = match args.source {
        TextSource::Manpages => "manpages",
        TextSource::DebianPackages => "debian-packages",
    };
    let out = args.out.clone().unwrap_or_else(|| {
        let cache = args
            .data_dir
            .clone()
            .unwrap_or_else(dataset::default_cache_dir);
        cache.join(name)
    });
    let beir_dir = out.join("beir");
    let (plan, described) = plan(&args)?;
    let items = match args.source {
        TextSource::Manpages => args.items,
        TextSource::DebianPackages => Some(args.items.unwrap_or(DEFAULT_PACKAGES)),
    };
    let rule = Rule {
        queries: args.queries,
        seed: args.seed,
        keep_lexical: args.keep_lexical,
    };
    let rule_json = json!({
        "items": items,
        "queries": rule.queries,
        "seed": rule.seed,
        "keep_lexical": rule.keep_lexical,
    });
    let built = match read_construction(&beir_dir)? {
        Some(old) if old["source"] == described && old["rule"] == rule_json => {
            println!("reusing {} (same parameters)", beir_dir.display());
            false
        }
        Some(_) => bail!(
            "{} was built with other parameters (see its {CONSTRUCTION}); remove it or choose \
             another --out",
            beir_dir.display()
        ),
        None => {
            let (all, mut left, inputs) = gather(&plan, args.quiet)?;
            // Repeats go before the draw, so that --items documents remain.
            let (unique, repeated) = unique_texts(all);
            if repeated > 0 {
                *left.entry(REPEATED).or_default() += repeated;
            }
            let drawn = match items {
                Some(n) => draw(unique, n, rule.seed),
                None => unique,
            };
            let mut set = select(drawn, &rule);
            for (reason, n) in left {
                *set.documents_left_out.entry(reason).or_default() += n;
            }
            let record = beir::construction(described, &set, rule_json);
            beir::write(&beir_dir, &set, &record)?;
            summary(&beir_dir, &set, inputs, rule.queries);
            true
        }
    };
    let embedded = out.join("embedded");
    if built && embedded.exists() {
        bail!(
            "{} holds the embedding of an earlier build; remove it and run again",
            embedded.display()
        );
    }
    embed(&args, &beir_dir, &embedded)
}

/// The `construction.json` of an earlier build in `dir`, if there is one.
fn read_construction(dir: &Path) -> anyhow::Result<Option<Value>> {
    let path = dir.join(CONSTRUCTION);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !dir.exists() => return Ok(None),
        Err(e) => {
            return Err(e).with_context(|| {
                format!(
                    "{}: an earlier build's record cannot be read; remove {} and run again",
                    path.display(),
                    dir.display()
                )
            });
        }
    };
    let value = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not the JSON record of a build; remove {} and run again",
            path.display(),
            dir.display()
        )
    })?;
    Ok(Some(value))
}

/// The source of `args`, and what `construction.json` says of it.
fn plan(args: &MakeTextArgs) -> anyhow::Result<(Plan, Value)> {
    Ok(match args.source {
        TextSource::Manpages => {
            let source = ManSource {
                dir: args.man_dir.clone(),
                sections: args.sections.clone(),
                words: args.words,
            };
            let described = source.describe(&manpages::groff_version()?);
            (Plan::Man(source), described)
        }
        TextSource::DebianPackages => {
            let source = DebianSource {
                lists: args.apt_lists.clone(),
                words: args.words,
            };
            let mut files = source.files()?;
            if files.is_empty() {
                eprintln!(
                    "no English package descriptions in {}: fetching them with apt",
                    source.lists.display()
                );
                debian::fetch()?;
                files = source.files()?;
            }
            if files.is_empty() {
                bail!(
                    "{}: no *_i18n_Translation-en* file after `apt-get update -o Acquire::Languages=en`",
                    source.lists.display()
                );
            }
            let described = source.describe(&files);
            (Plan::Debian(source, files), described)
        }
    })
}

/// Every item of the source, what it left out, and how many inputs (pages, packages) it read.
fn gather(plan: &Plan, quiet: bool) -> anyhow::Result<(Vec<Item>, Tally, usize)> {
    match plan {
        Plan::Man(source) => {
            let (files, links) = source.files()?;
            if files.is_empty() {
                bail!(
                    "{}: no man page in sections {}",
                    source.dir.display(),
                    source.sections.join(",")
                );
            }
            let bar = progress::terminal(quiet).task(
                "rendering man pages",
                Some(files.len() as u64),
                ProgressUnit::Items,
            );
            let (items, mut left) = source.items(&files, &*bar)?;
            drop(bar);
            for (reason, n) in links {
                *left.entry(reason).or_default() += n;
            }
            let inputs = files.len() + left.get("symbolic link").copied().unwrap_or(0);
            Ok((items, left, inputs))
        }
        Plan::Debian(source, files) => {
            let (items, left) = source.items(files)?;
            let inputs = items.len() + left.values().sum::<usize>();
            Ok((items, left, inputs))
        }
    }
}

/// The one line a build prints, and a note when the set is smaller than a default one.
fn summary(dir: &Path, set: &KnownItemSet, inputs: usize, queries: usize) {
    println!(
        "{}: {} documents, {} queries (of {} candidates) from {} items read",
        dir.display(),
        set.documents.len(),
        set.queries.len(),
        set.candidates,
        inputs
    );
    if set.documents.len() < EXPECTED.0 || set.queries.len() < EXPECTED.1.min(queries) {
        eprintln!(
            "note: fewer than the {} documents and {} queries a default build reaches on a \
             machine with a full set of man pages or apt's package lists",
            EXPECTED.0, EXPECTED.1
        );
    }
}

/// Embeds the BEIR directory into `dest`, unless it is there already or no model is given.
fn embed(args: &MakeTextArgs, beir_dir: &Path, dest: &Path) -> anyhow::Result<ExitCode> {
    let model = args
        .model
        .clone()
        .or_else(|| std::env::var_os("RAGDBEVAL_EMBED_MODEL").map(PathBuf::from));
    let Some(model) = model else {
        println!(
            "no model given: embed it with `ragdbeval embed --beir {} --model DIR --out {}` \
             (scripts/install/minilm.sh installs all-MiniLM-L6-v2 and prints its folder)",
            beir_dir.display(),
            dest.display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    if dest.join("embed.json").exists() {
        println!("reusing {} (already embedded)", dest.display());
        return Ok(ExitCode::SUCCESS);
    }
    // `ragdbeval embed`'s defaults.
    crate::commands::embed::run(EmbedArgs {
        beir: Some(beir_dir.to_path_buf()),
        split: "test".into(),
        corpus: None,
        queries: None,
        qrels: None,
        model,
        out: dest.to_path_buf(),
        overlap: 32,
        truncate: false,
        sparse: Some(crate::cli::SparseEncoding::Bm25),
        batch_size: 32,
        k: 100,
        max_docs: None,
        max_queries: None,
        quiet: args.quiet,
    })
}
