//! The known-item rule on hand-made items, the man page reader on rendered text, and the whole
//! man page source on the pages of `tests/data/manpages` (groff renders them).

use std::io::Write;
use std::path::Path;

use super::beir;
use super::debian;
use super::known_item::{Item, Rule, contains_word, select};
use super::manpages::{ManSource, parse};
use super::normalise;
use crate::types::{Progress, ProgressUnit, Silent};

fn item(id: &str, description: &str, text: &str) -> Item {
    Item {
        id: id.into(),
        names: vec![id.into()],
        description: description.into(),
        text: text.into(),
    }
}

fn rule(queries: usize, keep_lexical: bool) -> Rule {
    Rule {
        queries,
        seed: 7,
        keep_lexical,
    }
}

#[test]
fn a_word_is_bounded_by_non_alphanumerics() {
    assert!(contains_word("run ls -l here", "ls"));
    assert!(contains_word("apt-get: fetch", "apt-get"));
    assert!(!contains_word("the greek alphabet", "alpha"));
    assert!(!contains_word("tools", "ls"));
    assert!(contains_word("ls", "ls"));
    assert!(!contains_word("anything", ""));
}

#[test]
fn repeated_texts_shared_descriptions_and_lexical_queries_are_left_out() {
    let items = vec![
        item("xa", "print a letter", "writes one character"),
        item("xb", "run xb twice", "starts two builds"),
        item(
            "xc",
            "show two files",
            "this will show two files side by side",
        ),
        item("xd", "list a box", "prints every item"),
        item("xe", "List a Box", "prints a table"),
        item("xf", "print an angle", "writes one character"),
        item("xg", "count letters", "counts o"),
    ];
    let set = select(items.clone(), &rule(10, false));
    let ids: Vec<&str> = set.documents.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["xa", "xb", "xc", "xd", "xe", "xg"]);
    assert_eq!(set.documents_left_out["text repeats another item's"], 1);
    assert_eq!(set.not_candidates["description shared by several items"], 2);
    assert_eq!(set.not_candidates["description names its item"], 1);
    assert_eq!(set.not_candidates["description is in the item's text"], 1);
    let queries: Vec<&str> = set
        .queries
        .iter()
        .map(|q| set.documents[q.item].id.as_str())
        .collect();
    assert_eq!((set.candidates, queries), (2, vec!["xa", "xg"]));
    // Kept and flagged on request; a shared description never becomes a query.
    let kept = select(items, &rule(10, true));
    let flags: Vec<(&str, bool)> = kept
        .queries
        .iter()
        .map(|q| (kept.documents[q.item].id.as_str(), q.lexical))
        .collect();
    assert_eq!(
        flags,
        [("xa", false), ("xb", true), ("xc", true), ("xg", false)]
    );
}

#[test]
fn the_query_sample_is_seeded_without_repeats_and_in_item_order() {
    let items: Vec<Item> = (0..50)
        .map(|i| item(&format!("p{i}"), &format!("task {i}"), &format!("body {i}")))
        .collect();
    let a = select(items.clone(), &rule(20, false));
    let b = select(items.clone(), &rule(20, false));
    let picked: Vec<usize> = a.queries.iter().map(|q| q.item).collect();
    assert_eq!(picked, b.queries.iter().map(|q| q.item).collect::<Vec<_>>());
    assert_eq!(picked.len(), 20);
    assert!(picked.windows(2).all(|w| w[0] < w[1]), "{picked:?}");
    let other = select(
        items.clone(),
        &Rule {
            seed: 8,
            ..rule(20, false)
        },
    );
    assert_ne!(
        picked,
        other.queries.iter().map(|q| q.item).collect::<Vec<_>>()
    );
    assert_eq!(select(items, &rule(80, false)).queries.len(), 50);
}

#[test]
fn a_rendered_page_gives_names_description_and_its_description_section() {
    let page = "LS(1)          User Commands          LS(1)\n\nNAME\n       ls, dir \u{2212} list \
                directory\n       contents\n\nSYNOPSIS\n       ls [OPTION]...\n\nDESCRIPTION\n       \
                List \u{2018}information\u{2019} about the FILEs.\n\n       -a, --all\n              do \
                not ignore entries\n\nGNU coreutils 9.1      September 2022      LS(1)\n";
    let (names, description, text) = parse(page, 100).unwrap();
    assert_eq!(names, ["ls", "dir"]);
    assert_eq!(description, "list directory contents");
    assert_eq!(
        text,
        "List 'information' about the FILEs. -a, --all do not ignore entries"
    );
    assert_eq!(parse(page, 3).unwrap().2, "List 'information' about");
    // Without DESCRIPTION: the sections after NAME and SYNOPSIS.
    let options = "NAME\n   x - do y\nSYNOPSIS\n   x\nOPTIONS\n   -n  at most n\nBUGS\n   none\n";
    assert_eq!(parse(options, 100).unwrap().2, "-n at most n none");
    assert_eq!(
        parse("NAME\n   x\nDESCRIPTION\n   text\n", 9),
        Err("no `names - description` in NAME")
    );
    assert_eq!(parse("DESCRIPTION\n   text\n", 9), Err("no NAME section"));
    assert_eq!(parse("NAME\n   x - y\nDESCRIPTION\n", 9), Err("empty text"));
    assert_eq!(
        normalise(" a\u{2010}b\t\u{201C}c\u{201D}\n d ", 9),
        "a-b \"c\" d"
    );
}

