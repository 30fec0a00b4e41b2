//! What an engine declares about itself in the `[engine]` table of its
//! `adapters/<module>/config.toml`: one line of summary, whether it needs a server (and how
//! the tests find one), and the settings of its conformance test. `build.rs` generates one
//! [`EngineMeta`] per engine from the tables (`build/engines.rs`).

/// An adapter's description of its engine. The registry name is the table's `name`.
pub struct EngineMeta {
    /// One line for `ragdbeval engines`.
    pub summary: &'static str,
    /// `None`: the engine runs in-process (no server, usable offline and in the default run).
    pub server: Option<ServerMeta>,
    /// How the shared conformance test (`tests/it/conformance.rs`) drives this engine.
    pub conformance: Conformance,
}

impl EngineMeta {
    /// Whether it runs without any server.
    pub const fn embedded(&self) -> bool {
        self.server.is_none()
    }
}

/// How a server engine's tests get their server.
pub struct ServerMeta {
    /// Environment variable the integration tests read the server's URL from
    /// (`<NAME>_URL`; `scripts/test.sh` sets it for every server it starts).
    pub url_env: &'static str,
    /// The engine's URL for a server at 127.0.0.1, `{port}` standing for the port: what the
    /// conformance tests point it at when they play a closed or a silent server.
    pub url_form: &'static str,
    /// Whether `scripts/servers/<name>.sh` can install and start the server on this kind of
    /// machine. Its tests then fail under `CI` when the server is missing; without a script
    /// (Qdrant: no package exists) they run only where `url_env` is set.
    pub script: bool,
    /// How to get a server, for the reason of an ignored test.
    pub how_to_get: &'static str,
    /// The environment variable the engine's own clients take a password from
    /// (`PGPASSWORD`), read when `--url` carries none. Result files never keep a password,
    /// so `bench --resume` of a run whose URL had one asks for it there (or in `--url`).
    pub password_env: Option<&'static str>,
}

/// The shared conformance test for one engine: the default mutation runbook on a small
/// clustered dataset, checked for deletes honoured, updates visible and sane recall.
pub struct Conformance {
    /// `euclidean` or `angular` (an engine that supports only cosine says `angular`).
    pub distance: &'static str,
    /// The search-effort sweep, lowest effort first, as one `--search-param` value
    /// (`hnsw_ef=8,32,128`); empty when the engine has none. Recall must not fall as it grows.
    pub effort_sweep: &'static str,
    /// More `--search-param` values the run needs (`seqscan=false`).
    pub search_params: &'static [&'static str],
    /// Recall the highest effort must reach at every step.
    pub min_recall: f64,
    /// Why the engine refuses stream steps (writes while it is searched), if it does: the
    /// conformance suite then checks the refusal instead of the streaming runbook.
    pub no_stream: Option<&'static str>,
}
