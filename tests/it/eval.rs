//! `ragdbeval eval` and `eval compare` through the binary: RAG ground-truth JSONL
//! with fuzzy page matching, rejection queries and categories; TREC inputs; A/B comparisons
//! with a known difference and without one; bad input.

use std::path::Path;

use crate::common::{files_in, ragdbeval, stderr, stdout, succeeds};

/// RAG ground-truth JSONL lines (Q001 as its schema shows it, Q002 and Q009 from its
/// appendix, Q009 a rejection by its category), one line each.
const GROUND_TRUTH: &str = r#"{"query_id": "Q001", "query": "How do I calculate implied volatility using Black-Scholes?", "category": "options_derivatives", "difficulty": "medium", "is_rejection": false, "gold_references": [{"document": "Black Scholes with Python (Van Der Post 2024).pdf", "page": 45, "relevance": 3}, {"document": "Option Volatility and Pricing (Natenberg 2015).pdf", "page": 112, "relevance": 3}], "expected_answer_gist": "IV calculation via Newton-Raphson or bisection on Black-Scholes formula"}
{"query_id": "Q002", "query": "What is the difference between delta and gamma in options trading?", "category": "options_derivatives", "difficulty": "easy", "gold_references": [{"document": "Options Greeks.pdf", "page": 7, "relevance": 2}]}
{"query_id": "Q009", "query": "What is the current Federal Reserve interest rate?", "category": "rejection", "difficulty": "adversarial"}
"#;

/// A run: Q001 finds both references (one a page off, names in other case and without the
/// extension) at ranks 1 and 3, Q002 misses (page 9 is two off), Q009 returns nothing.
const RUN: &str = r#"{"query_id": "Q001", "results": [{"document": "black scholes with python (van der post 2024)", "page": 46, "score": 0.9}, {"document": "Unrelated.pdf", "page": 1, "score": 0.5}, {"document": "OPTION VOLATILITY AND PRICING (NATENBERG 2015).PDF", "page": 112, "score": 0.4}], "latency_ms": 120}
{"query_id": "Q002", "results": [{"document": "Options Greeks.pdf", "page": 9, "score": 0.8}], "latency_ms": 80}
{"query_id": "Q009", "results": [], "latency_ms": 40}
"#;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Runs `eval --qrels QRELS --run RUN EXTRA --json OUT` in `dir`, which must succeed: its output
/// and the JSON file it wrote at `out`.
fn eval_to_json(
    dir: &Path,
    (qrels, run): (&str, &str),
    extra: &[&str],
    out: &Path,
) -> (std::process::Output, serde_json::Value) {
    let json_path = out.to_str().unwrap();
    let args = argv!["eval --qrels", qrels, "--run", run, "--json", json_path];
    let o = succeeds(dir, &[&args[..], extra].concat());
    (o, json(out))
}

