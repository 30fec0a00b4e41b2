use super::generate::{Correlation, FilterArg, FilterRequest, Kind, SWEEP, generate};
use super::*;
use crate::distance::Distance;
use crate::rng::SplitMix64;
use crate::vectors::Vectors;

fn vectors(n: usize, dim: usize, seed: u64) -> Vectors {
    let mut rng = SplitMix64::new(seed);
    Vectors::new((0..n * dim).map(|_| rng.next_gaussian()).collect(), dim).unwrap()
}

fn request(args: &[&str], sweep: bool, correlation: Correlation) -> FilterRequest {
    FilterRequest {
        args: args.iter().map(|a| a.parse().unwrap()).collect(),
        sweep,
        levels: SWEEP.to_vec(),
        correlation,
        seed: 7,
    }
}

/// Fraction of points passing each query's predicate.
fn selectivities(setup: &FilterSetup, level: usize, n: usize) -> Vec<f64> {
    setup.levels[level]
        .predicates
        .iter()
        .map(|p| {
            let c = p.compile(&setup.attributes).unwrap();
            (0..n as PointId).filter(|id| c.passes(*id)).count() as f64 / n as f64
        })
        .collect()
}

#[test]
fn arguments_parse_and_bad_ones_say_why() {
    assert_eq!(
        "label:0.01".parse::<FilterArg>().unwrap(),
        FilterArg::Generated {
            kind: Kind::Label,
            amount: Some(0.01)
        }
    );
    assert_eq!(
        "int-range:10%".parse::<FilterArg>().unwrap(),
        FilterArg::Generated {
            kind: Kind::IntRange,
            amount: Some(0.1)
        }
    );
    assert_eq!(
        "color=red".parse::<FilterArg>().unwrap(),
        FilterArg::Literal(Condition::equals("color", "red"))
    );
    assert_eq!(
        "price=10..20".parse::<FilterArg>().unwrap(),
        FilterArg::Literal(Condition::range("price", 10..20))
    );
    for bad in [
        "label:0",
        "label:1.5",
        "label:x",
        "tenant:0",
        "tenant:2.5",
        "bogus",
        "Bad=1",
        "price=20..10",
    ] {
        assert!(bad.parse::<FilterArg>().is_err(), "{bad} was accepted");
    }
}

#[test]
fn generated_selectivity_is_exact_for_every_kind_and_correlation() {
    let (n, nq) = (2000, 50);
    let train = vectors(n, 8, 1);
    let queries = vectors(nq, 8, 2);
    for correlation in [
        Correlation::None,
        Correlation::Positive,
        Correlation::Negative,
    ] {
        for (arg, want) in [
            ("label:0.01", 0.01),
            ("int-range:0.1", 0.1),
            ("tenant:20", 0.05),
            ("label:0.5", 0.5),
        ] {
            let setup = generate(
                &train,
                &queries,
                &request(&[arg], false, correlation),
                Attributes::new(n),
            )
            .unwrap();
            for s in selectivities(&setup, 0, n) {
                assert!((s - want).abs() < 1e-9, "{arg} {correlation:?}: {s}");
            }
        }
    }
}

#[test]
fn a_sweep_has_one_level_per_grid_point() {
    let n = 5000;
    let train = vectors(n, 4, 3);
    let queries = vectors(10, 4, 4);
    for kind in ["label", "int-range", "tenant"] {
        let setup = generate(
            &train,
            &queries,
            &request(&[kind], true, Correlation::None),
            Attributes::new(n),
        )
        .unwrap();
        assert_eq!(setup.levels.len(), SWEEP.len());
        for (i, s) in SWEEP.iter().enumerate() {
            let want = (s * n as f64).round() / n as f64;
            for got in selectivities(&setup, i, n) {
                assert!(
                    (got - want).abs() < 1e-9,
                    "{kind} level {i}: {got} vs {want}"
                );
            }
        }
    }
    // A sweep needs exactly one kind without a value; a value needs no sweep.
    for (args, sweep) in [(&["label:0.1"][..], true), (&["label"][..], false)] {
        assert!(
            generate(
                &train,
                &queries,
                &request(args, sweep, Correlation::None),
                Attributes::new(n)
            )
            .is_err()
        );
    }
}

