//! The HTTP gateway: `GET /v1/files/PATH` (with `Range`, 404 and 416 as
//! HTTP defines them), `GET /v1/status` (JSON) and `GET /metrics`
//! (Prometheus). It listens on loopback by default: it is the node's local
//! access point, like a mount, and does not authenticate its clients.

use crate::handle::{NodeError, NodeHandle};
use crate::origin::OriginError;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use std::sync::Arc;

/// The gateway's routes over `node`.
pub fn router(node: Arc<NodeHandle>) -> Router {
    Router::new()
        .route("/v1/files/{*path}", get(file))
        .route("/v1/status", get(status))
        .route("/metrics", get(metrics))
        .with_state(node)
}

/// Serves the gateway on `listener` until the task is dropped.
pub async fn serve(
    listener: tokio::net::TcpListener,
    node: Arc<NodeHandle>,
) -> std::io::Result<()> {
    axum::serve(listener, router(node)).await
}

fn plain(code: StatusCode, msg: String) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        msg + "\n",
    )
        .into_response()
}

fn error(e: NodeError) -> Response {
    let code = match &e {
        NodeError::Origin(o) if o.is_not_found() => StatusCode::NOT_FOUND,
        NodeError::Origin(OriginError::PermissionDenied { .. }) => StatusCode::FORBIDDEN,
        NodeError::Origin(OriginError::BadPath { .. }) => StatusCode::BAD_REQUEST,
        NodeError::Shutdown => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::BAD_GATEWAY,
    };
    plain(code, e.to_string())
}

/// A parsed `Range` header against a file of `size` bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum RangeSpec {
    /// No (usable) range: the whole file.
    Whole,
    /// One satisfiable range, end exclusive.
    Part(u64, u64),
    /// No byte of the range is in the file.
    Unsatisfiable,
}

/// Parses a single `bytes=` range (RFC 9110 section 14.1.2). Several
/// ranges, other units or malformed values are ignored (the whole file is
/// sent), as the RFC allows.
pub fn parse_range(value: &str, size: u64) -> RangeSpec {
    let Some(spec) = value.trim().strip_prefix("bytes=") else {
        return RangeSpec::Whole;
    };
    if spec.contains(',') {
        return RangeSpec::Whole;
    }
    let Some((a, b)) = spec.split_once('-') else {
        return RangeSpec::Whole;
    };
    let (a, b) = (a.trim(), b.trim());
    match (a.parse::<u64>(), b.parse::<u64>()) {
        // bytes=-N: the last N bytes; an empty file has none (RFC 9110
        // section 14.1.3), and `Part(0, 0)` would give an empty 206 whose
        // `Content-Range` last byte is `0 - 1`.
        (Err(_), Ok(n)) if a.is_empty() => match n {
            0 => RangeSpec::Unsatisfiable,
            _ if size == 0 => RangeSpec::Unsatisfiable,
            n => RangeSpec::Part(size.saturating_sub(n), size),
        },
        (Ok(start), _) if start >= size => RangeSpec::Unsatisfiable,
        (Ok(start), Err(_)) if b.is_empty() => RangeSpec::Part(start, size),
        // `last` may be u64::MAX: the end saturates rather than overflow.
        (Ok(start), Ok(last)) if last >= start => {
            RangeSpec::Part(start, last.saturating_add(1).min(size))
        }
        _ => RangeSpec::Whole,
    }
}

async fn file(
    State(node): State<Arc<NodeHandle>>,
    Path(path): Path<String>,
    headers: HeaderMap,
) -> Response {
    let version = match node.stat(&path).await {
        Ok(v) => v,
        Err(e) => return error(e),
    };
    let size = version.size;
    let range = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .map_or(RangeSpec::Whole, |v| parse_range(v, size));
    let (code, start, end) = match range {
        RangeSpec::Whole => (StatusCode::OK, 0, size),
        RangeSpec::Part(s, e) => (StatusCode::PARTIAL_CONTENT, s, e),
        RangeSpec::Unsatisfiable => {
            let mut r = plain(
                StatusCode::RANGE_NOT_SATISFIABLE,
                format!("range outside {path} ({size} bytes)"),
            );
            if let Ok(v) = HeaderValue::from_str(&format!("bytes */{size}")) {
                r.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            return r;
        }
    };
    let etag = HeaderValue::from_str(&format!("\"{}\"", version.version.trim_matches('"'))).ok();
    let stream = node
        .stream(Arc::from(path.as_str()), version, start..end)
        .map(|r| r.map_err(std::io::Error::other));
    let mut resp = Response::new(Body::from_stream(stream));
    *resp.status_mut() = code;
    let h = resp.headers_mut();
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(end - start));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    if let Some(etag) = etag {
        h.insert(header::ETAG, etag);
    }
    if code == StatusCode::PARTIAL_CONTENT
        && let Ok(v) = HeaderValue::from_str(&format!("bytes {start}-{}/{size}", end - 1))
    {
        h.insert(header::CONTENT_RANGE, v);
    }
    resp
}

async fn status(State(node): State<Arc<NodeHandle>>) -> Response {
    match node.status().await {
        Ok(s) => axum::Json(s).into_response(),
        Err(e) => error(e),
    }
}

async fn metrics(State(node): State<Arc<NodeHandle>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        node.metrics().encode(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_rfc_9110() {
        use RangeSpec::*;
        assert_eq!(parse_range("bytes=0-9", 100), Part(0, 10));
        assert_eq!(parse_range("bytes=90-200", 100), Part(90, 100));
        assert_eq!(parse_range("bytes=50-", 100), Part(50, 100));
        assert_eq!(parse_range("bytes=-10", 100), Part(90, 100));
        assert_eq!(parse_range("bytes=-500", 100), Part(0, 100));
        assert_eq!(parse_range("bytes=100-", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=-0", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=5-1", 100), Whole);
        assert_eq!(parse_range("bytes=0-1,5-6", 100), Whole);
        assert_eq!(parse_range("items=0-1", 100), Whole);
        assert_eq!(parse_range("bytes=x-1", 100), Whole);
    }

    /// Found by the fuzz target `gateway_range`: a suffix range of an empty
    /// file was `Part(0, 0)`, and a last byte of u64::MAX overflowed.
    #[test]
    fn ranges_of_empty_files_and_huge_ends_are_sound() {
        use RangeSpec::*;
        assert_eq!(parse_range("bytes=-5", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-0", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-", 0), Unsatisfiable);
        let max = u64::MAX.to_string();
        assert_eq!(parse_range(&format!("bytes=0-{max}"), 100), Part(0, 100));
        assert_eq!(
            parse_range(&format!("bytes=5-{max}"), u64::MAX),
            Part(5, u64::MAX)
        );
    }
}