#[test]
fn rag_ground_truth_is_matched_fuzzily_with_rejections_and_categories() {
    let dir = tempfile::tempdir().unwrap();
    let qrels = write(dir.path(), "gt.jsonl", GROUND_TRUTH);
    let run = write(dir.path(), "run.jsonl", RUN);
    let out = dir.path().join("eval.json");
    let (o, e) = eval_to_json(dir.path(), (&qrels, &run), &["--bands"], &out);
    let text = stdout(&o);
    assert!(text.contains("hit@5 band"), "{text}");
    let agg = &e["aggregate"];
    // Scored: Q001 and Q002 (Q009 is a rejection).
    assert_eq!(agg["scored"], 2);
    // Q001 hits at rank 1, Q002 misses: Hit@5 0.5, MRR@5 0.5.
    assert_eq!(agg["metrics"]["hit@5"], 0.5);
    assert_eq!(agg["metrics"]["mrr@5"], 0.5);
    // Q001 recall@5 = 1 (both references), Q002 0.
    assert_eq!(agg["metrics"]["recall@5"], 0.5);
    // Q001 NDCG@5: DCG = 3 + 3/log2(4) = 4.5, IDCG = 3 + 3/log2(3); Q002 0.
    let q1 = 4.5 / (3.0 + 3.0 / 3f64.log2());
    let ndcg = agg["metrics"]["ndcg@5"].as_f64().unwrap();
    assert!(
        (ndcg - ((q1 / 2.0) * 1e4).round() / 1e4).abs() < 1e-9,
        "{ndcg}"
    );
    assert_eq!(agg["rejection_queries"], 1);
    assert_eq!(agg["rejection_accuracy"], 1.0);
    // Latency over every query that carries one: 40, 80, 120 ms.
    assert_eq!(e["latency_ms"]["p50"], 80.0);
    let cats = &e["by_category"];
    assert_eq!(cats["options_derivatives"]["queries"], 2);
    assert_eq!(cats["rejection"]["rejection_accuracy"], 1.0);
    assert_eq!(e["by_difficulty"]["easy"]["metrics"]["hit@5"], 0.0);
    let q001 = &e["per_query"][0];
    assert_eq!(q001["first_relevant_rank"], 1);
    assert_eq!(q001["relevant_returned"].as_array().unwrap().len(), 2);
    // No relevant judgment for the rejection query: its recall is vacuous, kept out of means.
    assert_eq!(e["per_query"][2]["metrics"]["recall@5"], 1.0);

    // With a score threshold, a rejection query that returns weak results still rejects.
    let weak = RUN.replace(
        r#""query_id": "Q009", "results": []"#,
        r#""query_id": "Q009", "results": [{"document": "Fed.pdf", "page": 1, "score": 0.1}]"#,
    );
    let run = write(dir.path(), "weak.jsonl", &weak);
    for (threshold, accuracy) in [(None, 0.0), (Some("0.2"), 1.0)] {
        let mut args = vec!["eval", "--qrels", &qrels, "--run", &run, "--json"];
        args.push(out.to_str().unwrap());
        if let Some(t) = threshold {
            args.extend(["--reject-below", t]);
        }
        succeeds(dir.path(), &args);
        assert_eq!(json(&out)["aggregate"]["rejection_accuracy"], accuracy);
    }
}

/// TREC qrels and run (trec_eval's conventions are held to pytrec_eval by
/// scripts/check_eval_trec.py; this is the hand-computed smoke test), and the outputs.
#[test]
fn trec_inputs_and_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let qrels = write(
        dir.path(),
        "q.txt",
        "q1 0 d1 2\nq1 0 d2 1\nq1 0 d9 0\nq2 0 d3 1\n",
    );
    // q1's d2 and d5 tie: trec_eval orders ties by docid, descending (d5 first).
    let run = write(
        dir.path(),
        "r.trec",
        "q1 Q0 d2 1 0.8 t\nq1 Q0 d5 2 0.8 t\nq1 Q0 d1 3 0.7 t\nq3 Q0 d4 1 0.5 t\n",
    );
    let (j, c, m) = (
        dir.path().join("e.json"),
        dir.path().join("e.csv"),
        dir.path().join("e.md"),
    );
    succeeds(
        dir.path(),
        &argv![
            "eval --qrels",
            &qrels,
            "--run",
            &run,
            "-k 1,3 --json",
            j.to_str().unwrap(),
            "--csv",
            c.to_str().unwrap(),
            "--md",
            m.to_str().unwrap()
        ],
    );
    let e = json(&j);
    let q1 = &e["per_query"][0]["metrics"];
    assert_eq!(q1["precision@1"], 0.0, "d5 ranks first");
    assert_eq!(q1["rr"], 0.5);
    assert_eq!(q1["recall@3"], 1.0);
    // q2 is judged but missing from the run: scored as empty (out of trec_eval's means); q3
    // is not judged: ignored.
    assert_eq!(e["missing_from_run"][0], "q2");
    assert_eq!(e["not_judged"][0], "q3");
    assert_eq!(e["per_query"][1]["metrics"]["hit@3"], 0.0);
    let csv = std::fs::read_to_string(&c).unwrap();
    assert!(
        csv.starts_with("query_id,category,difficulty,is_rejection"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 3);
    let md = std::fs::read_to_string(&m).unwrap();
    assert!(md.contains("| precision |"), "{md}");
}

