//! Pinned files (`coopcache pin`, `POST /v1/pin/PATH`): each block of a
//! file's current version read through the cache and kept by this node
//! outside its algorithm's cache, in the share `--max-pinned` sets aside
//! from the memory budget (`coopcache_core::protocol`'s pinned blocks).
//! No policy evicts them; peers' reads reach them through the blocks'
//! managers. The node remembers which version of which path it pinned:
//! pinning a path again after it changed at the origin pins the new
//! version and lets the old one go; `unpin` needs no origin at all.

use crate::block::{Block, BlockId};
use crate::driver::{Event, PinEvent};
use crate::handle::{NodeError, NodeHandle};
use futures::StreamExt;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// Bytes of blocks one file's pin reads ahead of the block it pins (at
/// least one block): a slow origin's round trips overlap, as a stream's
/// do. They are the cache's own buffers unless it evicts them before they
/// are pinned; with `warm::FILES_AT_ONCE` files at once, at most 4 MiB.
const PIN_AHEAD_BYTES: u32 = 1 << 20;

/// A file this node holds pinned.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PinnedFile {
    /// Its path in the origin.
    pub path: String,
    /// The origin's version of it that is pinned.
    pub version: String,
    /// Bytes pinned (the file's size).
    pub bytes: u64,
}

/// The files pinned, by path, with the blocks of each.
#[derive(Default)]
pub(crate) struct Pins {
    files: Mutex<BTreeMap<String, (PinnedFile, Vec<BlockId>)>>,
}

impl Pins {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (PinnedFile, Vec<BlockId>)>> {
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The files pinned, by path.
    pub(crate) fn list(&self) -> Vec<PinnedFile> {
        self.lock().values().map(|(f, _)| f.clone()).collect()
    }

    /// Takes out every file at `path` or under it ("" for all).
    fn take_under(&self, path: &str) -> Vec<(PinnedFile, Vec<BlockId>)> {
        let mut files = self.lock();
        let under: Vec<String> = files
            .keys()
            .filter(|p| is_under(p, path))
            .cloned()
            .collect();
        under.iter().filter_map(|p| files.remove(p)).collect()
    }
}

/// Whether `file` is `path` or inside the directory `path` ("" is the
/// whole origin).
fn is_under(file: &str, path: &str) -> bool {
    path.is_empty()
        || file == path
        || file
            .strip_prefix(path)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// What `unpin` let go of.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Unpinned {
    /// Files unpinned.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
}

impl NodeHandle {
    /// Pins the current version of the file at `path`: reads each block
    /// through the cache and keeps it pinned, calling `progress` with the
    /// bytes of each. All or nothing: a file the pinned share cannot hold
    /// whole is unpinned again and refused ([`NodeError::PinFull`]).
    pub async fn pin_file(
        self: &Arc<Self>,
        path: &str,
        mut progress: impl FnMut(u64),
    ) -> Result<PinnedFile, NodeError> {
        let version = self.stat(path).await?;
        let shared: Arc<str> = Arc::from(path);
        let first = self.first_block(path, &version);
        let count = version.size.div_ceil(u64::from(self.block_size()));
        let count = u32::try_from(count).map_err(|_| too_large(path))?;
        let mut blocks = Vec::with_capacity(count.min(1 << 16) as usize);
        let ahead = (PIN_AHEAD_BYTES / self.block_size()).max(1) as usize;
        let (shared, version) = (&shared, &version);
        let reads = futures::stream::iter(0..count)
            .map(|index| async move { (index, self.read_block(shared, version, index).await) })
            .buffered(ahead);
        let mut reads = std::pin::pin!(reads);
        while let Some((index, read)) = reads.next().await {
            let pinned = match read {
                Ok((bytes, _)) => {
                    let n = bytes.len() as u64;
                    let block = BlockId { index, ..first };
                    let r = self.pin_event(|reply| PinEvent::Pin {
                        block,
                        data: Block::new(bytes),
                        reply,
                    });
                    r.await.map(|r| (block, n, r))
                }
                Err(e) => Err(e),
            };
            match pinned {
                Ok((block, n, Ok(()))) => {
                    blocks.push(block);
                    progress(n);
                }
                Ok((_, _, Err(max))) => {
                    self.unpin_blocks(blocks).await?;
                    return Err(NodeError::PinFull {
                        path: path.to_owned(),
                        max_bytes: max,
                    });
                }
                Err(e) => {
                    self.unpin_blocks(blocks).await?;
                    return Err(e);
                }
            }
        }
        let file = PinnedFile {
            path: path.to_owned(),
            version: version.version.clone(),
            bytes: version.size,
        };
        // An empty file has nothing to keep, and is not listed: the list
        // then holds at most one file per pinned block, within the share.
        let old = match blocks.is_empty() {
            true => self.pins.lock().remove(path),
            false => self
                .pins
                .lock()
                .insert(path.to_owned(), (file.clone(), blocks)),
        };
        if let Some((old, old_blocks)) = old
            && old.version != file.version
        {
            self.unpin_blocks(old_blocks).await?;
        }
        Ok(file)
    }

