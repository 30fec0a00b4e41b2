//! Runbook text → parse → resolve against a small dataset: any text must give a runbook or
//! an error, never a panic, and resolving must not allocate beyond the dataset's size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ragdbeval::runbook::Runbook;

fuzz_target!(|input: (u16, &str)| {
    let (n, text) = input;
    if let Ok(runbook) = Runbook::parse_toml(text) {
        let _ = runbook.hash();
        let _ = runbook.mutates();
        // Datasets of 0 to 4095 points: enough for every position form to land in and out of
        // range, small enough that live sets stay cheap.
        let _ = runbook.resolve(usize::from(n % 4096));
    }
});
