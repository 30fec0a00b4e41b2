//! The HTTP client: one request with a size-capped answer, and the mapping of transport
//! and API failures to [`EngineError`]s that say what to do.

use crate::engine::worded_connection_failure;
use std::io::Read as _;

use super::server::LOCAL_SERVER;
use super::*;

/// Thin blocking HTTP client: one pooled agent (shared by all search threads) and the base URL.
pub(super) struct Http {
    pub(super) agent: ureq::Agent,
    pub(super) base: String,
    pub(super) api_key: Option<String>,
}

/// How a request failed, before it is turned into an [`EngineError`].
pub(super) enum CallError {
    /// No HTTP exchange happened or it broke off (refused, reset, timed out while connecting).
    Transport(String),
    /// The request was too slow.
    Timeout(String),
    /// The server answered with an error status; `message` is its own text.
    Status { code: u16, message: String },
    /// Anything else (an unparsable answer, ...).
    Other(String),
}

/// Chroma's error body: `{"error": "NotFoundError", "message": "..."}`.
#[derive(Deserialize)]
pub(super) struct ErrorBody {
    #[serde(default)]
    pub(super) error: String,
    #[serde(default)]
    pub(super) message: String,
}

impl Http {
    /// Sends one request and returns the body of a 2xx answer.
    pub(super) fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Vec<u8>, CallError> {
        self.send_to(method, &format!("{}{path}", self.base), body)
    }

    /// [`Self::send`] to a whole URL (the query URL is built once per collection).
    pub(super) fn send_to(
        &self,
        method: &str,
        url: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Vec<u8>, CallError> {
        let result = match (method, body) {
            ("GET", _) => self.with_key_nobody(self.agent.get(url)).call(),
            ("DELETE", _) => self.with_key_nobody(self.agent.delete(url)).call(),
            ("PUT", body) => self
                .with_key_body(self.agent.put(url))
                .send(body.unwrap_or_default()),
            (_, body) => self
                .with_key_body(self.agent.post(url))
                .send(body.unwrap_or_default()),
        };
        let mut response = result.map_err(map_transport)?;
        let code = response.status().as_u16();
        // Read into room for the whole answer when its length is announced (ureq's
        // `read_to_vec` starts from an empty `Vec` and grows it while reading).
        let announced = response.body().content_length().unwrap_or(0);
        let mut bytes = Vec::with_capacity(announced.clamp(ANSWER_CAPACITY, MAX_PREALLOCATED) as usize);
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

    pub(super) fn with_key_nobody(
        &self,
        req: ureq::RequestBuilder<ureq::typestate::WithoutBody>,
    ) -> ureq::RequestBuilder<ureq::typestate::WithoutBody> {
        match &self.api_key {
            Some(key) => req.header("x-chroma-token", key),
            None => req,
        }
    }

    pub(super) fn with_key_body(
        &self,
        req: ureq::RequestBuilder<ureq::typestate::WithBody>,
    ) -> ureq::RequestBuilder<ureq::typestate::WithBody> {
        let req = req.header("content-type", "application/json");
        match &self.api_key {
            Some(key) => req.header("x-chroma-token", key),
            None => req,
        }
    }

    /// A request whose JSON answer is parsed into `T`.
    pub(super) fn json<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> Result<T, CallError> {
        self.json_to(method, &format!("{}{path}", self.base), body)
    }

    /// [`Self::json`] to a whole URL.
    pub(super) fn json_to<T: DeserializeOwned>(
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
                serde_json::to_writer(&mut bytes, b).map_err(|e| CallError::Other(e.to_string()))?;
                Some(bytes)
            }
            None => None,
        };
        let bytes = self.send_to(method, url, body)?;
        serde_json::from_slice(&bytes).map_err(|e| {
            CallError::Other(format!(
                "unexpected answer ({e}): {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
            ))
        })
    }
}

/// Bytes reserved for a request body before it is serialised (a 768-d query is ~8 KB).
const BODY_CAPACITY: usize = 4096;

/// Bytes reserved for an answer of unknown length (a query answer for k = 10 is ~400 B).
const ANSWER_CAPACITY: u64 = 4096;

/// The most reserved up front for an answer of announced length; a longer one grows as it is read.
const MAX_PREALLOCATED: u64 = 64 << 20;

/// Sorts ureq's errors into "the server is gone" and the rest.
pub(super) fn map_transport(err: ureq::Error) -> CallError {
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

/// Turns a failed call into an [`EngineError`] that keeps the server's message.
pub(super) fn engine_error(url: &str, operation: &str, err: CallError) -> EngineError {
    match err {
        CallError::Transport(message) => EngineError::Unreachable {
            engine: ENGINE.into(),
            target: crate::secret::redact(url),
            message: if operation == "connect" {
                format!(
                    "{}; {}",
                    worded_connection_failure(&message),
                    LOCAL_SERVER.hint()
                )
            } else {
                let message = worded_connection_failure(&message);
                format!(
                    "lost the connection during {operation} ({message}); the server may have \
                     stopped, restarted or run out of memory: check its log \
                     ($RAGDBEVAL_SERVER_DIR/chroma/log for the script's server), or {}",
                    LOCAL_SERVER.hint()
                )
            },
        },
        CallError::Timeout(message) => EngineError::op(
            ENGINE,
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
            EngineError::op(ENGINE, operation, message)
        }
        // Before anything was sent, the client refusing the URL itself.
        CallError::Other(message) if operation == "connect" => EngineError::bad_param(
            ENGINE,
            "url",
            format!("`{url}` is not a usable URL ({message}): expected http://HOST:PORT"),
        ),
        CallError::Other(message) => EngineError::op(ENGINE, operation, message),
    }
}
