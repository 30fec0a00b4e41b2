use super::*;
use crate::rng::SplitMix64;

/// The reference the tests hold [`StreamTruth`] to: the same rule, with every distance in
/// float64 and every id of every search examined, no candidate lists.
fn brute_force_score(log: &StreamLog<'_>, search: &SearchEvent) -> SearchScore {
    let truth = StreamTruth::new(log);
    let d64 = |row: usize| -> f64 {
        let q = log.queries.row(search.query);
        let v = log.train.row(row);
        match log.distance {
            Distance::Euclidean => q
                .iter()
                .zip(v)
                .map(|(a, b)| (f64::from(*a) - f64::from(*b)).powi(2))
                .sum::<f64>()
                .sqrt(),
            Distance::Dot => -q
                .iter()
                .zip(v)
                .map(|(a, b)| f64::from(*a) * f64::from(*b))
                .sum::<f64>(),
            Distance::Angular => {
                let dot: f64 = q
                    .iter()
                    .zip(v)
                    .map(|(a, b)| f64::from(*a) * f64::from(*b))
                    .sum();
                let nq: f64 = q.iter().map(|a| f64::from(*a).powi(2)).sum::<f64>().sqrt();
                let nv: f64 = v.iter().map(|a| f64::from(*a).powi(2)).sum::<f64>().sqrt();
                1.0 - dot / (nq * nv)
            }
        }
    };
    let mut least: Vec<f64> = Vec::new();
    for h in truth.histories.values() {
        let states: Vec<Option<usize>> = h
            .possible(search.sent, search.received)
            .map(|j| h.states[j])
            .collect();
        if states.iter().all(Option::is_some) {
            least.push(
                states
                    .iter()
                    .flatten()
                    .map(|r| d64(*r))
                    .fold(f64::MIN, f64::max),
            );
        }
    }
    least.sort_by(f64::total_cmp);
    let expected = least.len().min(log.k);
    let limit = if least.len() >= log.k {
        least[log.k - 1] + f64::from(DISTANCE_TOLERANCE)
    } else {
        f64::INFINITY
    };
    let mut score = SearchScore {
        expected,
        ..SearchScore::default()
    };
    let mut seen = Vec::new();
    for &id in search.ids.iter().take(log.k) {
        if seen.contains(&id) {
            continue;
        }
        seen.push(id);
        let Some(h) = truth.histories.get(&id) else {
            continue;
        };
        let possible = h.possible(search.sent, search.received);
        let nearest = possible
            .clone()
            .filter_map(|j| h.states[j])
            .map(d64)
            .min_by(f64::total_cmp);
        match nearest {
            Some(d) if d <= limit => score.correct += 1,
            Some(_) => {}
            None => {
                let applied = *possible.start();
                if applied > 0 && h.states[applied].is_none() {
                    score.stale += 1;
                }
            }
        }
    }
    score
}

/// Rows with small integer components: float32 and float64 distances order them alike.
fn int_rows(rng: &mut SplitMix64, n: usize, dim: usize) -> Vectors {
    Vectors::new((0..n * dim).map(|_| rng.below(9) as f32).collect(), dim).unwrap()
}

fn log<'a>(
    train: &'a Vectors,
    queries: &'a Vectors,
    initial: &'a [(PointId, usize)],
    writes: &'a [WriteEvent],
    k: usize,
) -> StreamLog<'a> {
    StreamLog {
        train,
        queries,
        distance: Distance::Euclidean,
        initial,
        writes,
        k,
    }
}

/// Points on a line: point `i` at x = i, the query at 0, so the nearest are the smallest ids.
fn line(n: usize) -> (Vectors, Vectors) {
    let train = Vectors::new((0..n).flat_map(|i| [i as f32, 0.0]).collect(), 2).unwrap();
    let queries = Vectors::new(vec![0.0, 0.0], 2).unwrap();
    (train, queries)
}

fn search(sent: u64, received: u64, ids: &[PointId]) -> SearchEvent {
    SearchEvent {
        query: 0,
        sent,
        received,
        ids: ids.to_vec(),
    }
}

#[test]
fn a_snapshot_that_misses_an_acknowledged_delete_is_a_stale_hit() {
    let (train, queries) = line(10);
    let initial: Vec<(PointId, usize)> = (2..10).map(|i| (i as PointId, i)).collect();
    // Point 2 deleted (acknowledged at 20) before the search is sent at 30.
    let writes = [WriteEvent {
        id: 2,
        op: WriteOp::Delete,
        issued: 10,
        acked: 20,
    }];
    let l = log(&train, &queries, &initial, &writes, 2);
    let mut truth = StreamTruth::new(&l);
    let stale = truth.score(&search(30, 40, &[2, 3]));
    assert_eq!(
        stale,
        SearchScore {
            correct: 1,
            expected: 2,
            stale: 1
        }
    );
    assert_eq!(stale.recall(), 0.5);
    let fresh = truth.score(&search(30, 40, &[3, 4]));
    assert_eq!(fresh.recall(), 1.0);
    assert_eq!(fresh.stale, 0);
    // Sent while the delete was in flight: either answer is correct.
    assert_eq!(truth.score(&search(15, 40, &[2, 3])).recall(), 1.0);
    assert_eq!(truth.score(&search(15, 40, &[3, 4])).recall(), 1.0);
}

