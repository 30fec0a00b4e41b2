//! TEXMEX files (`.fvecs`, `.bvecs`, `.ivecs`) of any content, with and without `--limit`.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use ragdbeval::dataset::texmex::{VectorFormat, parse_ivecs, parse_vectors};

fuzz_target!(|input: (u8, &[u8])| {
    let (choice, bytes) = input;
    let label = Path::new("fuzz.vecs");
    let limit = (choice & 0x80 != 0).then_some(usize::from(choice & 0x0f));
    match choice % 3 {
        0 => drop(parse_vectors(bytes, label, VectorFormat::Fvecs, limit)),
        1 => drop(parse_vectors(bytes, label, VectorFormat::Bvecs, limit)),
        _ => drop(parse_ivecs(bytes, label)),
    }
});
