//! Hand-computed cases of the answer metrics, and exact match and token F1 cross-checked
//! against the official SQuAD v1.1 evaluation script (values baked in from
//! `scripts/squad_reference.py`, so the test needs no Python).

use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

/// prediction, gold answers, normalised prediction, EM, F1, as the SQuAD v1.1 script gives
/// them.
type SquadCase = (
    &'static str,
    &'static [&'static str],
    &'static str,
    f64,
    f64,
);

const SQUAD_V11: &[SquadCase] = &[
    (
        "The Eiffel Tower",
        &["Eiffel Tower"],
        "eiffel tower",
        1.0,
        1.0,
    ),
    (
        "in 1889, the tower opened",
        &["1889"],
        "in 1889 tower opened",
        0.0,
        0.4,
    ),
    (
        "Denver Broncos",
        &["Denver Broncos", "The Denver Broncos", "Broncos"],
        "denver broncos",
        1.0,
        1.0,
    ),
    (
        "Carolina Panthers won",
        &["Denver Broncos"],
        "carolina panthers won",
        0.0,
        0.0,
    ),
    ("a an the", &["the answer"], "", 0.0, 0.0),
    (
        "Santa Clara, California!",
        &["Santa Clara, California", "Levi's Stadium"],
        "santa clara california",
        1.0,
        1.0,
    ),
    (
        "Levis Stadium in Santa Clara",
        &["Levi's Stadium"],
        "levis stadium in santa clara",
        0.0,
        0.5714285714285715,
    ),
    (
        "theatre and anthem",
        &["the theatre", "anthem"],
        "theatre and anthem",
        0.0,
        0.5,
    ),
    (
        "New York New York",
        &["New York"],
        "new york new york",
        0.0,
        0.6666666666666666,
    ),
    (
        "the the cat sat on the mat",
        &["cat on mat", "a cat"],
        "cat sat on mat",
        0.0,
        0.8571428571428571,
    ),
    ("U.S.A.", &["USA"], "usa", 1.0, 1.0),
    (
        "half-time show",
        &["halftime show"],
        "halftime show",
        1.0,
        1.0,
    ),
    (
        "Über Straße",
        &["über strasse", "ÜBER STRASSE"],
        "über straße",
        0.0,
        0.5,
    ),
    (
        "“quoted” text — dash",
        &["quoted text dash", "“quoted” text"],
        "“quoted” text — dash",
        0.0,
        0.6666666666666666,
    ),
    (
        "  spaced\tout\nanswer  ",
        &["spaced out answer"],
        "spaced out answer",
        1.0,
        1.0,
    ),
    ("Ωmega the_end", &["ωmega theend"], "ωmega theend", 1.0, 1.0),
    (
        "1,000,000 dollars",
        &["1000000 dollars", "one million dollars"],
        "1000000 dollars",
        1.0,
        1.0,
    ),
    (
        "An apple a day",
        &["apple day", "an apple"],
        "apple day",
        1.0,
        1.0,
    ),
    (
        "Beyoncé Knowles",
        &["Beyonce Knowles"],
        "beyoncé knowles",
        0.0,
        0.5,
    ),
    (
        "x y z x y z",
        &["x x y", "z"],
        "x y z x y z",
        0.0,
        0.6666666666666666,
    ),
    ("the€ price", &["€ price"], "€ price", 1.0, 1.0),
    ("a_b c", &["ab c"], "ab c", 1.0, 1.0),
    (
        "the-answer is an-swer",
        &["theanswer", "answer"],
        "theanswer is answer",
        0.0,
        0.5,
    ),
];

#[test]
fn exact_match_and_f1_agree_with_the_squad_script() {
    for &(prediction, golds, normalised, em, f1) in SQUAD_V11 {
        assert_eq!(normalize_answer(prediction), normalised, "{prediction:?}");
        let got_em = best_over_golds(exact_match, prediction, golds).unwrap();
        let got_f1 = best_over_golds(token_f1, prediction, golds).unwrap();
        assert!(close(got_em, em), "EM of {prediction:?}: {got_em} vs {em}");
        assert!(close(got_f1, f1), "F1 of {prediction:?}: {got_f1} vs {f1}");
    }
}

#[test]
fn normalisation_follows_squad() {
    assert_eq!(
        normalize_answer("The  Quick, brown FOX!"),
        "quick brown fox"
    );
    // Articles only as whole words: not inside `theatre`, `another` or `anna`.
    assert_eq!(
        normalize_answer("theatre another anna"),
        "theatre another anna"
    );
    // Punctuation goes first, so `the-end` is one word `theend`.
    assert_eq!(normalize_answer("the-end"), "theend");
    assert_eq!(normalize_answer(" a  an\tthe\n"), "");
    assert_eq!(normalize_answer(""), "");
    assert_eq!(answer_tokens("Hello, World"), vec!["hello", "world"]);
}

#[test]
fn exact_match_by_hand() {
    assert_eq!(exact_match("The Beatles", "beatles"), 1.0);
    assert_eq!(exact_match("Beatles!", "The Rolling Stones"), 0.0);
    // Both normalise to nothing: equal.
    assert_eq!(exact_match("the", "?!"), 1.0);
}

#[test]
fn token_f1_by_hand() {
    // prediction [cat sat on mat] vs gold [cat on mat]: common 3, P 3/4, R 1, F1 6/7.
    assert!(close(
        token_f1("the cat sat on the mat", "a cat on a mat"),
        6.0 / 7.0
    ));
    // Counts: [x x y] vs [x y y]: common x1 y1 = 2, P = R = 2/3.
    assert!(close(token_f1("x x y", "x y y"), 2.0 / 3.0));
    assert_eq!(token_f1("alpha", "beta"), 0.0);
    // Edge cases: both empty 1, one empty 0.
    assert_eq!(token_f1("", "the"), 1.0);
    assert_eq!(token_f1("", "answer"), 0.0);
    assert_eq!(token_f1("answer", ""), 0.0);
}

