//! Classifying gRPC failures: an unreachable server, a timeout, a rejected request.

use super::endpoint::Endpoint;
use super::*;
use crate::engine::worded_connection_failure;

/// What to do when no server answers at the URL.
pub(super) fn start_hint(endpoint: &Endpoint) -> String {
    let mut hint = String::from(
        "Start a Qdrant server (e.g. `docker run -p 6333:6333 -p 6334:6334 qdrant/qdrant`) \
         or check --url: it must be the gRPC port (default http://localhost:6334)",
    );
    if endpoint.port == 6333 {
        hint.push_str("; 6333 is Qdrant's REST port, gRPC listens on 6334");
    }
    if endpoint.https {
        hint.push_str("; for https, check that the server has TLS enabled");
    }
    hint
}

/// Maps an error from `open` (health check, credential probe): transport failures become
/// `Unreachable` with the start/--url advice.
pub(super) fn open_error(url: &str, endpoint: &Endpoint, err: QdrantError) -> EngineError {
    match classify(url, "connect", err) {
        EngineError::Unreachable {
            engine,
            target,
            message,
        } => EngineError::Unreachable {
            engine,
            target,
            message: format!("{message}. {}", start_hint(endpoint)),
        },
        other => other,
    }
}

/// True for a status that means the transport failed rather than the server refusing.
pub(super) fn is_transport_failure(code: i32, message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    // qdrant-client reports a failed (re)connect as INTERNAL "Failed to connect to ...".
    code == grpc_code::UNAVAILABLE
        || m.contains("failed to connect")
        || ((code == grpc_code::INTERNAL
            || code == grpc_code::UNKNOWN
            || code == grpc_code::CANCELLED)
            && (m.contains("transport error")
                || m.contains("connection")
                || m.contains("broken pipe")
                || m.contains("h2 protocol error")))
}

/// Maps a client error to an [`EngineError`], keeping the server's own message.
pub(super) fn classify(url: &str, operation: &str, err: QdrantError) -> EngineError {
    let status = match &err {
        QdrantError::ResponseError { status } => status,
        QdrantError::ResourceExhaustedError {
            status,
            retry_after_seconds,
        } => {
            return EngineError::op(
                ENGINE,
                operation,
                format!(
                    "server is rate limiting ({}); retry after {retry_after_seconds}s",
                    status.message()
                ),
            );
        }
        QdrantError::InvalidUri(e) => {
            return EngineError::bad_param(ENGINE, "url", format!("`{url}` is not a URL: {e}"));
        }
        QdrantError::Io(e) => {
            return EngineError::Unreachable {
                engine: ENGINE.into(),
                target: url.into(),
                message: format!(
                    "{} (during {operation})",
                    worded_connection_failure(&e.to_string())
                ),
            };
        }
        other => return EngineError::op(ENGINE, operation, other),
    };
    let code = status.code() as i32;
    let message = status.message();
    if is_transport_failure(code, message) {
        // The transport's message is a `Debug` dump of nested errors: its cause in words.
        let cause = worded_connection_failure(message);
        let message = if operation == "connect" {
            cause
        } else {
            format!(
                "lost the connection during {operation} ({cause}); the server may have \
                 stopped, restarted or run out of memory: check its log"
            )
        };
        return EngineError::Unreachable {
            engine: ENGINE.into(),
            target: url.into(),
            message,
        };
    }
    let message = match code {
        grpc_code::UNAUTHENTICATED | grpc_code::PERMISSION_DENIED => {
            format!("authentication failed: {message}; check QDRANT_API_KEY / --api-key-env")
        }
        grpc_code::DEADLINE_EXCEEDED => {
            format!("request timed out ({message}); raise --timeout if the server is just slow")
        }
        grpc_code::INVALID_ARGUMENT => format!("server rejected the request: {message}"),
        grpc_code::NOT_FOUND => format!("not found: {message}"),
        grpc_code::ALREADY_EXISTS => format!("{message}; pass --recreate to replace it"),
        _ => format!("{message} (gRPC status {:?})", status.code()),
    };
    EngineError::op(ENGINE, operation, message)
}
