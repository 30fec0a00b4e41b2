use super::*;

const PATH: &str = "run.trec";

/// A run of 40 queries whose lines come in two interleaved passes (every query appears in two
/// segments), with blank lines, CRLF endings and ties in score.
fn run_text() -> String {
    let mut text = String::new();
    for pass in 0..2 {
        for q in 0..40 {
            for d in 0..6 {
                let doc = format!("d{}", q * 100 + pass * 10 + d);
                let score = if d % 3 == 0 { 0.5 } else { d as f64 / 7.0 };
                let end = if d == 2 { "\r\n" } else { "\n" };
                text.push_str(&format!("q{q} Q0 {doc} {d} {score} tag{end}"));
            }
            if q % 7 == 0 {
                text.push_str("  \n");
            }
        }
    }
    text
}

fn ranking(run: &Run) -> Vec<(String, Vec<(String, f64)>)> {
    run.queries
        .iter()
        .map(|q| {
            let hits = q
                .hits
                .iter()
                .map(|h| (h.document.to_string(), h.score))
                .collect();
            (q.id.clone(), hits)
        })
        .collect()
}

fn run_error(text: &[u8], pieces: usize) -> String {
    run(Path::new(PATH), text, pieces).unwrap_err().to_string()
}

fn qrels_error(text: &[u8], pieces: usize) -> String {
    qrels(Path::new("qrels.txt"), text, pieces)
        .unwrap_err()
        .to_string()
}

#[test]
fn fields_are_exactly_n_whitespace_separated_words() {
    assert_eq!(fields::<3>("a b c"), Some(["a", "b", "c"]));
    assert_eq!(fields::<3>("\t a  b\tc  "), Some(["a", "b", "c"]));
    assert_eq!(fields::<3>("a b"), None);
    assert_eq!(fields::<3>("a b c d"), None);
    assert_eq!(fields::<1>(""), None);
    assert_eq!(fields::<1>("é"), Some(["é"]));
}

#[test]
fn a_run_parses_the_same_in_any_number_of_pieces() {
    let text = run_text();
    let whole = run(Path::new(PATH), text.as_bytes(), 1).unwrap();
    assert_eq!(whole.queries.len(), 40);
    let q3 = &whole.queries[3];
    assert_eq!(q3.id, "q3");
    assert_eq!(q3.hits.len(), 12);
    // Score descending (single precision), ties by docid descending.
    assert_eq!(q3.hits[0].document, "d315");
    assert!(q3.hits.windows(2).all(|w| w[0].score >= w[1].score));
    let tied: Vec<&str> = q3.hits[..4].iter().map(|h| h.document.as_str()).collect();
    assert_eq!(tied, ["d315", "d305", "d314", "d304"]);
    for pieces in 2..=9 {
        let cut = run(Path::new(PATH), text.as_bytes(), pieces).unwrap();
        assert_eq!(ranking(&cut), ranking(&whole), "{pieces} pieces");
    }
}

#[test]
fn the_first_bad_line_is_named_whatever_the_pieces() {
    let mut lines: Vec<String> = run_text().lines().map(str::to_string).collect();
    lines[300] = "q1 Q0 d1 1 NaN tag".into();
    lines[400] = "q1 Q0 d1 1".into();
    let text = lines.join("\n");
    for pieces in 1..=9 {
        assert_eq!(
            run_error(text.as_bytes(), pieces),
            "run.trec:301: score `NaN` is not a finite number",
            "{pieces} pieces"
        );
    }
    let mut bytes = run_text().into_bytes();
    let at = bytes.len() / 2;
    let line = bytes[..at].iter().filter(|b| **b == b'\n').count() + 1;
    bytes[at] = 0xFF;
    for pieces in 1..=9 {
        assert_eq!(
            run_error(&bytes, pieces),
            format!("run.trec:{line}: not UTF-8 text")
        );
    }
}

#[test]
fn a_document_twice_for_a_query_is_refused_whatever_its_scores() {
    let text = "q1 Q0 a 1 0.9 t\nq1 Q0 b 2 0.8 t\nq2 Q0 a 1 0.9 t\nq1 Q0 a 3 0.1 t\n";
    assert_eq!(
        run_error(text.as_bytes(), 1),
        "run.trec: query q1 lists document a twice"
    );
}

#[test]
fn qrels_keep_file_order_and_name_the_first_repeat() {
    let mut text = String::new();
    for q in 0..30 {
        for d in 0..5 {
            text.push_str(&format!("q{q} 0 d{d} {}\n", d % 3));
        }
    }
    for pieces in 1..=9 {
        let judgments = qrels(Path::new("qrels.txt"), text.as_bytes(), pieces).unwrap();
        assert_eq!(judgments.queries.len(), 30);
        let q7 = &judgments.queries[7];
        assert_eq!(q7.id, "q7");
        let docs: Vec<(&str, i64)> = q7
            .references
            .iter()
            .map(|r| (r.document.as_str(), r.grade))
            .collect();
        assert_eq!(
            docs,
            [("d0", 0), ("d1", 1), ("d2", 2), ("d3", 0), ("d4", 1)]
        );
    }
    // Line 151 repeats line 103 (q20 d2); line 152 repeats line 11 (q2 d0) but comes later.
    text.push_str("q20 0 d2 1\nq2 0 d0 1\n");
    for pieces in 1..=9 {
        assert_eq!(
            qrels_error(text.as_bytes(), pieces),
            "qrels.txt:151: query q20 judges document d2 twice (first on line 103)"
        );
    }
    assert_eq!(
        qrels_error(b"q1 0 d1 x\n", 1),
        "qrels.txt:1: grade `x` is not an integer"
    );
}
