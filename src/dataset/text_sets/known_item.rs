//! The known-item rule: every usable item is a document; the one-line descriptions that point
//! to exactly one item and do not give it away lexically are the candidate queries, and a
//! seeded sample of them are the queries, each judged relevant to its own item only.
//!
//! In order:
//! 1. an item whose text repeats an earlier item's text is left out (two identical documents
//!    would make the known item ambiguous);
//! 2. a description shared by several items (compared case-insensitively) is no query;
//! 3. a description that names its item as a word (`ls` in "ls lists files"), or that is
//!    contained in the item's own text, is answered by string matching alone: no query, unless
//!    `keep_lexical` (then it is a query, flagged `lexical`);
//! 4. `queries` of the remaining candidates, drawn with the seeded [`SplitMix64`], kept in
//!    item order.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::rng::SplitMix64;

/// One item of a text source: a man page, a package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Unique within the source (`ls.1`); the document's and the query's id.
    pub id: String,
    /// The names it goes by (`ls`; `gcc`, `g++`), for the lexical rule.
    pub names: Vec<String>,
    /// Its one-line description: the candidate query.
    pub description: String,
    /// Its text: the document.
    pub text: String,
}

/// Counts by reason, in a stable order (they are written to `construction.json`).
pub type Tally = BTreeMap<&'static str, usize>;

/// How many queries to draw, and from what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub queries: usize,
    pub seed: u64,
    pub keep_lexical: bool,
}

/// A query of the set: the item it was drawn from and whether it is lexical.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// Index of its item in [`KnownItemSet::documents`].
    pub item: usize,
    pub lexical: bool,
}

/// Documents and queries, with what was left out on the way.
#[derive(Debug, Clone)]
pub struct KnownItemSet {
    pub documents: Vec<Item>,
    pub queries: Vec<Query>,
    /// Items that are no document, by reason.
    pub documents_left_out: Tally,
    /// Documents whose description is no candidate query, by reason.
    pub not_candidates: Tally,
    /// Candidate queries the sample was drawn from.
    pub candidates: usize,
}

/// Reason for a description that several items share.
const SHARED: &str = "description shared by several items";

/// Applies the rule to the items of a source, in their order.
pub fn select(items: Vec<Item>, rule: &Rule) -> KnownItemSet {
    let (documents, repeated) = unique_texts(items);
    let mut documents_left_out = Tally::new();
    if repeated > 0 {
        documents_left_out.insert(REPEATED, repeated);
    }
    let mut shared: HashMap<String, usize> = HashMap::new();
    for d in &documents {
        *shared.entry(d.description.to_lowercase()).or_default() += 1;
    }
    let mut not_candidates = Tally::new();
    let mut candidates = Vec::new();
    for (i, d) in documents.iter().enumerate() {
        if shared[&d.description.to_lowercase()] > 1 {
            *not_candidates.entry(SHARED).or_default() += 1;
            continue;
        }
        let lexical = lexical_reason(d);
        if let (Some(reason), false) = (lexical, rule.keep_lexical) {
            *not_candidates.entry(reason).or_default() += 1;
            continue;
        }
        candidates.push(Query {
            item: i,
            lexical: lexical.is_some(),
        });
    }
    let count = candidates.len();
    KnownItemSet {
        queries: sample(candidates, rule.queries, rule.seed),
        documents,
        documents_left_out,
        not_candidates,
        candidates: count,
    }
}

/// Reason for an item whose text repeats an earlier item's.
pub const REPEATED: &str = "text repeats another item's";

/// The items whose text no earlier item has (step 1 of the rule), and how many were left out.
pub fn unique_texts(items: Vec<Item>) -> (Vec<Item>, usize) {
    let mut seen = HashSet::new();
    let before = items.len();
    let kept: Vec<Item> = items
        .into_iter()
        .filter(|item| seen.insert(item.text.clone()))
        .collect();
    let repeated = before - kept.len();
    (kept, repeated)
}

/// Why the description of `item` gives its item away, if it does.
fn lexical_reason(item: &Item) -> Option<&'static str> {
    let description = item.description.to_lowercase();
    if item
        .names
        .iter()
        .any(|n| contains_word(&description, &n.to_lowercase()))
    {
        return Some("description names its item");
    }
    if item.text.to_lowercase().contains(&description) {
        return Some("description is in the item's text");
    }
    None
}

/// Whether `word` occurs in `text` with no letter or digit right before or after it.
pub fn contains_word(text: &str, word: &str) -> bool {
    if word.is_empty() {
        return false;
    }
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// `n` of `pool` drawn without replacement (a partial Fisher–Yates shuffle), in pool order.
fn sample(pool: Vec<Query>, n: usize, seed: u64) -> Vec<Query> {
    draw(pool, n, seed)
}

/// `n` of `pool` drawn without replacement with the seeded [`SplitMix64`] (a partial
/// Fisher–Yates shuffle), kept in their order in `pool`.
pub fn draw<T>(pool: Vec<T>, n: usize, seed: u64) -> Vec<T> {
    let n = n.min(pool.len());
    let mut rng = SplitMix64::new(seed);
    let mut order: Vec<usize> = (0..pool.len()).collect();
    for i in 0..n {
        let j = i + rng.below((order.len() - i) as u64) as usize;
        order.swap(i, j);
    }
    let mut keep = vec![false; pool.len()];
    for &i in &order[..n] {
        keep[i] = true;
    }
    pool.into_iter()
        .zip(keep)
        .filter_map(|(x, k)| k.then_some(x))
        .collect()
}
