//! Hand-computed cases for every metric.

use super::*;
use crate::eval::{Hit, JudgedQuery, Matching, Reference};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn metrics_at_k_by_hand() {
    // Ranks 1..5 with grades 0, 2, 0, 1, 0; the judgments hold grades 2, 1, 3 (R = 3).
    let grades = [0, 2, 0, 1, 0];
    let ideal = [3, 2, 1];
    let a = at_k(&grades, &ideal, 5, Gain::Linear);
    assert_eq!(a.hit, 1.0);
    assert!(close(a.mrr, 0.5));
    assert!(close(a.precision, 2.0 / 5.0));
    assert!(close(a.recall, 2.0 / 3.0));
    assert!(close(a.f1, 2.0 * 0.4 * (2.0 / 3.0) / (0.4 + 2.0 / 3.0)));
    // AP: (1/2 + 2/4) / 3.
    assert!(close(a.map, (0.5 + 0.5) / 3.0));
    // DCG = 2/log2(3) + 1/log2(5); IDCG = 3/1 + 2/log2(3) + 1/2.
    let dcg = 2.0 / 3f64.log2() + 1.0 / 5f64.log2();
    let idcg = 3.0 + 2.0 / 3f64.log2() + 0.5;
    assert!(close(a.ndcg, dcg / idcg));
    assert!(close(a.context_precision, 0.4));
    // AQWV = 1 − (1 − 2/3) − 40 · 3/5.
    assert!(close(a.aqwv, 1.0 - 1.0 / 3.0 - 40.0 * 0.6));
    // Exponential gain: 2^g − 1.
    let e = at_k(&grades, &ideal, 5, Gain::Exponential);
    let dcg = 3.0 / 3f64.log2() + 1.0 / 5f64.log2();
    let idcg = 7.0 + 3.0 / 3f64.log2() + 0.5;
    assert!(close(e.ndcg, dcg / idcg));
    // At k = 1 nothing relevant; P@k divides by k even past the results' end.
    let one = at_k(&grades, &ideal, 1, Gain::Linear);
    assert_eq!((one.hit, one.mrr, one.ndcg), (0.0, 0.0, 0.0));
    let deep = at_k(&grades, &ideal, 10, Gain::Linear);
    assert!(close(deep.precision, 0.2));
    assert!(close(deep.context_precision, 0.4));
    assert!(close(r_precision(&grades, 3), 1.0 / 3.0));
    assert!(close(reciprocal_rank(&grades), 0.5));
}

#[test]
fn edge_cases_follow_the_seeds() {
    // No relevant judgment: recall is vacuously 1, the rest 0.
    let a = at_k(&[0, 0], &[], 5, Gain::Linear);
    assert_eq!((a.recall, a.precision, a.ndcg, a.map), (1.0, 0.0, 0.0, 0.0));
    // An empty run scores 0 everywhere (and has no false alarms).
    let e = at_k(&[], &[1], 5, Gain::Linear);
    assert_eq!(
        (e.hit, e.recall, e.ndcg, e.context_precision),
        (0.0, 0.0, 0.0, 0.0)
    );
    assert_eq!(e.aqwv, 0.0);
    assert_eq!(r_precision(&[], 0), 0.0);
    let hit = |s: f64| Hit::new("d", s);
    assert_eq!(score_discrimination(&[hit(1.0)]), None);
    // Scores 1 and 3: mean 2, population sd 1.
    assert!(close(
        score_discrimination(&[hit(1.0), hit(3.0)]).unwrap(),
        0.5
    ));
    assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 50.0), Some(2.5));
    assert_eq!(percentile(&[], 50.0), None);
}

fn reference(document: &str, page: i64, grade: i64) -> Reference {
    Reference {
        document: document.into(),
        page: Some(page),
        grade,
    }
}

fn hit(document: &str, page: Option<i64>) -> Hit {
    Hit::with_page_and_text(document, 1.0, page, None)
}

/// The RAG ground-truth format's own example: Q001's gold references are page 45 of the Black-Scholes book and
/// page 112 of Natenberg, both relevance 3.
#[test]
fn rag_ground_truth_fuzzy_matching() {
    let q = JudgedQuery {
        id: "Q001".into(),
        references: vec![
            reference("Black Scholes with Python (Van Der Post 2024).pdf", 45, 3),
            reference("Option Volatility and Pricing (Natenberg 2015).pdf", 112, 3),
        ],
        ..JudgedQuery::default()
    };
    let hits = [
        // Case, extension and whitespace differ; page 46 is within ±1.
        hit("black scholes with python  (van der post 2024)", Some(46)),
        // The same reference again: already matched, so not relevant a second time.
        hit(
            "Black Scholes with Python (Van Der Post 2024).PDF",
            Some(45),
        ),
        // Two pages off: no match.
        hit(
            "Option Volatility and Pricing (Natenberg 2015).pdf",
            Some(114),
        ),
        hit(
            "Option Volatility and Pricing (Natenberg 2015).pdf",
            Some(111),
        ),
    ];
    let m = match_results(&q, &hits, Matching::Fuzzy);
    assert_eq!(m.grades, vec![3, 0, 0, 3]);
    assert_eq!(m.reference, vec![Some(0), None, None, Some(1)]);
    assert!(m.ambiguous.is_empty());
    // Exact matching compares ids as they are, pages aside.
    let exact = match_results(&q, &hits, Matching::Exact);
    assert_eq!(exact.grades, vec![0, 0, 3, 3]);
}

#[test]
fn first_match_wins_and_ambiguity_is_recorded() {
    // Pages 10 and 11 of one document: a result on page 10 fits both (±1).
    let q = JudgedQuery {
        id: "Q".into(),
        references: vec![reference("Book.pdf", 11, 1), reference("book", 10, 2)],
        ..JudgedQuery::default()
    };
    let m = match_results(
        &q,
        &[hit("BOOK.pdf", Some(10)), hit("book", Some(10))],
        Matching::Fuzzy,
    );
    // The first reference in the judgments' order wins; the second result takes the other.
    assert_eq!(m.reference, vec![Some(0), Some(1)]);
    assert_eq!(m.grades, vec![1, 2]);
    assert_eq!(m.ambiguous, vec![0]);
}

#[test]
fn document_names_normalise_as_the_seed_says() {
    assert_eq!(normalize_document("  Black  Scholes.PDF "), "black scholes");
    assert_eq!(normalize_document("notes.md"), "notes");
    assert_eq!(normalize_document("v1.2 report"), "v1.2 report");
    assert_eq!(normalize_document(".pdf"), ".pdf");
}