    /// Unpins every file at `path` or under it ("" for all): their blocks
    /// go back to being cached like any other's, or are dropped.
    pub async fn unpin(&self, path: &str) -> Result<Unpinned, NodeError> {
        self.forget_lost().await?;
        let mut done = Unpinned::default();
        for (file, blocks) in self.pins.take_under(path) {
            self.unpin_blocks(blocks).await?;
            done.files += 1;
            done.bytes += file.bytes;
        }
        Ok(done)
    }

    /// The files this node holds pinned.
    pub async fn pinned(&self) -> Result<Vec<PinnedFile>, NodeError> {
        self.forget_lost().await?;
        Ok(self.pins.list())
    }

    /// Forgets the files the core no longer holds whole: a block's
    /// manager dropped it since it was pinned (an eviction from another
    /// node, a write through the cluster). What is left of each is
    /// unpinned, so the share does not keep half a file.
    async fn forget_lost(&self) -> Result<(), NodeError> {
        let files: Vec<(String, Vec<BlockId>)> = self
            .pins
            .lock()
            .iter()
            .map(|(path, (_, blocks))| (path.clone(), blocks.clone()))
            .collect();
        if files.is_empty() {
            return Ok(());
        }
        let lists = files.iter().map(|(_, b)| b.clone()).collect();
        let whole = self
            .pin_event(|reply| PinEvent::Whole {
                files: lists,
                reply,
            })
            .await?;
        for ((path, blocks), whole) in files.into_iter().zip(whole) {
            if whole {
                continue;
            }
            // Unless pinned again meanwhile (other blocks).
            let lost = {
                let mut files = self.pins.lock();
                let same = files.get(&path).is_some_and(|(_, b)| *b == blocks);
                same.then(|| files.remove(&path)).flatten()
            };
            if lost.is_some() {
                self.unpin_blocks(blocks).await?;
            }
        }
        Ok(())
    }

    /// Drops every block of the file at `path` (its current version, and
    /// any version this node pinned) from the cluster: this node's copies,
    /// cached or pinned, at once, the other holders' as each block's
    /// manager tells them. How many blocks this node held.
    pub async fn evict_file(self: &Arc<Self>, path: &str) -> Result<u64, NodeError> {
        let pinned = self.pins.take_under(path);
        let mut blocks: Vec<BlockId> = pinned.into_iter().flat_map(|(_, b)| b).collect();
        match self.stat(path).await {
            Ok(version) => {
                let first = self.first_block(path, &version);
                let count = version.size.div_ceil(u64::from(self.block_size()));
                let count = u32::try_from(count).map_err(|_| too_large(path))?;
                blocks.extend((0..count).map(|index| BlockId { index, ..first }));
            }
            // Gone from the origin: what was pinned of it still goes.
            Err(e) if blocks.is_empty() => return Err(e),
            Err(_) => {}
        }
        let dropped = self
            .pin_event(|reply| PinEvent::Evict { blocks, reply })
            .await?;
        Ok(dropped)
    }

    async fn unpin_blocks(&self, blocks: Vec<BlockId>) -> Result<(), NodeError> {
        if blocks.is_empty() {
            return Ok(());
        }
        self.pin_event(|reply| PinEvent::Unpin { blocks, reply })
            .await
    }

    /// Sends the driver `event` and waits for its answer.
    async fn pin_event<T>(
        &self,
        event: impl FnOnce(oneshot::Sender<T>) -> PinEvent,
    ) -> Result<T, NodeError> {
        let (reply, rx) = oneshot::channel();
        self.send_event(Event::Pins(event(reply))).await?;
        rx.await.map_err(|_| NodeError::Shutdown)
    }
}

fn too_large(path: &str) -> NodeError {
    NodeError::Config(format!("{path}: more than 2^32 blocks"))
}

#[cfg(test)]
mod tests {
    use super::is_under;

    #[test]
    fn a_path_holds_itself_and_what_is_inside_it_only() {
        assert!(is_under("a/b", ""));
        assert!(is_under("a/b", "a"));
        assert!(is_under("a/b", "a/b"));
        assert!(!is_under("ab/c", "a"), "a sibling sharing a prefix");
        assert!(!is_under("a", "a/b"));
    }
}