/// Which queries the means average over: trec_eval's default (the judged queries the run
/// answers, one judged only non-relevant included, its recall 0), trec_eval -c (every judged
/// query) and the answerable queries; each named in the JSON and on the terminal.
#[test]
fn trec_means_follow_trec_eval_and_name_their_convention() {
    let dir = tempfile::tempdir().unwrap();
    // q1: two relevant; q2: judged, missing from the run; q4: judged only non-relevant.
    let qrels = write(
        dir.path(),
        "q.txt",
        "q1 0 d1 2\nq1 0 d2 1\nq2 0 d3 1\nq4 0 d7 0\n",
    );
    let run = write(
        dir.path(),
        "r.trec",
        "q1 Q0 d1 1 0.9 t\nq1 Q0 d5 2 0.8 t\nq4 Q0 d7 1 0.9 t\n",
    );
    let j = dir.path().join("e.json");
    // precision@1: q1 1, q2 0 (empty), q4 0; recall@3: q1 0.5, q2 0, q4 0 (trec_eval's).
    for (means, scored, p1, r3, counted) in [
        (None, 2, 0.5, 0.25, [true, false, true]),
        (
            Some("trec_eval-c"),
            3,
            1.0 / 3.0,
            0.5 / 3.0,
            [true, true, true],
        ),
        (Some("answerable"), 2, 0.5, 0.25, [true, true, false]),
    ] {
        let mut args = vec!["eval", "--qrels", &qrels, "--run", &run, "-k", "1,3"];
        args.extend(["--full-precision", "--json", j.to_str().unwrap()]);
        if let Some(m) = means {
            args.extend(["--means", m]);
        }
        let o = succeeds(dir.path(), &args);
        let name = means.unwrap_or("trec_eval");
        assert!(stdout(&o).contains(&format!("({name})")), "{}", stdout(&o));
        let e = json(&j);
        assert_eq!(e["averaging"], name);
        assert_eq!(e["aggregate"]["scored"], scored, "{name}");
        let m = &e["aggregate"]["metrics"];
        assert!(
            (m["precision@1"].as_f64().unwrap() - p1).abs() < 1e-12,
            "{name}: {m}"
        );
        assert!(
            (m["recall@3"].as_f64().unwrap() - r3).abs() < 1e-12,
            "{name}: {m}"
        );
        let flags: Vec<bool> = e["per_query"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["counted"].as_bool().unwrap())
            .collect();
        assert_eq!(flags, counted, "{name}");
        let q4 = &e["per_query"][2]["metrics"]["recall@3"];
        assert_eq!(
            q4.as_f64().unwrap(),
            if name == "answerable" { 1.0 } else { 0.0 }
        );
    }
}

/// Query `q`'s `depth` results as TREC run lines, its relevant document `rel{q}` at `rank`
/// (scores descending with rank).
fn push_ranked(text: &mut String, q: usize, rank: usize, depth: usize) {
    for r in 1..=depth {
        let doc = if r == rank {
            format!("rel{q}")
        } else {
            format!("x{q}_{r}")
        };
        text.push_str(&format!("q{q} Q0 {doc} {r} {} t\n", 2 * depth - r));
    }
}

/// Per query `n` relevant documents d0..; run B finds them higher than run A on most queries.
fn ab_files(dir: &Path) -> (String, String, String) {
    let (mut qrels, mut a, mut b) = (String::new(), String::new(), String::new());
    for q in 0..60 {
        qrels.push_str(&format!("q{q} 0 rel{q} 1\n"));
        let a_rank = 2 + q % 5;
        let b_rank = if q % 10 == 0 { a_rank } else { 1 };
        push_ranked(&mut a, q, a_rank, 10);
        push_ranked(&mut b, q, b_rank, 10);
    }
    (
        write(dir, "ab.qrels", &qrels),
        write(dir, "a.trec", &a),
        write(dir, "b.trec", &b),
    )
}

#[test]
fn eval_compare_finds_a_known_difference_and_none_between_identical_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (qrels, a, b) = ab_files(dir.path());
    let out = dir.path().join("ab.json");
    succeeds(
        dir.path(),
        &argv![
            "eval compare",
            &a,
            &b,
            "--qrels",
            &qrels,
            "--format json --out",
            out.to_str().unwrap()
        ],
    );
    let c = json(&out);
    assert_eq!(c["primary"], "ndcg@10");
    assert_eq!(c["winner"], "b");
    let mrr = c["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "mrr@5")
        .unwrap();
    assert_eq!(mrr["verdict"], "better");
    assert!(mrr["wilcoxon_p"].as_f64().unwrap() < 1e-6);
    assert_eq!(c["outcomes"]["win"], 54);
    assert_eq!(c["outcomes"]["draw"], 6);
    assert_eq!(c["bootstrap_resamples"], 1000);

    // Identical runs: no difference, every query a draw; saved evaluations work as inputs.
    let saved = dir.path().join("a.eval.json");
    eval_to_json(dir.path(), (&qrels, &a), &[], &saved);
    let saved = saved.to_str().unwrap();
    let o = succeeds(
        dir.path(),
        &argv!["eval compare", saved, &a, "--qrels", &qrels, "--format md"],
    );
    let md = stdout(&o);
    assert!(md.contains("# A/B Test Report"), "{md}");
    assert!(
        md.contains("**Winner**: none: no significant difference"),
        "{md}"
    );
    assert!(
        md.contains("60 queries)**: 0 win, 0 loss, 60 draw, 0 regression"),
        "{md}"
    );
}