/// A man directory with the shipped test pages, one of them gzipped, and a symbolic link.
fn man_dir() -> tempfile::TempDir {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/manpages");
    let dir = tempfile::tempdir().unwrap();
    for section in ["man1", "man8"] {
        std::fs::create_dir(dir.path().join(section)).unwrap();
        for entry in std::fs::read_dir(shipped.join(section)).unwrap() {
            let from = entry.unwrap().path();
            let to = dir.path().join(section).join(from.file_name().unwrap());
            std::fs::copy(&from, &to).unwrap();
        }
    }
    let man1 = dir.path().join("man1");
    let plain = std::fs::read(man1.join("omicron.1")).unwrap();
    std::fs::remove_file(man1.join("omicron.1")).unwrap();
    let gz = std::fs::File::create(man1.join("omicron.1.gz")).unwrap();
    let mut enc = flate2::write::GzEncoder::new(gz, flate2::Compression::default());
    enc.write_all(&plain).unwrap();
    enc.finish().unwrap();
    std::os::unix::fs::symlink("alpha.1", man1.join("nu.1")).unwrap();
    dir
}

#[test]
fn the_shipped_man_pages_make_the_documents_and_queries_the_rule_says() {
    let dir = man_dir();
    let source = ManSource {
        dir: dir.path().to_path_buf(),
        sections: vec!["1".into(), "8".into(), "5".into()],
        words: 12,
    };
    let (files, links) = source.files().unwrap();
    assert_eq!((files.len(), links["symbolic link"]), (12, 1));
    let bar = Silent.task("pages", None, ProgressUnit::Items);
    let (items, left) = source.items(&files, &*bar).unwrap();
    let left: Vec<(&str, usize)> = left.into_iter().collect();
    assert_eq!(
        left,
        [
            ("`.so` redirect", 1),
            ("empty text", 1),
            ("no `names - description` in NAME", 1)
        ]
    );
    let set = select(items, &rule(10, false));
    let docs: Vec<(&str, &str)> = set
        .documents
        .iter()
        .map(|d| (d.id.as_str(), d.text.as_str()))
        .collect();
    assert_eq!(docs.len(), 8, "{docs:?}");
    assert_eq!(
        docs[0],
        (
            "alpha.1",
            "Writes a single character to standard output and exits. The character is"
        )
    );
    assert_eq!(docs[7], ("epsilon.8", "-n Runs at most n jobs at once."));
    let lambda = &set.documents[5];
    assert_eq!(lambda.names, ["lambda", "lam"]);
    let queries: Vec<(&str, &str)> = set
        .queries
        .iter()
        .map(|q| {
            let d = &set.documents[q.item];
            (d.id.as_str(), d.description.as_str())
        })
        .collect();
    assert_eq!(
        queries,
        [
            ("alpha.1", "print the first letter of the Greek alphabet"),
            ("lambda.1", "evaluate a small expression language"),
            ("omicron.1", "count the round letters of a text"),
            ("epsilon.8", "schedule very small jobs"),
        ]
    );
    let out = tempfile::tempdir().unwrap();
    let beir_dir = out.path().join("beir");
    let record = beir::construction(source.describe("groff"), &set, serde_json::json!({}));
    beir::write(&beir_dir, &set, &record).unwrap();
    let read = crate::embed::input::read_beir(&beir_dir, "test").unwrap();
    assert_eq!((read.corpus.len(), read.queries.len()), (8, 4));
    let qrels = read.qrels.unwrap();
    assert!(qrels.iter().all(|q| q.query == q.doc && q.score == 1));
    assert_eq!(
        record["documents_left_out"]["text repeats another item's"],
        1
    );
}

#[test]
fn a_translation_file_gives_packages_with_synopsis_and_long_description() {
    let text = "Package: 0ad\nDescription-md5: d9\nDescription-en: Real-time strategy game\n \
                0 A.D. is a free\n game of warfare.\n .\n It runs on Linux.\n\n\
                Package: bare\nDescription-en: nothing more\n\n\
                Package: 0ad\nDescription-en: again\n more\n\n\
                Description-en: no package\n text\n";
    let (items, left) = debian::parse(text, 100);
    let got: Vec<(&str, &str, &str)> = items
        .iter()
        .map(|i| (i.id.as_str(), i.description.as_str(), i.text.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "0ad",
                "Real-time strategy game",
                "0 A.D. is a free game of warfare. It runs on Linux."
            ),
            ("0ad", "again", "more"),
        ]
    );
    assert_eq!(items[0].names, ["0ad"]);
    assert_eq!(left["no long description"], 1);
    assert_eq!(left["record without package or description"], 1);
    assert_eq!(debian::parse(text, 3).0[0].text, "0 A.D. is");
}

#[test]
fn translation_files_are_read_through_apt_and_a_package_listed_again_is_left_out() {
    let lists = tempfile::tempdir().unwrap();
    let a = "Package: aa\nDescription-en: first tool\n does one thing\n\n";
    let b = "Package: aa\nDescription-en: first tool\n does one thing\n\n\
             Package: bb\nDescription-en: second tool\n does another\n";
    std::fs::write(lists.path().join("m_main_i18n_Translation-en"), a).unwrap();
    std::fs::write(lists.path().join("s_main_i18n_Translation-en"), b).unwrap();
    std::fs::write(lists.path().join("m_main_binary-amd64_Packages"), "x").unwrap();
    let source = debian::DebianSource {
        lists: lists.path().to_path_buf(),
        words: 50,
    };
    let files = source.files().unwrap();
    assert_eq!(files.len(), 2);
    let (items, left) = source.items(&files).unwrap();
    let ids: Vec<&str> = items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["aa", "bb"]);
    assert_eq!(left["package listed again"], 1);
}
