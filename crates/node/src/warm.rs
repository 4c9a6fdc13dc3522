//! Warm-up: `coopcache warm PATH` and `POST /v1/warm/PATH` read files
//! through the cooperative cache before a job needs them, so that its
//! first epoch finds them in the cluster's memory (what `juicefs warmup`
//! and Alluxio's `load` do for theirs).
//!
//! The node asked lists the path (a file, or a directory walked whole),
//! then warms its files [`FILES_AT_ONCE`] at a time. Each file is read on
//! its manager (`coopcache_core::warm` decides: a `Warm` message, answered
//! once the manager has read the file through its cache), so a dataset
//! warmed from one node fills the whole cluster's memory and its origin
//! reads are spread; a file is read here, streamed as a reader's would be
//! and the bytes dropped, when this node manages it, when the algorithm
//! does not share blocks (Base, Direct), and whenever the manager does
//! not read it (busy, gone, an error there).
//!
//! `serve` is the other side: it reads the files peers ask this node
//! to warm.

use crate::driver::{Event, Placement, ServeWarm, WarmEvent};
use crate::handle::{NodeError, NodeHandle};
use crate::origin::{EntryKind, OriginError};
use futures::StreamExt;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, watch};

/// Files read at once: enough to keep a slow origin's round trips
/// overlapped, few enough to leave the node's streams to its readers.
pub const FILES_AT_ONCE: usize = 4;

/// Files one warm-up lists at most (its paths are held in memory while it
/// runs, outside the cache's budget): beyond, it is refused before any is
/// read, and the user warms the directories one at a time.
pub const MAX_FILES: usize = 250_000;

/// Where a warm-up stands: what `POST /v1/warm` streams, one JSON object
/// a line.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WarmProgress {
    /// Files found so far.
    pub listed_files: u64,
    /// The listing is over: `listed_files` is the total.
    pub listed: bool,
    /// Files read whole.
    pub files: u64,
    /// Of `files`, those read on another member (each file's manager).
    #[serde(default)]
    pub elsewhere: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Files that could not be read (changed or removed meanwhile, an
    /// origin error).
    pub failed: u64,
    /// The first failure: the file and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// Why the warm-up stopped before its end, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every file was read or failed.
    pub done: bool,
}

impl WarmProgress {
    /// The task ended: if without saying it was done (it panicked), this
    /// says so.
    pub fn ended(&mut self) {
        if !self.done {
            let why = "the warm-up stopped unexpectedly (see the node's log)";
            self.error.get_or_insert_with(|| why.into());
            self.done = true;
        }
    }
}

/// A warm-up running on its own task, stopped when this is dropped (a
/// client that goes away stops the reading it asked for).
pub struct Warm {
    progress: watch::Receiver<WarmProgress>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Warm {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Warm {
    /// Starts warming `path` ("" for the whole origin): an error at once
    /// if it names nothing the origin has.
    pub async fn start(node: Arc<NodeHandle>, path: String) -> Result<Warm, NodeError> {
        Self::start_for(node, path, Goal::Warm).await
    }

    /// As [`Warm::start`], for `goal`: the same listing and progress for
    /// `coopcache pin` and `coopcache evict`.
    pub async fn start_for(
        node: Arc<NodeHandle>,
        path: String,
        goal: Goal,
    ) -> Result<Warm, NodeError> {
        let first = Top::of(&node, &path).await?;
        let (tx, rx) = watch::channel(WarmProgress::default());
        let task = tokio::spawn(async move {
            let files = match first {
                Top::File => {
                    tx.send_modify(|p| p.listed_files = 1);
                    vec![path]
                }
                Top::Dir => match list(&node, &path, &tx).await {
                    Ok(files) => files,
                    Err(e) => {
                        return tx.send_modify(|p| {
                            p.error = Some(e);
                            p.done = true;
                        });
                    }
                },
            };
            tx.send_modify(|p| p.listed = true);
            read_all(&node, files, goal, &tx).await;
            tx.send_modify(|p| p.done = true);
        });
        Ok(Warm { progress: rx, task })
    }

    /// Waits for the end, and its last progress (an `error` if the task
    /// ended without saying it was done: it panicked).
    pub async fn finish(self) -> WarmProgress {
        let mut rx = self.progress.clone();
        while !rx.borrow_and_update().done {
            if rx.changed().await.is_err() {
                let mut last = rx.borrow().clone();
                last.ended();
                return last;
            }
        }
        rx.borrow().clone()
    }

    /// Its progress, as it changes.
    pub fn progress(&self) -> watch::Receiver<WarmProgress> {
        self.progress.clone()
    }
}

/// What a run over a path's files does to each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal {
    /// Reads it through the cache.
    Warm,
    /// Reads it and pins it on this node (`crate::pins`); a file the
    /// pinned share cannot hold stops the run.
    Pin,
    /// Drops its blocks from the cluster, cached or pinned (`Evict` to
    /// each block's manager); `bytes` counts this node's blocks' size.
    Evict,
}

impl Goal {
    /// Its verb: the gateway's `/v1/VERB/PATH`, the S3 side's
    /// `?coopcache-VERB=`, the command's name.
    pub fn verb(self) -> &'static str {
        match self {
            Goal::Warm => "warm",
            Goal::Pin => "pin",
            Goal::Evict => "evict",
        }
    }

