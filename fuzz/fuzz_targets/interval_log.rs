//! HdrHistogram interval logs of any content, merged alone and (for odd lengths) with a copy
//! of themselves, which takes the path that adds one log's histograms to another's.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use ragdbeval::results::histlog::merge_logs;

fuzz_target!(|log: &[u8]| {
    let (a, b) = (Path::new("a.hlog"), Path::new("b.hlog"));
    let _ = merge_logs(&[(a, log)]);
    if log.len() % 2 == 1 {
        let _ = merge_logs(&[(a, log), (b, log)]);
    }
});
