//! The HTTP gateway: `GET`/`HEAD /v1/files/PATH` (with `Range`,
//! conditional requests and `Last-Modified` as RFC 9110 defines them),
//! `GET /v1/status` (JSON), `GET /metrics` (Prometheus: OpenMetrics or
//! the 0.0.4 text format, as the `Accept` header asks) and a dashboard at
//! `GET /` that shows the status in a browser.
//!
//! It listens on loopback by default: it is the node's local access point,
//! like a mount, and anyone who can connect reads every file the daemon
//! can. A bearer token ([`Token`]) narrows that; any other address needs
//! one ([`check_exposure`]). Connections are bounded ([`GatewayOptions`]):
//! slow and silent clients give way to others (`pace.rs`, `slots.rs`).

mod auth;
mod conditional;
mod dashboard;
mod exposition;
mod listener;
mod pace;
mod range;
mod slots;
mod warm;

use crate::handle::{NodeError, NodeHandle};
use crate::origin::OriginError;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use futures::StreamExt;
use std::sync::Arc;

pub use auth::{AccessError, MIN_TOKEN, Token, check_exposure};
pub use conditional::{Decision, Validators, evaluate};
pub use exposition::{Format, negotiate, to_text_004};
pub(crate) use listener::serve_router;
pub use listener::{
    GatewayOptions, MAX_CONNECTIONS, RESERVED_DESCRIPTORS, connection_cap, raise_open_file_limit,
};
pub use pace::{MIN_RATE, RATE_WINDOW, SEND_BACKLOG};
pub use range::{RangeSpec, parse_range};
pub use slots::EVICT_AFTER;
use warm::{evict_path, pin_path, pins, unpin_all, unpin_path, warm_all, warm_path};

/// The gateway's routes over `node`, behind `token` if one is given.
pub fn router(node: Arc<NodeHandle>, token: Option<Token>) -> Router {
    let routes = Router::new()
        .route("/v1/files/{*path}", get(file))
        .route("/v1/status", get(status))
        .route("/v1/warm", post(warm_all))
        .route("/v1/warm/{*path}", post(warm_path))
        .route("/v1/pin", delete(unpin_all))
        .route("/v1/pin/{*path}", post(pin_path).delete(unpin_path))
        .route("/v1/pins", get(pins))
        .route("/v1/evict/{*path}", post(evict_path))
        .route("/metrics", get(metrics))
        .merge(dashboard::routes())
        .with_state(node);
    match token {
        Some(token) => routes.layer(middleware::from_fn_with_state(Arc::new(token), authorize)),
        None => routes,
    }
}

/// Serves the gateway on `listener`, bounded by `opts`, until the task is
/// dropped.
pub async fn serve(
    listener: tokio::net::TcpListener,
    node: Arc<NodeHandle>,
    opts: &GatewayOptions,
) -> std::io::Result<()> {
    let closed = Arc::new(node.metrics().closed_counters("http"));
    listener::serve_router(listener, router(node, opts.token.clone()), opts, closed).await
}

async fn authorize(State(token): State<Arc<Token>>, req: Request, next: Next) -> Response {
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if token.admits(presented) {
        return next.run(req).await;
    }
    let mut r = plain(
        StatusCode::UNAUTHORIZED,
        "this gateway needs `Authorization: Bearer TOKEN` (the node's --http-token-file)".into(),
    );
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"coopcache\""),
    );
    r
}

fn plain(code: StatusCode, msg: String) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        msg + "\n",
    )
        .into_response()
}

/// An error as a 4xx or 5xx; messages name the path the client gave, never
/// the origin's own paths.
fn error(e: NodeError) -> Response {
    let code = match &e {
        NodeError::Origin(o) if o.is_not_found() => StatusCode::NOT_FOUND,
        NodeError::Origin(OriginError::PermissionDenied { .. }) => StatusCode::FORBIDDEN,
        NodeError::Origin(OriginError::BadPath { .. }) => StatusCode::BAD_REQUEST,
        NodeError::Shutdown => StatusCode::SERVICE_UNAVAILABLE,
        NodeError::PinFull { .. } => StatusCode::INSUFFICIENT_STORAGE,
        _ => StatusCode::BAD_GATEWAY,
    };
    plain(code, e.to_string())
}

async fn file(
    State(node): State<Arc<NodeHandle>>,
    Path(path): Path<String>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    let version = match node.stat(&path).await {
        Ok(v) => v,
        Err(e) => return error(e),
    };
    let size = version.size;
    let validators = Validators::new(&version.version, version.modified);
    let mut validator_headers = HeaderMap::new();
    if let Ok(etag) = HeaderValue::from_str(&validators.etag()) {
        validator_headers.insert(header::ETAG, etag);
    }
    if let Some(date) = validators.last_modified()
        && let Ok(date) = HeaderValue::from_str(&date)
    {
        validator_headers.insert(header::LAST_MODIFIED, date);
    }
    let honour_range = match evaluate(&headers, &validators) {
        Decision::Serve { honour_range } => honour_range,
        Decision::NotModified => {
            let mut r = StatusCode::NOT_MODIFIED.into_response();
            r.headers_mut().extend(validator_headers);
            return r;
        }
        Decision::Failed => {
            let mut r = plain(
                StatusCode::PRECONDITION_FAILED,
                format!(
                    "{path} is at version {}, which the request's preconditions refuse",
                    validators.etag()
                ),
            );
            r.headers_mut().extend(validator_headers);
            return r;
        }
    };
    let range = headers
        .get(header::RANGE)
        .filter(|_| honour_range)
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
    // HEAD: the same headers, no body, and no block read.
    let body = if method == Method::HEAD {
        Body::empty()
    } else {
        let stream = node
            .stream(Arc::from(path.as_str()), version, start..end)
            .map(|r| r.map_err(std::io::Error::other));
        Body::from_stream(stream)
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = code;
    let h = resp.headers_mut();
    h.extend(validator_headers);
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(end - start));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
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

async fn metrics(State(node): State<Arc<NodeHandle>>, headers: HeaderMap) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = negotiate(accept);
    let open = node.metrics().encode();
    let body = match format {
        Format::OpenMetrics => open,
        Format::Text004 => to_text_004(&open),
    };
    (
        [
            (header::CONTENT_TYPE, format.content_type()),
            (header::VARY, "Accept"),
        ],
        body,
    )
        .into_response()
}
