//! `bm25` against BM25 by hand, its analyzer against ragdbeval's tokens, and its top-k against
//! the exact sparse truth of the same texts.

use tantivy::tokenizer::TokenizerManager;

use super::index::{TOKENIZER, analyze};
use crate::engine::hybrid::{HybridData, HybridEngine, HybridQuery, HybridSpec};
use crate::engine::{ConnectOptions, EngineError, Neighbor};
use crate::groundtruth::sparse::exact_sparse;
use crate::params::{ParamMap, ParamValue};
use crate::sparse::bm25::{Bm25Index, Bm25Params, tokens};

/// An engine with `texts` loaded and committed, its index in `dir`.
fn built(texts: &[String], build: ParamMap, dir: &std::path::Path) -> Box<dyn HybridEngine> {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let encoded = Bm25Index::fit(&refs, Bm25Params::default());
    let mut engine = super::open(&ConnectOptions::default()).expect("open");
    engine
        .create(&HybridSpec {
            name: "t".into(),
            dense: None,
            sparse_dim: encoded.vectors.cols,
            expected_points: texts.len(),
            build_params: build,
            work_dir: dir.to_path_buf(),
        })
        .expect("create");
    let data = HybridData {
        sparse: &encoded.vectors,
        texts: Some(texts),
        dense: None,
    };
    // Two batches, as the runner sends them.
    let half = texts.len() / 2;
    engine.insert(&data, 0..half).expect("insert");
    engine.insert(&data, half..texts.len()).expect("insert");
    let report = engine.wait_until_ready().expect("ready");
    assert_eq!(report.points, Some(texts.len() as u64));
    engine
}

fn search(engine: &dyn HybridEngine, text: &str, k: usize) -> Vec<Neighbor> {
    let empty = crate::sparse::Csr::from_rows(0, &[vec![]]);
    let query = HybridQuery {
        sparse: empty.entries(0),
        text: Some(text),
        dense: None,
    };
    let mut out = Vec::new();
    engine.search_lexical(&query, k, &mut out).expect("search");
    out
}

fn strings(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|t| t.to_string()).collect()
}

#[test]
fn scores_are_bm25_by_hand() {
    let texts = strings(&[
        "the cat sat on the mat",    // 6 tokens
        "the dog sat",               // 3
        "cats and dogs",             // 3: no stemming, so no match
        "a cat and a dog and a cat", // 8
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = built(&texts, ParamMap::new(), dir.path());
    // N = 4, avgdl = 20 / 4 = 5; cat and dog are each in 2 documents.
    let idf = (1.0f64 + (4.0 - 2.0 + 0.5) / (2.0 + 0.5)).ln();
    let w = |tf: f64, dl: f64| tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / 5.0));
    let want = [
        (3, idf * (w(2.0, 8.0) + w(1.0, 8.0))),
        (1, idf * w(1.0, 3.0)),
        (0, idf * w(1.0, 6.0)),
    ];
    // "cat" twice in the query counts once; upper case is folded.
    let got = search(engine.as_ref(), "Cat dog, CAT!", 10);
    assert_eq!(got.iter().map(|n| n.id).collect::<Vec<_>>(), [3, 1, 0]);
    for (n, (id, score)) in got.iter().zip(want) {
        assert_eq!(n.id, id);
        assert!(
            (f64::from(n.score) - score).abs() < 1e-5 * score,
            "{n:?} vs {score}"
        );
    }
    // k cuts the list; a query of unknown or no tokens finds nothing.
    assert_eq!(search(engine.as_ref(), "cat dog", 1)[0].id, 3);
    assert!(search(engine.as_ref(), "zebra", 10).is_empty());
    assert!(search(engine.as_ref(), " ,;! ", 10).is_empty());
    // What the query parser would read as syntax is plain terms: "and" finds row 2 too.
    assert_eq!(search(engine.as_ref(), "dog AND -cat:", 10).len(), 4);
}

#[test]
fn ragdbeval_tokens_are_tantivys_default_analyzer() {
    let e39 = format!("{}z", "é".repeat(19)); // 39 bytes, 20 characters
    let text = format!(
        "Hello, WORLD! foo_bar snake_case_Name x2y 3.14 42nd l'été \t\n Ünïcode naïve CAFÉ \
         東京タワー、日本語。 Straße İstanbul emoji😀ok «quoted» MiXeD-CaSe {} {} {e39} {} end",
        "a".repeat(39),
        "b".repeat(40),
        "é".repeat(20), // 40 bytes
    );
    let mut analyzer = TokenizerManager::default()
        .get(TOKENIZER)
        .expect("tantivy has a default analyzer");
    let tantivy = analyze(&mut analyzer, &text);
    let ours: Vec<String> = tokens(&text).collect();
    assert_eq!(ours, tantivy);
    // The case is really varied: the long tokens, a split at `_`, CJK runs kept whole.
    assert!(ours.contains(&"a".repeat(39)) && !ours.contains(&"b".repeat(40)));
    assert!(ours.iter().any(|t| t == "snake") && ours.iter().any(|t| t == "東京タワー"));
    assert!(ours.iter().any(|t| t == "ünïcode"));
    // The limit counts bytes, not characters: 39 bytes of `é…z` kept, 40 bytes of `é` dropped.
    assert!(ours.contains(&e39) && !ours.contains(&"é".repeat(20)));
}

/// A deterministic stream of numbers (xorshift), for generated texts.
struct Numbers(u64);