#[test]
fn an_insert_in_flight_may_be_shown_or_not() {
    let (train, queries) = line(10);
    let initial: Vec<(PointId, usize)> = (3..10).map(|i| (i as PointId, i)).collect();
    let writes = [WriteEvent {
        id: 1,
        op: WriteOp::Put { row: 1 },
        issued: 10,
        acked: 50,
    }];
    let l = log(&train, &queries, &initial, &writes, 2);
    let mut truth = StreamTruth::new(&l);
    // In flight during the search: [3, 4] (not yet) and [1, 3] (already) are both right.
    assert_eq!(truth.score(&search(20, 30, &[3, 4])).recall(), 1.0);
    assert_eq!(truth.score(&search(20, 30, &[1, 3])).recall(), 1.0);
    // Acknowledged before the search: it must be there.
    assert_eq!(truth.score(&search(60, 70, &[3, 4])).recall(), 0.5);
    // Issued after the answer arrived: showing it is wrong (no engine could).
    let early = truth.score(&search(1, 5, &[1, 3]));
    assert_eq!(early.recall(), 0.5);
    assert_eq!(early.stale, 0, "never deleted, so not stale");
}

#[test]
fn an_update_in_flight_counts_at_its_farther_vector() {
    let (train, queries) = line(10);
    let initial: Vec<(PointId, usize)> = (1..6).map(|i| (i as PointId, i)).collect();
    // Id 1 moves from x = 1 to x = 9 while the search runs.
    let writes = [WriteEvent {
        id: 1,
        op: WriteOp::Put { row: 9 },
        issued: 10,
        acked: 50,
    }];
    let l = log(&train, &queries, &initial, &writes, 2);
    let mut truth = StreamTruth::new(&l);
    // Least favourable set: 1 at x = 9, 2..5: the 2nd distance is 3, so {2, 3} is right,
    // and {1, 2} is too (1 could still be at x = 1).
    assert_eq!(truth.score(&search(20, 30, &[2, 3])).recall(), 1.0);
    assert_eq!(truth.score(&search(20, 30, &[1, 2])).recall(), 1.0);
    // After the update is acknowledged, 1 is far away.
    assert_eq!(truth.score(&search(60, 70, &[1, 2])).recall(), 0.5);
}

#[test]
fn fewer_live_points_than_k_expects_only_those() {
    let (train, queries) = line(4);
    let initial = [(0 as PointId, 0usize), (1, 1)];
    let l = log(&train, &queries, &initial, &[], 5);
    let mut truth = StreamTruth::new(&l);
    let s = truth.score(&search(0, 1, &[1, 0]));
    assert_eq!((s.correct, s.expected), (2, 2));
    assert_eq!(s.recall(), 1.0);
    // A repeated id counts once.
    assert_eq!(truth.score(&search(0, 1, &[1, 1])).recall(), 0.5);
}

/// Random single-writer histories and random answers: the candidate-list scoring equals the
/// float64 brute force for every search, including deletes that exhaust the first depth.
#[test]
fn scoring_equals_a_per_search_float64_brute_force() {
    for seed in 0..60u64 {
        let mut rng = SplitMix64::new(seed);
        let n = 30 + rng.below(40) as usize;
        let dim = 1 + rng.below(4) as usize;
        let k = 1 + rng.below(6) as usize;
        let train = int_rows(&mut rng, n, dim);
        let queries = int_rows(&mut rng, 4, dim);
        let initial: Vec<(PointId, usize)> = (0..n / 2)
            .filter(|_| rng.below(4) != 0)
            .map(|i| (i as PointId, i))
            .collect();
        let mut live: Vec<bool> = (0..n)
            .map(|i| initial.iter().any(|(id, _)| *id as usize == i))
            .collect();
        let mut writes = Vec::new();
        let mut t = 0u64;
        for _ in 0..rng.below(80) {
            let id = rng.below(n as u64) as usize;
            let issued = t + rng.below(5);
            let acked = issued + rng.below(20);
            t = acked + rng.below(3);
            let op = if live[id] && rng.below(2) == 0 {
                live[id] = false;
                WriteOp::Delete
            } else {
                live[id] = true;
                WriteOp::Put {
                    row: rng.below(n as u64) as usize,
                }
            };
            writes.push(WriteEvent {
                id: id as PointId,
                op,
                issued,
                acked,
            });
        }
        let l = log(&train, &queries, &initial, &writes, k);
        let mut truth = StreamTruth::new(&l);
        // Prepared shallow, so that deletes make some searches go deeper.
        truth.compute(&[0, 1, 2, 3], k.min(truth.rows.len()));
        for _ in 0..40 {
            let sent = rng.below(t + 10);
            let received = sent + rng.below(30);
            let ids: Vec<PointId> = (0..k + 1).map(|_| rng.below(n as u64)).collect();
            let s = SearchEvent {
                query: rng.below(4) as usize,
                sent,
                received,
                ids,
            };
            assert_eq!(
                truth.score(&s),
                brute_force_score(&l, &s),
                "seed {seed}, search {s:?}"
            );
        }
    }
}
