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

use crate::engine::EngineEntry;
use crate::engine::hybrid::LexicalEntry;

/// Parameter parsing shared by the qdrant and qdrant-edge adapters.
pub mod qdrant_settings;

/// Help shared by the adapters: local servers, process discovery, row checks, idle connections.
pub mod support;

macro_rules! engines {
    ($($(#[$only_if:meta])? $module:ident => $name:literal,)*) => {
        $($(#[$only_if])? pub mod $module;)*

        /// Every registered engine, in the order `ragdbeval engines` lists them.
        pub const ENGINES: &[EngineEntry] = &[
            $($(#[$only_if])? EngineEntry {
                name: $name,
                meta: &$module::meta::ENGINE,
                config_toml: $module::CONFIG,
                open: $module::open,
            },)*
        ];
    };
}

include!("engines.rs");

macro_rules! lexical_engines {
    (
        beside_dense: [$($(#[$a:meta])? $module:ident => $name:literal,)*]
        lexical_only: [$($(#[$b:meta])? $only:ident => $only_name:literal,)*]
    ) => {
        $($(#[$b])? pub mod $only;)*

        /// Every engine with lexical (sparse or text) retrieval, in the order
        /// `ragdbeval engines` lists them.
        pub const LEXICAL: &[LexicalEntry] = &[
            $($(#[$a])? LexicalEntry {
                name: $name,
                summary: $module::hybrid::SUMMARY,
                open: $module::hybrid::open,
            },)*
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
