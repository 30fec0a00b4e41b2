//! Parameter text: `--search-param`/`--build-param` overrides, single values and an
//! adapter's `config.toml` of named sets.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ragdbeval::params::{EngineConfig, ParamValue, parse_override};

fuzz_target!(|text: &str| {
    let _ = parse_override(text);
    let _ = ParamValue::parse(text);
    let _ = EngineConfig::parse(text);
});
