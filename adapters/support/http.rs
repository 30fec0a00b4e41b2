//! The blocking HTTP client of the engines with a JSON API (Chroma, Typesense): one pooled
//! `ureq` agent shared by every search thread, requests with a size-capped answer, and the
//! mapping of transport and API failures to [`EngineError`]s that say what to do.

use std::io::Read as _;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::server::LocalServer;
use crate::engine::{EngineError, EngineResult, worded_connection_failure};

/// One pooled agent (shared by all search threads), the base URL and the API key's header.
pub struct Http {
    pub agent: ureq::Agent,
    pub base: String,
    /// The header that carries the API key (`x-chroma-token`, `x-typesense-api-key`) and
    /// the key, when there is one.
    auth: Option<(&'static str, String)>,
}

/// How a request failed, before it is turned into an [`EngineError`].
#[derive(Debug)]
pub enum CallError {
    /// No HTTP exchange happened or it broke off (refused, reset, timed out while connecting).
    Transport(String),
    /// The request was too slow.
    Timeout(String),
    /// The server answered with an error status; `message` is its own text.
    Status { code: u16, message: String },
    /// Anything else (an unparsable answer, ...).
    Other(String),
}

/// The error body both APIs use: Chroma's `{"error": "NotFoundError", "message": "..."}`,
/// Typesense's `{"message": "..."}`.
#[derive(serde::Deserialize)]
struct ErrorBody {
    #[serde(default)]
    error: String,
    #[serde(default)]
    message: String,
}

/// Bytes reserved for a request body before it is serialised (a 768-d query is ~8 KB).
const BODY_CAPACITY: usize = 4096;

/// Bytes reserved for an answer of unknown length (a query answer for k = 10 is ~400 B).
const ANSWER_CAPACITY: u64 = 4096;

/// The most reserved up front for an answer of announced length; a longer one grows as it is read.
const MAX_PREALLOCATED: u64 = 64 << 20;

/// Largest response body accepted: a batch query of thousands of queries at large k returns
/// tens of megabytes, well past ureq's 10 MB default.
const MAX_RESPONSE_BYTES: u64 = 1 << 30;

impl Http {
    /// A client of the server at `base` whose every read and write may take `timeout`
    /// (60 s when zero); `api_key` travels in the header `auth_header`.
    pub fn new(
        base: &str,
        timeout: Duration,
        auth_header: &'static str,
        api_key: Option<String>,
    ) -> Http {
        let timeout = if timeout.is_zero() {
            Duration::from_secs(60)
        } else {
            timeout
        };
        let config = ureq::Agent::config_builder()
            // Error statuses are read like any answer so that their JSON message is kept.
            .http_status_as_error(false)
            // Each read and each write has the limit, not the call or its phases: a phase
            // limit is a deadline, so ureq 3.5 re-arms the socket's timeout from the time left
            // before every read and write (a `setsockopt` each, 1.5 per query, and the deadline
            // arithmetic: ~7 µs of client CPU per query in a profile of
            // adapters/chroma/client_bench.rs; a global limit made a single client's QPS 0.6× of
            // the same loop without it). A constant per-read limit is set once per connection
            // and catches a stuck server as well: it sends nothing for that long.
            .timeout_per_read(Some(timeout))
            .timeout_per_write(Some(timeout))
            .timeout_connect(Some(timeout.min(Duration::from_secs(5))))
            // Many client threads search at once: keep their connections instead of opening
            // (and leaving in TIME_WAIT) a new one per request.
            .max_idle_connections(256)
            .max_idle_connections_per_host(256)
            .build();
        Http {
            agent: config.new_agent(),
            base: base.to_string(),
            auth: api_key.map(|key| (auth_header, key)),
        }
    }

    /// Whether requests carry an API key.
    pub fn has_key(&self) -> bool {
        self.auth.is_some()
    }

    /// Sends one request to `base` + `path` and returns the body of a 2xx answer.
    pub fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Vec<u8>, CallError> {
        self.send_to(method, &format!("{}{path}", self.base), body)
    }

    /// [`Self::send`] to a whole URL (a query URL can be built once per collection).
    pub fn send_to(
        &self,
        method: &str,
        url: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Vec<u8>, CallError> {
        let result = match (method, body) {
            ("GET", _) => self.keyed(self.agent.get(url)).call(),
            ("DELETE", _) => self.keyed(self.agent.delete(url)).call(),
            ("PUT", body) => self
                .keyed(self.agent.put(url))
                .header("content-type", "application/json")
                .send(body.unwrap_or_default()),
            (_, body) => self
                .keyed(self.agent.post(url))
                .header("content-type", "application/json")
                .send(body.unwrap_or_default()),
        };
        let mut response = result.map_err(map_transport)?;
        let code = response.status().as_u16();
        // Read into room for the whole answer when its length is announced (ureq's
        // `read_to_vec` starts from an empty `Vec` and grows it while reading).
        let announced = response.body().content_length().unwrap_or(0);
        let mut bytes =
            Vec::with_capacity(announced.clamp(ANSWER_CAPACITY, MAX_PREALLOCATED) as usize);
        response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES)
            .reader()
            .read_to_end(&mut bytes)
            .map_err(|e| map_transport(ureq::Error::from(e)))?;
        if (200..300).contains(&code) {
            return Ok(bytes);
        }
        let message = match serde_json::from_slice::<ErrorBody>(&bytes) {
            Ok(e) if !e.message.is_empty() => {
                if e.error.is_empty() {
                    e.message
                } else {
                    format!("{}: {}", e.error, e.message)
                }
            }
            _ => String::from_utf8_lossy(&bytes).trim().to_string(),
        };
        Err(CallError::Status { code, message })
    }