#[test]
fn several_golds_take_the_best_and_none_is_undefined() {
    let golds = ["Paris", "the city of Paris"];
    assert_eq!(best_over_golds(exact_match, "paris", &golds), Some(1.0));
    // [city paris] vs [city of paris]: common 2, P 1, R 2/3, F1 0.8.
    let f1 = best_over_golds(token_f1, "city Paris", &golds).unwrap();
    assert!(close(f1, 0.8), "{f1}");
    let none: [&str; 0] = [];
    assert_eq!(best_over_golds(token_f1, "paris", &none), None);
}

#[test]
fn rouge_l_by_hand() {
    // gen [police killed gunman], gold [police kill gunman]: LCS [police gunman] = 2,
    // 2·2 / (3 + 3) = 2/3.
    assert!(close(
        rouge_l_f1("police killed the gunman", "the police kill the gunman"),
        2.0 / 3.0
    ));
    // Order matters, unlike token F1: [y x] vs [x y]: LCS 1 → 2·1/4 = 0.5; F1 is 1.
    assert!(close(rouge_l_f1("y x", "x y"), 0.5));
    assert_eq!(token_f1("y x", "x y"), 1.0);
    // A gold that is a subsequence: LCS = len gold = 2, 2·2 / (5 + 2).
    assert!(close(rouge_l_f1("p q r s t", "q s"), 2.0 * 2.0 / 7.0));
    assert_eq!(rouge_l_f1("same words", "Same words."), 1.0);
    assert_eq!(rouge_l_f1("", ""), 1.0);
    assert_eq!(rouge_l_f1("word", "the"), 0.0);
}

#[test]
fn answer_relevance_is_f1_with_the_question() {
    // answer [eiffel tower is in paris], question [where is eiffel tower]:
    // common 3 (eiffel tower is), P 3/5, R 3/4, F1 = 2·0.6·0.75/1.35 = 2/3.
    let r = answer_relevance("The Eiffel Tower is in Paris", "Where is the Eiffel Tower?");
    assert!(close(r, 2.0 / 3.0), "{r}");
}

#[test]
fn support_metrics_by_hand() {
    let retrieved = [
        "The Eiffel Tower was completed in 1889.",
        "It stands in Paris, France.",
    ];
    // Answer tokens [tower was completed in 1889 by gustave eiffel]: 8 tokens.
    // In the retrieved text: tower was completed in 1889 eiffel = 6 → density 6/8.
    // Content words (without was, in, by): [tower completed 1889 gustave eiffel] = 5,
    // supported tower completed 1889 eiffel = 4 → coverage 4/5.
    let answer = "The tower was completed in 1889 by Gustave Eiffel";
    assert!(close(support_density(answer, &retrieved).unwrap(), 0.75));
    assert!(close(hallucination_rate(answer, &retrieved).unwrap(), 0.25));
    assert!(close(support_coverage(answer, &retrieved).unwrap(), 0.8));
    // Repetition counts: [paris paris london] → 2/3.
    assert!(close(
        support_density("Paris, Paris, London", &retrieved).unwrap(),
        2.0 / 3.0
    ));
    // No tokens, or no content words: undefined.
    assert_eq!(support_density("the ...", &retrieved), None);
    assert_eq!(hallucination_rate("", &retrieved), None);
    assert_eq!(support_coverage("it was in", &retrieved), None);
    assert_eq!(support_density("it was in", &retrieved), Some(1.0));
    // Nothing retrieved supports nothing.
    let nothing: [&str; 0] = [];
    assert_eq!(support_density("Paris", &nothing), Some(0.0));
    assert_eq!(hallucination_rate("Paris", &nothing), Some(1.0));
    // Tokens are not formed across passages: `pa` + `ris` is no `paris`.
    assert_eq!(support_density("paris", &["pa", "ris"]), Some(0.0));
}

#[test]
fn score_answer_fills_what_is_defined() {
    let golds = ["1889"];
    let passages = ["Completed in 1889."];
    let scores = score_answer(&AnswerInput {
        answer: "In 1889",
        golds: &golds,
        question: Some("When was it completed?"),
        retrieved: Some(&passages),
    });
    assert_eq!(scores.exact_match, Some(0.0));
    // [in 1889] vs [1889]: P 1/2, R 1, F1 2/3; LCS 1 → 2/3 as well.
    assert!(close(scores.token_f1.unwrap(), 2.0 / 3.0));
    assert!(close(scores.rouge_l_f1.unwrap(), 2.0 / 3.0));
    assert_eq!(scores.answer_relevance, Some(0.0));
    // Content words [1889] all supported; tokens [in 1889] both.
    assert_eq!(scores.support_coverage, Some(1.0));
    assert_eq!(scores.support_density, Some(1.0));
    assert_eq!(scores.hallucination_rate, Some(0.0));

    let none: [&str; 0] = [];
    let bare = score_answer(&AnswerInput {
        answer: "In 1889",
        golds: &none,
        question: None,
        retrieved: None,
    });
    assert_eq!(bare, AnswerScores::default());
}

#[test]
fn stopwords_are_sorted_normalised_and_without_articles() {
    assert!(
        STOPWORDS.windows(2).all(|w| w[0] < w[1]),
        "sorted, no repeats"
    );
    for w in STOPWORDS {
        assert_eq!(normalize_answer(w), *w, "{w} survives normalisation");
    }
    assert!(!is_stopword("the") && is_stopword("of"));
}
