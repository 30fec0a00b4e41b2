//! Ground-truth cache files of any content, for the default mutation runbook on a small
//! dataset; with the right header in front half the time, so that what follows the key check
//! (depths, counts, ids, distances, the live-set check) is reached.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ragdbeval::distance::Distance;
use ragdbeval::runbook::Runbook;
use ragdbeval::runner::ground_truth::{cache_header, parse_cache};

const KEY: &str = "fuzz-key";

fuzz_target!(|input: (u8, u8, &[u8])| {
    let (n, choice, bytes) = input;
    let Ok(steps) = Runbook::default_mutations().resolve(usize::from(n).max(20)) else {
        return;
    };
    let distance = if choice & 2 == 0 { Distance::Euclidean } else { Distance::Angular };
    let queries = usize::from(choice >> 4);
    if choice & 1 == 0 {
        let _ = parse_cache(bytes, KEY, &steps, queries, distance);
    } else {
        let mut file = cache_header(KEY);
        file.extend_from_slice(bytes);
        let _ = parse_cache(&file, KEY, &steps, queries, distance);
    }
});
