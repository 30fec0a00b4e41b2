//! The integration tests, as one binary: one module per concern, helpers in `common`.
//!
//! One binary instead of one per file, because each test binary links the whole crate and
//! every engine client: on 2 cores the link steps, not the tests, were the cost of a change.
//!
//! Tests that need a database server are compiled as `#[ignore]` (reported as ignored, with
//! the variable to set) unless `build.rs` saw their server's variable at build time or `CI`
//! is set, where a missing server is a failure: see `build.rs`.

#[macro_use]
mod common;

mod bad_data;
mod bad_input;
mod bad_options;
mod bigann;
mod cli;
mod compare;
mod conformance;
mod connect_errors;
mod datasets;
mod download;
mod durability;
mod element_types;
mod encodings;
mod end_task;
mod eval;
mod filtered;
mod hybrid;
mod interrupt;
mod load;
mod make_text;
mod registry;
mod report;
mod reproduce;
mod resources;
mod resume;
mod runbooks;
mod secrets;
mod spill;
mod stream;
mod stubs;
mod trec;
mod vdbbench;
mod verify;

// The tests of each engine's own particulars: `adapters/<module>/it.rs`, listed by build.rs.
include!(concat!(env!("OUT_DIR"), "/engine_tests.rs"));