    /// What a file it was done to is: "warmed", "pinned", "evicted".
    pub fn done(self) -> &'static str {
        match self {
            Goal::Warm => "warmed",
            Goal::Pin => "pinned",
            Goal::Evict => "evicted",
        }
    }
}

/// What a warm-up's path names.
enum Top {
    File,
    Dir,
}

impl Top {
    async fn of(node: &NodeHandle, path: &str) -> Result<Top, NodeError> {
        if !path.is_empty() {
            match node.stat(path).await {
                Ok(_) => return Ok(Top::File),
                Err(e) => {
                    // Not a file: a directory (an S3 prefix is one if
                    // something is under it), or nothing.
                    let not_a_file = matches!(&e, NodeError::Origin(OriginError::NotAFile { .. }));
                    let listed = node.origin().list(path).await;
                    return match listed {
                        Ok(entries) if not_a_file || !entries.is_empty() => Ok(Top::Dir),
                        _ => Err(e),
                    };
                }
            }
        }
        node.origin().list(path).await?;
        Ok(Top::Dir)
    }
}

/// Every file under `dir`, depth first, at most [`MAX_FILES`].
async fn list(
    node: &NodeHandle,
    dir: &str,
    tx: &watch::Sender<WarmProgress>,
) -> Result<Vec<String>, String> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(dir) = dirs.pop() {
        let entries = node
            .origin()
            .list(&dir)
            .await
            .map_err(|e| format!("listing {dir:?}: {e}"))?;
        for e in entries {
            let path = match dir.as_str() {
                "" => e.name,
                dir => format!("{dir}/{}", e.name),
            };
            match e.kind {
                EntryKind::File => files.push(path),
                EntryKind::Dir => dirs.push(path),
                // A link's target is warmed under its own name, if under
                // the path at all: never twice, never outside.
                EntryKind::Symlink => {}
            }
        }
        if files.len() > MAX_FILES {
            return Err(format!(
                "{dir:?} holds over {MAX_FILES} files: warm its directories one at a time"
            ));
        }
        tx.send_modify(|p| p.listed_files = files.len() as u64);
    }
    Ok(files)
}