impl Numbers {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    /// A word of a Zipf-like vocabulary: a few frequent ones, a long tail.
    fn word(&mut self, vocabulary: &[String]) -> String {
        let i = self
            .below(vocabulary.len())
            .min(self.below(vocabulary.len()));
        vocabulary[i].clone()
    }
}

#[test]
fn top_ten_is_the_exact_sparse_top_ten() {
    let mut numbers = Numbers(0x9E37_79B9_7F4A_7C15);
    let vocabulary: Vec<String> = (0..120).map(|i| format!("w{i}")).collect();
    // At most 40 tokens a text: tantivy's field norms are then the exact lengths.
    let texts: Vec<String> = (0..200)
        .map(|_| {
            let n = 3 + numbers.below(38);
            let words: Vec<String> = (0..n).map(|_| numbers.word(&vocabulary)).collect();
            words.join(if numbers.below(2) == 0 { " " } else { ", " })
        })
        .collect();
    let queries: Vec<String> = (0..60)
        .map(|_| {
            let n = 1 + numbers.below(4);
            let mut words: Vec<String> = (0..n).map(|_| numbers.word(&vocabulary)).collect();
            words.push("unseen".into());
            words.join(" ")
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let encoded = Bm25Index::fit(&refs, Bm25Params::default());
    let query_refs: Vec<&str> = queries.iter().map(String::as_str).collect();
    let query_vectors = encoded.queries(&query_refs);
    let k = 10;
    let truth = exact_sparse(&encoded.vectors, &query_vectors, k);

    // Two writer threads: two segments, whose document order is not the row order.
    let mut build = ParamMap::new();
    build.insert("threads".into(), ParamValue::Int(2));
    build.insert("writer_heap_mb".into(), ParamValue::Int(40));
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = built(&texts, build, dir.path());

    let (mut agree, mut positions) = (0, 0);
    for (q, text) in queries.iter().enumerate() {
        let got = search(engine.as_ref(), text, k);
        let want = truth.ids_of(q);
        let row = query_vectors.entries(q);
        let exact = |id: u64| row.dot(&encoded.vectors.entries(id as usize));
        for (slot, &id) in want.iter().enumerate() {
            if id == u64::MAX {
                assert_eq!(
                    got.len(),
                    slot,
                    "query {q}: more hits than rows sharing a term"
                );
                break;
            }
            positions += 1;
            let Some(n) = got.get(slot) else { continue };
            // The same row, or one of exactly the same score (a tie the two order alike
            // only up to f32 rounding).
            if n.id == id || (exact(n.id) - exact(id)).abs() < 1e-9 {
                agree += 1;
            }
            let score = exact(n.id);
            assert!(
                (f64::from(n.score) - score).abs() < 1e-4 * score.max(1.0),
                "query {q}, row {}: tantivy {} vs exact {score}",
                n.id,
                n.score
            );
        }
    }
    assert!(positions > 400, "{positions} positions");
    assert!(
        agree as f64 >= 0.98 * positions as f64,
        "{agree} of {positions} positions agree"
    );

    // Concurrent searches over `&self` answer as one thread does.
    let alone: Vec<Vec<Neighbor>> = queries
        .iter()
        .map(|t| search(engine.as_ref(), t, k))
        .collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    queries
                        .iter()
                        .map(|t| search(engine.as_ref(), t, k))
                        .collect()
                })
            })
            .collect();
        for h in handles {
            let together: Vec<Vec<Neighbor>> = h.join().expect("search thread");
            assert_eq!(together, alone);
        }
    });
    let footprint = engine.footprint().expect("footprint");
    assert!(footprint.index.is_some_and(|b| b.bytes > 0));
}

#[test]
fn refuses_what_it_cannot_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut engine = super::open(&ConnectOptions::default()).expect("open");
    let mut params = ParamMap::new();
    params.insert("ef".into(), ParamValue::Int(10));
    assert!(matches!(
        engine.set_search_params(&params),
        Err(EngineError::BadParameter { .. })
    ));
    let spec = |build: ParamMap| HybridSpec {
        name: "t".into(),
        dense: None,
        sparse_dim: 1,
        expected_points: 1,
        build_params: build,
        work_dir: dir.path().to_path_buf(),
    };
    for (name, value) in [("m", 16), ("threads", 0), ("writer_heap_mb", 10)] {
        let mut build = ParamMap::new();
        build.insert(name.into(), ParamValue::Int(value));
        let err = engine.create(&spec(build)).expect_err(name);
        assert!(
            matches!(err, EngineError::BadParameter { .. }),
            "{name}: {err}"
        );
    }
    engine.create(&spec(ParamMap::new())).expect("create");
    // No texts: the error says what writes them.
    let sparse = crate::sparse::Csr::from_rows(1, &[vec![(0, 1.0)]]);
    let data = HybridData {
        sparse: &sparse,
        texts: None,
        dense: None,
    };
    let err = engine.insert(&data, 0..1).expect_err("no texts");
    assert!(
        err.to_string().contains("ragdbeval embed --sparse bm25"),
        "{err}"
    );
    // A second create in the same folder needs --recreate.
    let err = engine.create(&spec(ParamMap::new())).expect_err("exists");
    assert!(err.to_string().contains("--recreate"), "{err}");
    let mut again = super::open(&ConnectOptions {
        recreate: true,
        ..ConnectOptions::default()
    })
    .expect("open");
    again.create(&spec(ParamMap::new())).expect("recreate");
}