/// Twelve queries with one relevant document each: R1 finds it at rank 2 or 3, R2 at rank 1
/// on q0–q5 (else as R1), R3 at rank 1 everywhere. On MRR@5 the Wilcoxon test's exact p is
/// 2/2^6 = 0.03125 for R2 against R1 and R3 against R2 (six better, six equal), 2/2^12 for R3
/// against R1: Holm across the 3 pairs makes them 0.0625, 0.0625 and 6/4096.
fn three_run_files(dir: &Path) -> (String, [String; 3]) {
    let mut qrels = String::new();
    let mut runs = [String::new(), String::new(), String::new()];
    for q in 0..12 {
        qrels.push_str(&format!("q{q} 0 rel{q} 1\n"));
        let base = 2 + q % 2;
        for (text, rank) in runs.iter_mut().zip([base, if q < 6 { 1 } else { base }, 1]) {
            push_ranked(text, q, rank, 5);
        }
    }
    let [r1, r2, r3] = &runs;
    (
        write(dir, "three.qrels", &qrels),
        [
            write(dir, "r1.trec", r1),
            write(dir, "r2.trec", r2),
            write(dir, "r3.trec", r3),
        ],
    )
}

/// A metric's entry in an `eval compare --format json` document.
fn metric<'j>(c: &'j serde_json::Value, name: &str) -> &'j serde_json::Value {
    c["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == name)
        .unwrap()
}

#[test]
fn eval_compare_of_three_runs_holm_adjusts_across_the_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let (qrels, [r1, r2, r3]) = three_run_files(dir.path());
    let out = dir.path().join("three.json");
    let out_s = out.to_str().unwrap();
    let args = argv![
        "eval compare",
        &r1,
        &r2,
        &r3,
        "--qrels",
        &qrels,
        "--format json --out",
        out_s
    ];
    succeeds(dir.path(), &args);
    let c = json(&out);
    assert_eq!(c["adjustment"], "holm");
    assert_eq!(c["pair_count"], 3);
    let mrr = &metric(&c, "mrr@5")["pairs"];
    let field = |i: usize, key: &str| mrr[i][key].as_f64().unwrap();
    assert_eq!(field(0, "wilcoxon_p"), 0.031_25);
    assert_eq!(field(0, "wilcoxon_p_holm"), 0.0625);
    assert!((field(1, "wilcoxon_p_holm") - 6.0 / 4096.0).abs() < 1e-15);
    assert_eq!(field(2, "wilcoxon_p_holm"), 0.0625);
    // Significant alone, not once the family of three pairs is accounted for.
    assert_eq!(mrr[0]["verdict"], "no_significant_difference");
    assert_eq!(mrr[1]["verdict"], "better");
    assert_eq!(c["pairs"][0]["winner"], "no_significant_difference");
    assert_eq!(c["pairs"][1]["winner"], "b");

    // The same pair on its own: the raw p, and a significant difference.
    let two = dir.path().join("two.json");
    let args = argv![
        "eval compare",
        &r1,
        &r2,
        "--qrels",
        &qrels,
        "--format json --out",
        two.to_str().unwrap()
    ];
    succeeds(dir.path(), &args);
    let c = json(&two);
    let mrr = metric(&c, "mrr@5");
    assert_eq!(mrr["wilcoxon_p"], 0.031_25);
    assert_eq!(mrr["verdict"], "better");
    assert!(c.get("adjustment").is_none());

    let text = stdout(&succeeds(
        dir.path(),
        &argv!["eval compare", &r1, &r2, &r3, "--qrels", &qrels],
    ));
    for needle in [
        "Holm-adjusted across 3 pairs",
        "mrr@5: p-values Holm-adjusted across 3 pairs",
        "Wilcoxon p (Holm)",
        "0.0625",
        "no significant difference",
    ] {
        assert!(text.contains(needle), "{needle}\n{text}");
    }
    let md = stdout(&succeeds(
        dir.path(),
        &argv![
            "eval compare",
            &r1,
            &r2,
            &r3,
            "--qrels",
            &qrels,
            "--format md"
        ],
    ));
    assert!(md.contains("# Pairwise Comparison Report: 3 runs"), "{md}");
    assert!(md.contains("| R1 | R2 | 12 |"), "{md}");
}

