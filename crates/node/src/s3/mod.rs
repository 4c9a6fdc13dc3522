//! The S3 endpoint (`coopcache node --s3 ADDR`): unmodified S3 clients
//! (boto3, the AWS CLI, rclone, s3fs) read and write the origin through
//! the cluster. The protocol (REST routing, XML, Signature V4 and
//! presigned URLs) is the `s3s` crate's; this module maps it onto the
//! node: reads go through the cooperative cache as the gateway's do,
//! writes go to the origin through a draft and its commit, as a mount's
//! close does, and the writer's node takes the new version in.
//!
//! Buckets are the origin's top-level directories (as MinIO's and
//! Alluxio's file-system gateways map them): bucket `data`, key
//! `train/0001.bin` is the origin's `data/train/0001.bin`. A key ending in
//! `/` names a directory (what `mkdir` through rclone or s3fs makes).

mod errors;
mod keys;
mod list;
mod meta;
mod multipart;
mod names;
mod ops;
mod read;
mod service;
mod write;

use crate::gateway::GatewayOptions;
use crate::handle::NodeHandle;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::IntoResponse;
use axum::response::Response;
use s3s::service::S3Service;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub use keys::{AccessKeys, KeysError, MIN_ACCESS_KEY, MIN_SECRET_KEY};
pub use list::MAX_KEYS;
pub use meta::MAX_METADATA;
pub use multipart::{ABANDONED, MAX_PART, MAX_PARTS, MAX_SPOOLED, MAX_UPLOADS, MIN_PART};
pub use names::MAX_KEY;
pub use write::FLUSH;

/// How the S3 endpoint admits clients and commits writes.
#[derive(Clone, Debug, Default)]
pub struct S3Options {
    /// The access keys whose Signature V4 is accepted; `None` with
    /// `anonymous_read` serves reads to anyone and refuses every write.
    pub keys: Option<AccessKeys>,
    /// Unsigned requests may list and read (never write).
    pub anonymous_read: bool,
    /// C2Cfs `exclusive` mode: a write is committed at the file's manager
    /// before it is answered, as a mount's close is.
    pub exclusive: bool,
    /// Connection bounds, the gateway's.
    pub connections: GatewayOptions,
}

/// The endpoint's routes over `node`.
pub fn router(node: Arc<NodeHandle>, opts: &S3Options) -> Router {
    let service = service::build(node, opts);
    Router::new()
        .fallback(handle)
        .with_state(service)
        .layer(middleware::from_fn(request_id))
}

/// Hands a request to `s3s`. Its S3 errors are answers already (XML with
/// their codes); what is left is a failure to produce one at all.
async fn handle(State(service): State<S3Service>, req: Request) -> Response {
    let mut service = service;
    match tower::Service::call(&mut service, req).await {
        Ok(resp) => resp.map(Body::new),
        Err(e) => {
            tracing::warn!(error = ?e, "S3 request failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "internal error\n").into_response()
        }
    }
}

/// Serves the endpoint on `listener` with the gateway's connection bounds
/// until the task is dropped.
pub async fn serve(
    listener: tokio::net::TcpListener,
    node: Arc<NodeHandle>,
    opts: &S3Options,
) -> std::io::Result<()> {
    let closed = Arc::new(node.metrics().closed_counters("s3"));
    crate::gateway::serve_router(listener, router(node, opts), &opts.connections, closed).await
}

/// Every answer carries `x-amz-request-id` (S3 clients log it with their
/// errors; support asks for it): a process-wide counter, unique within a
/// daemon's life, in hex as S3's are.
async fn request_id(req: Request, next: Next) -> Response {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut resp = next.run(req).await;
    if let Ok(v) = HeaderValue::from_str(&format!("{id:016X}")) {
        resp.headers_mut().insert("x-amz-request-id", v);
    }
    resp
}
