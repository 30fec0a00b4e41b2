//! Answer metrics of a retrieval-augmented generation run (RAG evaluation clients' "Generation Metrics"):
//! a generated answer against gold answers, against the question, and against the text that
//! was retrieved for it. Pure functions over strings: no I/O, no model.
//!
//! Every metric works on the tokens of [`normalize_answer`], the normalisation of the
//! official SQuAD v1.1 evaluation script (`normalize_answer` in `evaluate-v1.1.py`):
//! lowercase, remove ASCII punctuation (Python's `string.punctuation`), replace the
//! articles `a`, `an`, `the` (as whole words) by a space, split on whitespace. Tokens are
//! therefore compared exactly, after that normalisation only: no stemming, no synonyms.
//!
//! - [`exact_match`]: 1 if the normalised answer equals the normalised gold answer, else 0.
//! - [`token_f1`]: SQuAD's bag-of-tokens F1 (overlap counted with multiplicity).
//! - [`rouge_l_f1`]: `2·LCS / (len gen + len gold)` over normalised tokens (the RAG clients'
//!   formula: with precision `LCS/len gen` and recall `LCS/len gold`, their harmonic mean).
//! - [`answer_relevance`]: [`token_f1`] between the answer and the question.
//! - [`support_coverage`]: the fraction of the answer's content words (tokens not in
//!   [`STOPWORDS`]) found among the tokens of the retrieved text.
//! - [`support_density`]: the fraction of all the answer's tokens found there.
//! - [`hallucination_rate`]: `1 − support density`.
//!
//! Several gold answers: [`best_over_golds`] takes the maximum, as the SQuAD script's
//! `metric_max_over_ground_truths` does. LLM-judged metrics (faithfulness, RAGAS context
//! recall) and embedding similarities are out of scope and deliberately not approximated.

use std::collections::{HashMap, HashSet};

/// Function words that carry no claim of their own: an answer's content words are its
/// normalised tokens minus these (the articles are already gone after normalisation). A
/// small, fixed English list so that the figure is reproducible; sorted, for lookup.
pub const STOPWORDS: &[&str] = &[
    "about", "also", "and", "any", "are", "as", "at", "be", "been", "being", "but", "by", "can",
    "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "hers", "him",
    "his", "how", "i", "if", "in", "into", "is", "it", "its", "may", "me", "might", "my", "no",
    "nor", "not", "of", "on", "or", "our", "she", "should", "so", "such", "than", "that", "their",
    "them", "then", "there", "these", "they", "this", "those", "to", "us", "was", "we", "were",
    "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would", "you", "your",
];

/// Python's `string.punctuation`: the only characters the SQuAD script removes. Other
/// punctuation (typographic quotes, dashes) stays part of its token, as it does there.
fn is_squad_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
}

/// A character of a `\w` run in Python's Unicode regular expressions (what `\b` in the
/// script's article pattern looks at). After punctuation removal `_` never occurs.
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Python's `str.split()` separators: Unicode whitespace plus the four ASCII information
/// separators, which Python counts as whitespace and Rust does not.
fn is_python_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The SQuAD v1.1 normalisation: lowercase, drop ASCII punctuation, replace the whole words
/// `a`, `an` and `the` by a space, collapse whitespace to single spaces (no leading or
/// trailing space). `"The Eiffel-Tower!"` → `"eiffeltower"`.
pub fn normalize_answer(text: &str) -> String {
    answer_tokens(text).join(" ")
}