/// Does `goal` to `files`, [`FILES_AT_ONCE`] at a time.
async fn read_all(
    node: &Arc<NodeHandle>,
    files: Vec<String>,
    goal: Goal,
    tx: &watch::Sender<WarmProgress>,
) {
    let reads = futures::stream::iter(files)
        .map(|path| async move {
            let r = match goal {
                Goal::Warm => warm_one(node, &path, tx).await,
                Goal::Pin => pin_one(node, &path, tx).await,
                Goal::Evict => evict_one(node, &path, tx).await,
            };
            (path, r)
        })
        .buffer_unordered(FILES_AT_ONCE);
    let mut reads = std::pin::pin!(reads);
    while let Some((path, r)) = reads.next().await {
        let full = matches!(r, Err(NodeError::PinFull { .. }));
        tx.send_modify(|p| match r {
            Ok(()) => p.files += 1,
            Err(e) if full => p.error = Some(e.to_string()),
            Err(e) => {
                p.failed += 1;
                p.first_error.get_or_insert_with(|| format!("{path}: {e}"));
            }
        });
        // The share is full: the files after this one would not fit either.
        if full {
            return;
        }
    }
}

/// Pins `path` on this node, counting its bytes as they are pinned.
async fn pin_one(
    node: &Arc<NodeHandle>,
    path: &str,
    tx: &watch::Sender<WarmProgress>,
) -> Result<(), NodeError> {
    node.pin_file(path, |n| tx.send_modify(|p| p.bytes += n))
        .await
        .map(drop)
}

/// Drops `path`'s blocks from this node.
async fn evict_one(
    node: &Arc<NodeHandle>,
    path: &str,
    tx: &watch::Sender<WarmProgress>,
) -> Result<(), NodeError> {
    let blocks = node.evict_file(path).await?;
    let bytes = blocks * u64::from(node.block_size());
    tx.send_modify(|p| p.bytes += bytes);
    Ok(())
}

/// Warms `path`: on its manager, or here.
async fn warm_one(
    node: &Arc<NodeHandle>,
    path: &str,
    tx: &watch::Sender<WarmProgress>,
) -> Result<(), NodeError> {
    let version = node.stat(path).await?;
    let (reply, placed) = oneshot::channel();
    let size = version.size;
    let place = WarmEvent::Place {
        path: Arc::from(path),
        size,
        reply,
    };
    node.send_event(Event::Warms(place)).await?;
    match placed.await.map_err(|_| NodeError::Shutdown)? {
        Placement::Elsewhere { bytes } => {
            tx.send_modify(|p| {
                p.bytes += bytes;
                p.elsewhere += 1;
            });
            Ok(())
        }
        Placement::Here => {
            read_here(node, path, version, |n| tx.send_modify(|p| p.bytes += n)).await
        }
    }
}

/// Reads `version` of `path` whole through this node's cache, counting its
/// bytes as they come.
async fn read_here(
    node: &Arc<NodeHandle>,
    path: &str,
    version: Arc<crate::origin::FileVersion>,
    mut on_bytes: impl FnMut(u64),
) -> Result<(), NodeError> {
    let size = version.size;
    let parts = node.stream(Arc::from(path), version, 0..size);
    let mut parts = std::pin::pin!(parts);
    while let Some(part) = parts.next().await {
        let n = part?.len() as u64;
        on_bytes(n);
        node.metrics().warmed_bytes.inc_by(n);
    }
    node.metrics().warmed_files.inc();
    Ok(())
}

/// Reads the files peers ask this node to warm, as they come (the core
/// bounds how many at once: the channel's capacity), and tells the driver
/// each one's end. Runs until the node stops.
pub(crate) async fn serve(node: Arc<NodeHandle>, mut files: mpsc::Receiver<ServeWarm>) {
    let mut reading = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            Some(file) = files.recv() => {
                let node = node.clone();
                reading.spawn(async move {
                    let read = async {
                        let version = node.stat(&file.path).await?;
                        let size = version.size;
                        read_here(&node, &file.path, version, |_| {}).await.map(|()| size)
                    };
                    let bytes = match read.await {
                        Ok(size) => Some(size),
                        Err(e) => {
                            tracing::debug!(path = %file.path, peer = file.from, "a peer's warm-up: {e}");
                            None
                        }
                    };
                    let (from, nonce) = (file.from, file.nonce);
                    let _ = node.send_event(Event::Warms(WarmEvent::Served { from, nonce, bytes })).await;
                });
            }
            Some(_) = reading.join_next() => {}
            else => return,
        }
    }
}