    fn keyed<B>(&self, req: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.auth {
            Some((header, key)) => req.header(*header, key),
            None => req,
        }
    }

    /// A request whose JSON answer is parsed into `T`.
    pub fn json<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> Result<T, CallError> {
        self.json_to(method, &format!("{}{path}", self.base), body)
    }

    /// [`Self::json`] to a whole URL.
    pub fn json_to<T: DeserializeOwned>(
        &self,
        method: &str,
        url: &str,
        body: Option<&impl Serialize>,
    ) -> Result<T, CallError> {
        let body = match body {
            Some(b) => {
                // Room for one query's body up front: grown from empty, serialising a 50-d
                // query reallocated about seven times (`Vec` growth was about a tenth of the
                // sender threads' samples in a profile of the Chroma client bench).
                let mut bytes = Vec::with_capacity(BODY_CAPACITY);
                serde_json::to_writer(&mut bytes, b)
                    .map_err(|e| CallError::Other(e.to_string()))?;
                Some(bytes)
            }
            None => None,
        };
        let bytes = self.send_to(method, url, body)?;
        parse_answer(&bytes)
    }
}

/// The server's URL and whether the adapter started it: `given` (`--url`) without trailing
/// slashes and checked to be http(s), or the URL the local server's script prints.
pub fn server_url(server: &LocalServer, given: Option<&str>) -> EngineResult<(String, bool)> {
    let (url, started) = match given {
        Some(url) => (normalize_url(url), false),
        None => (server.start()?, true),
    };
    let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
    if !scheme_ok || url.len() <= "https://".len() {
        return Err(EngineError::bad_param(
            server.engine,
            "url",
            format!(
                "`{}` is not a URL: expected {}",
                crate::secret::redact(&url),
                server.url_example
            ),
        ));
    }
    Ok((url, started))
}

/// `url` without trailing slashes, for comparisons and joining paths.
pub fn normalize_url(url: &str) -> String {
    url.trim().trim_end_matches('/').to_string()
}

/// The state directory of `engine`'s script server when `url` is that server's (the script
/// keeps its URL there, beside its pid, version and data).
pub fn script_state(engine: &str, url: &str) -> Option<std::path::PathBuf> {
    let state = super::server::state_dir(engine);
    let script_url = std::fs::read_to_string(state.join("url")).ok()?;
    (normalize_url(&script_url) == url).then_some(state)
}

/// `bytes` parsed as `T`, or an error quoting the start of the answer.
pub fn parse_answer<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CallError> {
    serde_json::from_slice(bytes).map_err(|e| {
        CallError::Other(format!(
            "unexpected answer ({e}): {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
        ))
    })
}

/// Sorts ureq's errors into "the server is gone" and the rest.
pub fn map_transport(err: ureq::Error) -> CallError {
    match err {
        ureq::Error::Timeout(ureq::Timeout::Connect)
        | ureq::Error::Timeout(ureq::Timeout::Resolve) => {
            CallError::Transport(format!("connection timed out ({err})"))
        }
        ureq::Error::Timeout(_) => CallError::Timeout(err.to_string()),
        ureq::Error::Io(_)
        | ureq::Error::ConnectionFailed
        | ureq::Error::HostNotFound
        | ureq::Error::Protocol(_) => CallError::Transport(err.to_string()),
        ureq::Error::StatusCode(code) => CallError::Status {
            code,
            message: format!("HTTP {code}"),
        },
        other => CallError::Other(other.to_string()),
    }
}

/// Turns a failed call of `server`'s engine into an [`EngineError`] that keeps the server's
/// message and says what to do.
pub fn engine_error(
    server: &LocalServer,
    url: &str,
    operation: &str,
    err: CallError,
) -> EngineError {
    let engine = server.engine;
    match err {
        CallError::Transport(message) => EngineError::Unreachable {
            engine: engine.into(),
            target: crate::secret::redact(url),
            message: if operation == "connect" {
                format!("{}; {}", worded_connection_failure(&message), server.hint())
            } else {
                format!(
                    "lost the connection during {operation} ({}); the server may have \
                     stopped, restarted or run out of memory: check its log \
                     ($RAGDBEVAL_SERVER_DIR/{engine}/log for the script's server), or {}",
                    worded_connection_failure(&message),
                    server.hint()
                )
            },
        },
        CallError::Timeout(message) => EngineError::op(
            engine,
            operation,
            format!("request timed out ({message}); raise --timeout if the server is just slow"),
        ),
        CallError::Status { code, message } => {
            let message = match code {
                401 | 403 => {
                    format!("authentication failed (HTTP {code}): {message}; check --api-key-env")
                }
                404 => format!("not found (HTTP 404): {message}"),
                409 => format!("{message} (HTTP 409); pass --recreate to replace it"),
                _ => format!("{message} (HTTP {code})"),
            };
            EngineError::op(engine, operation, message)
        }
        // Before anything was sent, the client refusing the URL itself.
        CallError::Other(message) if operation == "connect" => EngineError::bad_param(
            engine,
            "url",
            format!(
                "`{}` is not a usable URL ({message}): expected {}",
                crate::secret::redact(url),
                server.url_example
            ),
        ),
        CallError::Other(message) => EngineError::op(engine, operation, message),
    }
}