#[test]
fn bad_input_is_one_error_line_and_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let good_q = write(dir.path(), "q.txt", "q1 0 d1 1\n");
    let good_r = write(dir.path(), "r.trec", "q1 Q0 d1 1 1.0 t\n");
    let out = dir.path().join("out.json");
    let out_s = out.to_str().unwrap();
    for (qrels, run, needle) in [
        (
            write(dir.path(), "bad.txt", "q1 0 d1\n"),
            good_r.clone(),
            "bad.txt:1: expected 4 columns",
        ),
        (
            write(dir.path(), "grade.txt", "q1 0 d1 x\n"),
            good_r.clone(),
            "grade `x` is not an integer",
        ),
        (
            good_q.clone(),
            write(dir.path(), "bad.trec", "q1 Q0 d1 1 nan t\n"),
            "bad.trec:1: score `nan`",
        ),
        (
            good_q.clone(),
            write(dir.path(), "dup.trec", "q1 Q0 d1 1 1 t\nq1 Q0 d1 2 0.5 t\n"),
            "lists document d1 twice",
        ),
        (
            write(
                dir.path(),
                "bad.jsonl",
                "{\"query_id\": \"Q1\",\n \"gold_references\": 3}\n",
            ),
            good_r.clone(),
            "bad.jsonl:2",
        ),
        (
            good_q.clone(),
            dir.path().join("missing.trec").display().to_string(),
            "cannot read",
        ),
    ] {
        let o = ragdbeval(
            dir.path(),
            &["eval", "--qrels", &qrels, "--run", &run, "--json", out_s],
        );
        assert_eq!(o.status.code(), Some(2), "{needle}");
        let err = stderr(&o);
        assert!(err.contains(needle), "{needle}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!out.exists());
    }
    let before = files_in(dir.path()).len();
    let o = ragdbeval(dir.path(), &["eval", "compare", &good_r, &good_r]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--qrels"), "{}", stderr(&o));
    assert_eq!(files_in(dir.path()).len(), before);
}

/// Runs that carry answers are scored with the answer metrics, against the gold
/// answers of the judgments and the text of the retrieved results.
#[test]
fn answers_are_scored_when_the_run_carries_them() {
    let dir = tempfile::tempdir().unwrap();
    let qrels = write(
        dir.path(),
        "gt.jsonl",
        r#"{"query_id": "Q1", "query": "Who wrote Option Volatility and Pricing?", "gold_references": [{"document": "natenberg.pdf", "page": 1}], "gold_answers": ["Sheldon Natenberg"]}
{"query_id": "Q2", "query": "What is delta?", "gold_references": [{"document": "greeks.pdf", "page": 3}], "answer": "the rate of change of the option price"}
"#,
    );
    let run = write(
        dir.path(),
        "run.jsonl",
        r#"{"query_id": "Q1", "results": [{"document": "natenberg.pdf", "page": 1, "score": 0.9, "text": "Option Volatility and Pricing by Sheldon Natenberg"}], "answer": "Sheldon Natenberg."}
{"query_id": "Q2", "results": [{"document": "greeks.pdf", "page": 3, "score": 0.8, "text": "delta measures the change of the option price"}], "answer": "The option price change rate"}
"#,
    );
    let out = dir.path().join("e.json");
    let (_, e) = eval_to_json(dir.path(), (&qrels, &run), &[], &out);
    let q1 = &e["per_query"][0]["metrics"];
    // Normalisation drops case and punctuation: an exact match.
    assert_eq!(q1["exact_match"], 1.0);
    assert_eq!(q1["token_f1"], 1.0);
    assert_eq!(q1["support_density"], 1.0);
    assert_eq!(q1["hallucination_rate"], 0.0);
    let q2 = &e["per_query"][1]["metrics"];
    assert_eq!(q2["exact_match"], 0.0);
    // Answer {option, price, change, rate} against gold {rate, of, change, of, option, price}
    // (after dropping "the"): 4 shared, P = 4/4, R = 4/6, F1 = 0.8.
    assert_eq!(q2["token_f1"], 0.8);
    // "rate" is not in the retrieved text: 3 of 4 answer tokens supported.
    assert_eq!(q2["support_density"], 0.75);
    assert_eq!(e["aggregate"]["metrics"]["exact_match"], 0.5);
}