/// The tokens of [`normalize_answer`] (its result split on spaces).
pub fn answer_tokens(text: &str) -> Vec<String> {
    let lowered: String = text
        .to_lowercase()
        .chars()
        .filter(|c| !is_squad_punctuation(*c))
        .collect();
    // `re.sub(r'\b(a|an|the)\b', ' ', text)`: a maximal run of word characters that is
    // exactly an article is replaced; the article inside a longer word is not.
    let mut without_articles = String::with_capacity(lowered.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if matches!(run.as_str(), "a" | "an" | "the") {
            out.push(' ');
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in lowered.chars() {
        if is_word_char(c) {
            run.push(c);
        } else {
            flush(&mut run, &mut without_articles);
            without_articles.push(c);
        }
    }
    flush(&mut run, &mut without_articles);
    without_articles
        .split(is_python_whitespace)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// 1.0 when `prediction` and `gold` normalise to the same string, else 0.0. Two texts that
/// both normalise to nothing (empty, only punctuation or articles) match.
pub fn exact_match(prediction: &str, gold: &str) -> f64 {
    if answer_tokens(prediction) == answer_tokens(gold) {
        1.0
    } else {
        0.0
    }
}

/// Tokens shared by two bags, counted with multiplicity (`Counter(a) & Counter(b)`).
fn overlap(a: &[String], b: &[String]) -> usize {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for t in b {
        *counts.entry(t.as_str()).or_default() += 1;
    }
    a.iter()
        .filter(|t| match counts.get_mut(t.as_str()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        })
        .count()
}

/// F1 of two token lists: precision `common / len prediction`, recall `common / len gold`.
/// Both empty: 1 (nothing asked, nothing said); exactly one empty: 0.
fn f1_of_tokens(prediction: &[String], gold: &[String]) -> f64 {
    if prediction.is_empty() || gold.is_empty() {
        return if prediction.is_empty() && gold.is_empty() {
            1.0
        } else {
            0.0
        };
    }
    let common = overlap(prediction, gold);
    if common == 0 {
        return 0.0;
    }
    let precision = common as f64 / prediction.len() as f64;
    let recall = common as f64 / gold.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// SQuAD's token F1 between `prediction` and `gold` after [`normalize_answer`]: the overlap
/// of the two bags of tokens (a token shared twice counts twice), as precision over the
/// prediction's tokens and recall over the gold's, combined harmonically.
///
/// Edge cases: both normalise to no tokens → 1.0; exactly one does → 0.0 (the SQuAD 2.0
/// script's rule; the v1.1 script returns 0 for both empty, so that an empty answer to a
/// question whose gold answer is empty could never score). No shared token → 0.0.
pub fn token_f1(prediction: &str, gold: &str) -> f64 {
    f1_of_tokens(&answer_tokens(prediction), &answer_tokens(gold))
}

/// Length of the longest common subsequence of two token lists (two rows of the table).
fn lcs_len(a: &[String], b: &[String]) -> usize {
    let mut previous = vec![0usize; b.len() + 1];
    let mut current = vec![0usize; b.len() + 1];
    for x in a {
        for (j, y) in b.iter().enumerate() {
            current[j + 1] = if x == y {
                previous[j] + 1
            } else {
                previous[j + 1].max(current[j])
            };
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// ROUGE-L F1 of `prediction` against `gold`: `2·LCS / (len prediction + len gold)`, LCS
/// being the longest common subsequence of their normalised tokens (order-preserving, gaps
/// allowed). The RAG clients' formula, the balanced F-measure of ROUGE-L (β = 1, no stemming).
///
/// Edge cases as [`token_f1`]: both without tokens → 1.0; exactly one → 0.0.
pub fn rouge_l_f1(prediction: &str, gold: &str) -> f64 {
    let (p, g) = (answer_tokens(prediction), answer_tokens(gold));
    if p.is_empty() || g.is_empty() {
        return if p.is_empty() && g.is_empty() {
            1.0
        } else {
            0.0
        };
    }
    2.0 * lcs_len(&p, &g) as f64 / (p.len() + g.len()) as f64
}

/// The best value of `metric(prediction, gold)` over several gold answers (SQuAD's
/// `metric_max_over_ground_truths`). `None` when there is no gold answer: the metric is
/// undefined for that query, not 0.
pub fn best_over_golds<S: AsRef<str>>(
    metric: fn(&str, &str) -> f64,
    prediction: &str,
    golds: &[S],
) -> Option<f64> {
    golds
        .iter()
        .map(|g| metric(prediction, g.as_ref()))
        .reduce(f64::max)
}

/// Answer relevance: [`token_f1`] between the answer and the question, a lexical
/// proxy for staying on topic. An answer that repeats the question scores high; a correct
/// answer in other words scores low. Edge cases as [`token_f1`].
pub fn answer_relevance(answer: &str, question: &str) -> f64 {
    token_f1(answer, question)
}

/// The set of normalised tokens of the retrieved passages (each passage normalised on its
/// own, so that no token is formed across two passages).
fn retrieved_vocabulary<S: AsRef<str>>(retrieved: &[S]) -> HashSet<String> {
    retrieved
        .iter()
        .flat_map(|passage| answer_tokens(passage.as_ref()))
        .collect()
}

/// Whether a normalised token is one of [`STOPWORDS`].
pub fn is_stopword(token: &str) -> bool {
    STOPWORDS.binary_search(&token).is_ok()
}

/// The fraction of `tokens` (with repetition) found in `vocabulary`; `None` for no tokens.
fn fraction_supported<'a>(
    tokens: impl Iterator<Item = &'a String>,
    vocabulary: &HashSet<String>,
) -> Option<f64> {
    let (mut found, mut total) = (0usize, 0usize);
    for t in tokens {
        total += 1;
        found += usize::from(vocabulary.contains(t));
    }
    (total > 0).then(|| found as f64 / total as f64)
}

/// Support coverage: the fraction of the answer's content words — normalised
/// tokens that are not [`STOPWORDS`], counted with repetition — that occur as tokens of the
/// retrieved text (all passages given, normalised the same way). A word counts as supported
/// when it occurs anywhere in the retrieved text, whatever its context.
///
/// `None` when the answer has no content word (empty, or only stopwords and punctuation):
/// there is nothing to support, and a number would be made up.
pub fn support_coverage<S: AsRef<str>>(answer: &str, retrieved: &[S]) -> Option<f64> {
    let vocabulary = retrieved_vocabulary(retrieved);
    let tokens = answer_tokens(answer);
    fraction_supported(tokens.iter().filter(|t| !is_stopword(t)), &vocabulary)
}

/// Support density: the fraction of all the answer's normalised tokens, counted
/// with repetition and stopwords included, that occur as tokens of the retrieved text.
///
/// `None` when the answer has no token.
pub fn support_density<S: AsRef<str>>(answer: &str, retrieved: &[S]) -> Option<f64> {
    let vocabulary = retrieved_vocabulary(retrieved);
    fraction_supported(answer_tokens(answer).iter(), &vocabulary)
}

/// Hallucination rate: `1 − support density`, the fraction of the answer's tokens
/// that the retrieved text does not contain. `None` when the answer has no token.
pub fn hallucination_rate<S: AsRef<str>>(answer: &str, retrieved: &[S]) -> Option<f64> {
    support_density(answer, retrieved).map(|d| 1.0 - d)
}

/// Everything one query contributes to the answer metrics.
#[derive(Debug, Clone, Copy)]
pub struct AnswerInput<'a, S: AsRef<str>> {
    pub answer: &'a str,
    /// Gold answers; any one of them is a correct answer.
    pub golds: &'a [S],
    pub question: Option<&'a str>,
    /// The text of the passages retrieved for the question; `None` when the run does not
    /// carry it (a TREC run has ids only), which leaves the support metrics undefined.
    pub retrieved: Option<&'a [S]>,
}

/// The answer metrics of one query. `None` where a metric is undefined: no gold answer, no
/// question, no retrieved text in the run, or nothing in the answer to support.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AnswerScores {
    pub exact_match: Option<f64>,
    pub token_f1: Option<f64>,
    pub rouge_l_f1: Option<f64>,
    pub answer_relevance: Option<f64>,
    pub support_coverage: Option<f64>,
    pub support_density: Option<f64>,
    pub hallucination_rate: Option<f64>,
}

/// Scores one answer on every metric of this module. Nothing retrieved (an empty list of
/// passages) supports nothing: density 0 and hallucination rate 1 for any answer with tokens.
pub fn score_answer<S: AsRef<str>>(input: &AnswerInput<'_, S>) -> AnswerScores {
    let density = input
        .retrieved
        .and_then(|passages| support_density(input.answer, passages));
    AnswerScores {
        exact_match: best_over_golds(exact_match, input.answer, input.golds),
        token_f1: best_over_golds(token_f1, input.answer, input.golds),
        rouge_l_f1: best_over_golds(rouge_l_f1, input.answer, input.golds),
        answer_relevance: input.question.map(|q| answer_relevance(input.answer, q)),
        support_coverage: input
            .retrieved
            .and_then(|passages| support_coverage(input.answer, passages)),
        support_density: density,
        hallucination_rate: density.map(|d| 1.0 - d),
    }
}

#[cfg(test)]
mod tests;
