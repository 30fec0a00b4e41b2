//! The local server started through `scripts/servers/chroma.sh` when no `--url` is given.

use super::*;
use crate::adapters::support::server::LocalServer;

/// `url` without trailing slashes, for comparisons and joining paths.
pub(super) fn normalize_url(url: &str) -> String {
    url.trim().trim_end_matches('/').to_string()
}

/// The local server `scripts/servers/chroma.sh` starts.
pub(super) const LOCAL_SERVER: LocalServer = LocalServer {
    engine: ENGINE,
    schemes: &["http://", "https://"],
    url_example: "http://HOST:PORT",
};
