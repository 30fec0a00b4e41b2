//! Runbook text, as a TOML runbook and as a big-ann YAML runbook → parse → resolve against a
//! small dataset: any text must give a runbook or an error, never a panic, and resolving must
//! not allocate beyond the dataset's size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ragdbeval::runbook::Runbook;

fuzz_target!(|input: (u16, &str)| {
    let (n, text) = input;
    // Datasets of 0 to 4095 points: enough for every position form to land in and out of
    // range, small enough that live sets stay cheap.
    let points = usize::from(n % 4096);
    if let Ok(runbook) = Runbook::parse_toml(text) {
        let _ = runbook.hash();
        let _ = runbook.mutates();
        let _ = runbook.resolve(points);
    }
    let _ = ragdbeval::runbook::bigann::entries(text);
    if let Ok(runbook) = ragdbeval::runbook::bigann::parse(text, None) {
        let _ = runbook.resolve(points);
    }
});
