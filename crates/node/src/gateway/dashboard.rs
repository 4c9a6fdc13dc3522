//! The dashboard: a page at `/` an operator leaves open in a browser. It
//! polls `/v1/status` once a second and shows the members, this node's
//! memory against its budget, reads per level and origin bytes per second
//! over the last five minutes, and the error counters.
//!
//! The page, its script and its style sheet are compiled into the binary:
//! a node serves them with nothing beside it on disk, and a browser on a
//! closed network needs no CDN. They reveal nothing `/v1/status` does not,
//! and sit behind the same bearer token as every other route.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

const INDEX: &str = include_str!("dashboard/index.html");
const SCRIPT: &str = include_str!("dashboard/dashboard.js");
const STYLE: &str = include_str!("dashboard/dashboard.css");

/// The dashboard's routes: `/` and the assets it links to, relative to it.
pub(super) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            "/dashboard.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/dashboard.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
}

/// A static asset. `no-cache` makes a browser revalidate, so a page left
/// open across an upgrade of the node loads the new script on reload
/// instead of pairing an old script with a new status format.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}
