//! Engine adapters: one folder per engine family, one registration line each.
//!
//! An adapter implements [`crate::engine::VectorEngine`] for its engine, ships a
//! `config.toml` of named parameter sets and declares itself in `meta.rs`
//! ([`crate::engine_meta::EngineMeta`]). To add an engine: create `adapters/<module>/` with
//! `mod.rs` (`pub const CONFIG`, `pub fn open`, `pub mod meta`), `meta.rs` and `config.toml`,
//! then add its line to `engines.rs`. The README's "Adding an engine" walks through it.
//!
//! An adapter folder holds only what is particular to its engine, in small files; what
//! several adapters need (starting a local server through `scripts/servers/<name>.sh`,
//! finding a server's process, the row-shape check, idle connections) is in [`support`]; URL redaction is
//! [`crate::secret`], which every layer uses.

use crate::engine::hybrid::LexicalEntry;
use crate::engine::{EngineEntry, EngineError};

/// Parameter parsing shared by the qdrant and qdrant-edge adapters.
pub mod qdrant_settings;

/// Help shared by the adapters: local servers, process discovery, row checks, idle connections.
pub mod support;

macro_rules! engines {
    ($($(#[cfg(feature = $feature:literal)])? $module:ident => $name:literal,)*) => {
        $(
            $(#[cfg(feature = $feature)])?
            pub mod $module;
            $(
                /// Left out of this build: the engine's declaration and parameter sets, so it
                /// is listed and its settings are checked, and an `open` that names the build.
                #[cfg(not(feature = $feature))]
                pub mod $module {
                    pub mod meta {
                        include!(concat!(
                            env!("CARGO_MANIFEST_DIR"), "/adapters/", stringify!($module), "/meta.rs"
                        ));
                    }

                    /// The engine's named parameter sets and sweeps.
                    pub const CONFIG: &str = include_str!(concat!(
                        env!("CARGO_MANIFEST_DIR"), "/adapters/", stringify!($module), "/config.toml"
                    ));

                    /// This build has no such adapter: says how to get one.
                    pub fn open(
                        _opts: &crate::engine::ConnectOptions,
                    ) -> crate::engine::EngineResult<Box<dyn crate::engine::VectorEngine>> {
                        Err(super::not_built($name, $feature))
                    }
                }
            )?
        )*

        /// Every registered engine, in the order `ragdbeval engines` lists them.
        pub const ENGINES: &[EngineEntry] = &[
            $(EngineEntry {
                name: $name,
                meta: &$module::meta::ENGINE,
                config_toml: $module::CONFIG,
                open: $module::open,
                left_out: left_out!($($feature)?),
            },)*
        ];
    };
}

/// The cargo feature of a registry line's `#[cfg]` when this build does not have it.
macro_rules! left_out {
    () => {
        None
    };
    ($feature:literal) => {
        if cfg!(feature = $feature) {
            None
        } else {
            Some($feature)
        }
    };
}

/// Refuses, before anything is loaded, an engine whose adapter this build left out.
pub fn check_built(entry: &EngineEntry) -> Result<(), EngineError> {
    match entry.left_out {
        Some(feature) => Err(not_built(entry.name, feature)),
        None => Ok(()),
    }
}

/// The error of an engine whose cargo feature this build left out.
fn not_built(engine: &str, feature: &str) -> EngineError {
    EngineError::op(
        engine,
        "open",
        format!(
            "this ragdbeval was built without the `{feature}` cargo feature: build it with \
             `cargo build --release --features {feature}`, or run \
             `RAGDBEVAL_FEATURES={feature} ./scripts/ragdbeval ...`"
        ),
    )
}

include!("engines.rs");

macro_rules! lexical_engines {
    (
        beside_dense: [$($(#[cfg(feature = $dense_feature:literal)])? $module:ident => $name:literal,)*]
        lexical_only: [$($(#[$b:meta])? $only:ident => $only_name:literal,)*]
    ) => {
        $($(#[$b])? pub mod $only;)*

        /// Every engine with lexical (sparse or text) retrieval, in the order
        /// `ragdbeval engines` lists them.
        pub const LEXICAL: &[LexicalEntry] = &[
            $(
                $(#[cfg(feature = $dense_feature)])?
                LexicalEntry {
                    name: $name,
                    summary: $module::hybrid::SUMMARY,
                    open: $module::hybrid::open,
                },
                $(
                    #[cfg(not(feature = $dense_feature))]
                    LexicalEntry {
                        name: $name,
                        summary: concat!("not in this build (cargo feature `", $dense_feature, "`)"),
                        open: |_| Err(not_built($name, $dense_feature)),
                    },
                )?
            )*
            $($(#[$b])? LexicalEntry {
                name: $only_name,
                summary: $only::SUMMARY,
                open: $only::open,
            },)*
        ];
    };
}

include!("lexical.rs");

/// Looks an engine up by name.
pub fn find(name: &str) -> Option<&'static EngineEntry> {
    ENGINES.iter().find(|e| e.name == name)
}

/// Looks an engine with lexical retrieval up by name.
pub fn find_lexical(name: &str) -> Option<&'static LexicalEntry> {
    LEXICAL.iter().find(|e| e.name == name)
}

/// Names of the engines with lexical retrieval, for error messages.
pub fn lexical_names() -> String {
    LEXICAL
        .iter()
        .map(|e| e.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Names of all engines, for error messages.
pub fn names() -> String {
    ENGINES
        .iter()
        .map(|e| e.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::ENGINES;
    use std::path::Path;

    /// `scripts/test.sh` finds the servers it can start by their scripts and sets
    /// `<NAME>_URL` for each: the declarations must follow that convention.
    #[test]
    fn server_declarations_match_scripts_and_variables() {
        let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/servers");
        for entry in ENGINES {
            let script = scripts.join(format!("{}.sh", entry.name));
            match &entry.meta.server {
                None => assert!(
                    !script.exists(),
                    "{}: embedded, but has a script",
                    entry.name
                ),
                Some(server) => {
                    let var = format!("{}_URL", entry.name.to_uppercase().replace('-', "_"));
                    assert_eq!(server.url_env, var, "{}", entry.name);
                    assert_eq!(server.script, script.is_file(), "{}: script", entry.name);
                }
            }
        }
        // And every script belongs to a registered server engine.
        for file in std::fs::read_dir(&scripts).expect("scripts/servers") {
            let name = file.expect("a directory entry").file_name();
            let name = name.to_string_lossy();
            let Some(engine) = name.strip_suffix(".sh") else {
                continue;
            };
            if engine == "common" {
                continue;
            }
            assert!(
                ENGINES
                    .iter()
                    .any(|e| e.name == engine && e.meta.server.is_some()),
                "scripts/servers/{name} has no server engine"
            );
        }
    }

    #[test]
    fn an_engine_left_out_is_refused_naming_its_feature() {
        let mut entry = *super::find("exact").expect("exact");
        assert!(super::check_built(&entry).is_ok());
        entry.left_out = Some("pgvector");
        let err = super::check_built(&entry)
            .expect_err("left out")
            .to_string();
        assert!(err.contains("`pgvector` cargo feature"), "{err}");
        assert!(
            err.contains("cargo build --release --features pgvector"),
            "{err}"
        );
    }

    #[test]
    fn names_are_unique() {
        for (i, a) in ENGINES.iter().enumerate() {
            assert!(
                ENGINES[i + 1..].iter().all(|b| b.name != a.name),
                "{}",
                a.name
            );
        }
    }
}