/// The share of each query's true top-10 that passes its predicate: high when positively
/// correlated, low when negatively, about the selectivity when independent.
#[test]
fn correlation_moves_the_passing_points_towards_or_away_from_the_query() {
    let (n, nq, dim) = (4000, 40, 8);
    let train = vectors(n, dim, 5);
    let queries = vectors(nq, dim, 6);
    let share = |correlation| {
        let setup = generate(
            &train,
            &queries,
            &request(&["label:0.1"], false, correlation),
            Attributes::new(n),
        )
        .unwrap();
        let ids: Vec<PointId> = (0..n as PointId).collect();
        let mut passing = 0usize;
        for (q, p) in setup.levels[0].predicates.iter().enumerate() {
            let c = p.compile(&setup.attributes).unwrap();
            // The 10 nearest by brute force (filter sits below groundtruth: no kernel here).
            let mut top: Vec<(PointId, f32)> = ids
                .iter()
                .map(|id| {
                    let d = Distance::Euclidean.between(queries.row(q), train.row(*id as usize));
                    (*id, d)
                })
                .collect();
            top.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            top.truncate(10);
            passing += top.iter().filter(|(id, _)| c.passes(*id)).count();
        }
        passing as f64 / (nq * 10) as f64
    };
    let (none, pos, neg) = (
        share(Correlation::None),
        share(Correlation::Positive),
        share(Correlation::Negative),
    );
    assert!(pos > 2.0 * none, "positive {pos} vs none {none}");
    assert!(neg < none, "negative {neg} vs none {none}");
    assert!((0.03..0.2).contains(&none), "none {none}");
}

#[test]
fn a_conjunction_needs_both_conditions() {
    let n = 1000;
    let mut attributes = Attributes::new(n);
    attributes
        .push(
            "color",
            Column::Keyword {
                dictionary: vec!["red".into(), "blue".into()],
                codes: (0..n).map(|i| (i % 2) as u32).collect(),
            },
        )
        .unwrap();
    attributes
        .push("price", Column::Integer((0..n as i64).collect()))
        .unwrap();
    let p = Predicate {
        all: vec![
            Condition::equals("color", "blue"),
            Condition::range("price", 10..20),
        ],
    };
    let c = p.compile(&attributes).unwrap();
    let passing: Vec<PointId> = (0..n as PointId).filter(|i| c.passes(*i)).collect();
    assert_eq!(passing, vec![11, 13, 15, 17, 19]);
    assert_eq!(p.to_string(), "color = \"blue\" AND 10 <= price < 20");
    // An unknown value passes nothing; an unknown field or the wrong kind is an error.
    let none = Predicate::from(Condition::equals("color", "green"));
    assert!(!(0..n as PointId).any(|i| none.compile(&attributes).unwrap().passes(i)));
    for bad in [
        Condition::equals("size", "1"),
        Condition::equals("price", "1"),
        Condition::range("color", 0..1),
    ] {
        assert!(Predicate { all: vec![bad] }.compile(&attributes).is_err());
    }
    // Beyond the table nothing passes.
    assert!(!c.passes(n as PointId));
}

#[test]
fn jsonl_attributes_are_read_and_bad_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("attrs.jsonl");
    std::fs::write(
        &path,
        "{\"id\": 1, \"cat\": \"b\", \"price\": 5}\n{\"id\": 0, \"cat\": \"a\", \"price\": -3}\n\
         {\"id\": 9, \"cat\": \"z\", \"price\": 1}\n",
    )
    .unwrap();
    let a = file::read_jsonl(&path, 2).unwrap();
    assert_eq!(a.value(0, 0), Value::Keyword("a"));
    assert_eq!(a.value(1, 0), Value::Integer(-3));
    assert_eq!(a.value(0, 1), Value::Keyword("b"));
    for (text, needle) in [
        ("{\"id\": 0, \"cat\": \"a\"}\n", "point 1 has no record"),
        (
            "{\"id\": 0, \"cat\": \"a\"}\n{\"id\": 0, \"cat\": \"b\"}\n",
            "appears twice",
        ),
        (
            "{\"id\": 0, \"cat\": \"a\"}\n{\"id\": 1, \"cat\": 3}\n",
            "Keyword on the first record",
        ),
        ("{\"id\": 0, \"cat\": 1.5}\n", "neither a string"),
        ("not json\n", "not JSON"),
        ("{\"cat\": \"a\"}\n", "`id`"),
        ("{\"id\": 0, \"Bad\": \"a\"}\n", "lowercase"),
    ] {
        std::fs::write(&path, text).unwrap();
        let err = file::read_jsonl(&path, 2).unwrap_err().to_string();
        assert!(err.contains(needle), "{text}: {err}");
    }
}
