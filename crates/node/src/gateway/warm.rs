//! `POST /v1/warm/PATH` (and `POST /v1/warm`, the whole origin): warms
//! the path (`crate::warm`) and streams its progress, one JSON object a
//! line (`application/x-ndjson`), at most every [`EVERY`] and once more
//! at the end. A client that disconnects stops the warm-up.
//!
//! `POST /v1/pin/PATH` and `POST /v1/evict/PATH` run the same way,
//! pinning or evicting each file (`crate::pins`); `DELETE /v1/pin/PATH`
//! unpins (a JSON object of what it let go), `GET /v1/pins` lists the
//! files pinned.

use super::error;
use crate::handle::NodeHandle;
use crate::pins::{PinnedFile, Unpinned};
use crate::warm::{Goal, Warm, WarmProgress};
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Duration;

/// Shortest time between two progress lines.
pub(super) const EVERY: Duration = Duration::from_millis(250);

pub(super) async fn warm_path(node: State<Arc<NodeHandle>>, path: Path<String>) -> Response {
    start(node, path, Goal::Warm).await
}

pub(super) async fn warm_all(State(node): State<Arc<NodeHandle>>) -> Response {
    start(State(node), Path(String::new()), Goal::Warm).await
}

pub(super) async fn pin_path(node: State<Arc<NodeHandle>>, path: Path<String>) -> Response {
    start(node, path, Goal::Pin).await
}

pub(super) async fn evict_path(node: State<Arc<NodeHandle>>, path: Path<String>) -> Response {
    start(node, path, Goal::Evict).await
}

pub(super) async fn unpin_path(
    State(node): State<Arc<NodeHandle>>,
    Path(path): Path<String>,
) -> Response {
    match node.unpin(path.trim_end_matches('/')).await {
        Ok(done) => Json::<Unpinned>(done).into_response(),
        Err(e) => error(e),
    }
}

pub(super) async fn unpin_all(State(node): State<Arc<NodeHandle>>) -> Response {
    unpin_path(State(node), Path(String::new())).await
}

pub(super) async fn pins(State(node): State<Arc<NodeHandle>>) -> Response {
    match node.pinned().await {
        Ok(files) => Json::<Vec<PinnedFile>>(files).into_response(),
        Err(e) => error(e),
    }
}

async fn start(
    State(node): State<Arc<NodeHandle>>,
    Path(path): Path<String>,
    goal: Goal,
) -> Response {
    // `dir/` names the directory, as `dir` does.
    let path = path.trim_end_matches('/').to_owned();
    let warm = match Warm::start_for(node, path, goal).await {
        Ok(w) => w,
        Err(e) => return error(e),
    };
    let rx = warm.progress();
    // The stream owns the warm-up: dropped with the response body when
    // the client goes away, which stops it.
    let lines = futures::stream::unfold((warm, rx, false), |(warm, mut rx, ended)| async move {
        if ended {
            return None;
        }
        let mut gone = false;
        if !rx.borrow().done {
            tokio::time::sleep(EVERY).await;
            // Waits for news unless some came during the sleep; an error:
            // the task ended without saying it was done (it panicked).
            gone = rx.changed().await.is_err();
        }
        let mut now: WarmProgress = rx.borrow_and_update().clone();
        if gone {
            now.ended();
        }
        let mut line = serde_json::to_vec(&now).unwrap_or_default();
        line.push(b'\n');
        let ended = now.done;
        Some((Ok::<_, std::io::Error>(line), (warm, rx, ended)))
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(lines),
    )
        .into_response()
}
