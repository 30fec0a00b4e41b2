//! big-ann-benchmarks files (`.fbin`, `.u8bin`, `.i8bin` vectors and `.ibin` ground truth) of
//! any content, with and without `--limit`: a header is never trusted beyond the bytes given.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use ragdbeval::dataset::bigann::{ElementType, parse_truth, parse_vectors};

fuzz_target!(|input: (u8, &[u8])| {
    let (choice, bytes) = input;
    let label = Path::new("fuzz.bin");
    let limit = (choice & 0x80 != 0).then_some(usize::from(choice & 0x0f));
    match choice % 4 {
        0 => drop(parse_vectors(bytes, label, ElementType::Float32, limit)),
        1 => drop(parse_vectors(bytes, label, ElementType::Uint8, limit)),
        2 => drop(parse_vectors(bytes, label, ElementType::Int8, limit)),
        _ => drop(parse_truth(bytes, label, limit)),
    }
});
