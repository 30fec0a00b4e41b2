//! Result documents of any content: loading, then every rendering `ragdbeval report` does
//! (the terminal table and each export format), since a document that parses can still hold
//! empty series, NaN and values no real run produces.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use ragdbeval::export::exporters;
use ragdbeval::output::table;
use ragdbeval::results::RunResult;

fuzz_target!(|bytes: &[u8]| {
    let Ok(run) = RunResult::parse(bytes, Path::new("fuzz.json")) else {
        return;
    };
    let _ = table::render(&run);
    let runs = [run];
    for exporter in exporters() {
        let _ = exporter.render(&runs);
    }
});
