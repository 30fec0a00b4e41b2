//! Unary calls of the Milvus gRPC service over a tonic channel, and their errors in words.
//!
//! Each method is called by its path with prost's codec: the same HTTP/2 request a generated
//! client sends, without generating one (the messages are in [`super::proto`]).

use prost::Message;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use super::proto::Status;
use super::*;

/// Answers up to this size are read (tonic's default is 4 MiB; a batch search answers more).
const MAX_ANSWER: usize = 256 << 20;

/// The gRPC path of MilvusService method `$m`.
macro_rules! method {
    ($m:literal) => {
        concat!("/milvus.proto.milvus.MilvusService/", $m)
    };
}
pub(super) use method;

/// The endpoint for `url` (`http://` or `https://`, checked by the caller) with the
/// per-request deadline; TLS for `https://` with the system's roots.
pub(super) fn endpoint(url: &str, timeout: Duration) -> EngineResult<Endpoint> {
    let bad = |e: &dyn std::fmt::Display| {
        EngineError::bad_param(
            ENGINE,
            "url",
            format!("`{}`: {e}", crate::secret::redact(url)),
        )
    };
    let mut ep = Endpoint::from_shared(url.to_string())
        .map_err(|e| bad(&e))?
        .timeout(timeout)
        .connect_timeout(timeout.min(MAX_CONNECT_TIMEOUT))
        .tcp_nodelay(true);
    if url.starts_with("https://") {
        ep = ep
            .tls_config(ClientTlsConfig::new().with_native_roots())
            .map_err(|e| bad(&e))?;
    }
    Ok(ep)
}

/// A failed call: the server's status, or a transport failure.
#[derive(Debug)]
pub(super) enum CallError {
    /// gRPC failed (unreachable, deadline, unimplemented, ...).
    Grpc(tonic::Status),
    /// Milvus answered with a non-success `common.Status`.
    Milvus { code: i32, reason: String },
}

impl CallError {
    pub(super) fn is_unimplemented(&self) -> bool {
        matches!(self, CallError::Grpc(s) if s.code() == tonic::Code::Unimplemented)
    }

    /// Whether the server could not be reached at all (no answer came back).
    pub(super) fn is_unreachable(&self) -> bool {
        match self {
            CallError::Grpc(s) => matches!(
                s.code(),
                tonic::Code::Unavailable | tonic::Code::DeadlineExceeded
            ) || connection_cause(&format!("{s:?}")).is_some(),
            CallError::Milvus { .. } => false,
        }
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Grpc(s) => {
                let raw = format!("{s:?}");
                match connection_cause(&raw) {
                    Some(cause) => write!(f, "{cause}"),
                    None if s.code() == tonic::Code::DeadlineExceeded
                        || s.code() == tonic::Code::Cancelled =>
                    {
                        write!(f, "no answer within the request timeout (--timeout)")
                    }
                    None => {
                        let msg = s.message().lines().next().unwrap_or("");
                        write!(f, "gRPC {:?}: {msg}", s.code())
                    }
                }
            }
            CallError::Milvus { code, reason } => {
                let reason = reason.lines().next().unwrap_or("");
                write!(f, "{reason} (Milvus code {code})")
            }
        }
    }
}

/// `Err` for a Milvus status that is not success (both the code and the deprecated error
/// code must be 0).
pub(super) fn check(status: Option<&Status>) -> Result<(), CallError> {
    match status {
        Some(s) if s.code != 0 || s.error_code != 0 => Err(CallError::Milvus {
            code: if s.code != 0 { s.code } else { s.error_code },
            reason: s.reason.clone(),
        }),
        _ => Ok(()),
    }
}

/// One unary call of `path` on `channel`.
pub(super) async fn call<Req, Resp>(
    channel: &Channel,
    path: &'static str,
    request: Req,
) -> Result<Resp, CallError>
where
    Req: Message + Send + Sync + 'static,
    Resp: Message + Default + Send + Sync + 'static,
{
    let mut grpc = tonic::client::Grpc::new(channel.clone()).max_decoding_message_size(MAX_ANSWER);
    grpc.ready()
        .await
        .map_err(|e| CallError::Grpc(tonic::Status::unavailable(format!("{e:?}"))))?;
    let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
    grpc.unary(
        tonic::Request::new(request),
        PathAndQuery::from_static(path),
        codec,
    )
    .await
    .map(tonic::Response::into_inner)
    .map_err(CallError::Grpc)
}
