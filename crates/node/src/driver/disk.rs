//! The daemon's side of the disk tier (`--disk`): carries the slot reads
//! and writes the protocol asks for (`coopcache_core::protocol`'s disk
//! tier decides which block, which slot, and whether a block read back is
//! served) to the store (`crate::disk`), on the blocking pool, and their
//! results back as events. A block read back is hashed there, off the
//! driver's task, as an origin's or a peer's is where it arrives. When the
//! protocol asks for a given-up tier again, the store is opened again
//! where it was, never made anew.

use super::{Driver, Event};
use crate::block::{Block, BlockId};
use crate::disk::{DiskError, DiskStore, Recovered};
use coopcache_core::protocol::{Content, Digest, DiskMiss};
use std::path::PathBuf;
use std::sync::Arc;

/// Where the disk tier's store is: what opening it again takes.
#[derive(Clone, Debug)]
pub(crate) struct DiskPlace {
    /// Its directories.
    pub(crate) dirs: Vec<PathBuf>,
    /// Its size in all, in bytes.
    pub(crate) size: u64,
    /// The most bytes a slot holds.
    pub(crate) block_size: u32,
}

/// What the store did with a slot.
#[derive(Debug)]
pub enum DiskEvent {
    /// A slot's read: the block's contents, or why none.
    Read {
        /// The block.
        block: BlockId,
        /// Its contents, hashed.
        result: Result<Block, DiskMiss>,
    },
    /// A slot's write.
    Written {
        /// The block.
        block: BlockId,
        /// The slot.
        slot: u32,
        /// Whether it was written.
        ok: bool,
    },
    /// The store opened again, and what its slots held; or why not.
    Reopened(Result<(Arc<DiskStore>, Vec<Recovered>), DiskError>),
}

impl Driver {
    /// Where this node's disk tier is, and its store while it is open.
    pub(crate) fn set_disk_store(&mut self, store: Option<Arc<DiskStore>>, place: DiskPlace) {
        self.disk = store;
        self.disk_place = Some(place);
    }

    /// Reads `slot` for `block` on the blocking pool.
    pub(super) fn read_disk(&mut self, block: BlockId, slot: u32) {
        let Some(store) = self.disk.clone() else {
            let now = self.clock.micros();
            return self.node.handle_disk_read(block, Err(DiskMiss::Io), now);
        };
        let events = self.events.clone();
        tokio::task::spawn_blocking(move || {
            let result = match store.read(slot, block) {
                Ok(Some((bytes, _))) => Ok(Block::new(bytes)),
                Ok(None) => Err(DiskMiss::NotThere),
                Err(e) => {
                    failed("read", &e);
                    Err(DiskMiss::Io)
                }
            };
            let _ = events.blocking_send(Event::Disk(DiskEvent::Read { block, result }));
        });
    }

    /// Writes `data` of `block` into `slot` on the blocking pool (the
    /// protocol bounds the writes on their way).
    pub(super) fn write_disk(&mut self, block: BlockId, slot: u32, data: Block) {
        let Some(store) = self.disk.clone() else {
            let now = self.clock.micros();
            let reads = self.node.reads_mut();
            return reads.handle_disk_written(block, slot, false, now);
        };
        let events = self.events.clone();
        tokio::task::spawn_blocking(move || {
            let hash = data.digest().hash;
            let written = store.write(slot, block, &hash, &data.bytes);
            if let Err(e) = &written {
                failed("write", e);
            }
            let ok = written.is_ok();
            let _ = events.blocking_send(Event::Disk(DiskEvent::Written { block, slot, ok }));
        });
    }

    /// Opens the given-up tier's store again, where it was, on the
    /// blocking pool.
    pub(super) fn reopen_disk(&mut self) {
        let Some(place) = self.disk_place.clone() else {
            let now = self.clock.micros();
            return self.node.reads_mut().handle_disk_reopened(None, now);
        };
        let events = self.events.clone();
        tokio::task::spawn_blocking(move || {
            let opened = DiskStore::reopen(&place.dirs, place.size, place.block_size)
                .map(|(store, found)| (Arc::new(store), found));
            let _ = events.blocking_send(Event::Disk(DiskEvent::Reopened(opened)));
        });
    }

    /// What the store did, to the protocol; a tier the protocol gave up
    /// (its disk failed every call) is closed, once, with a warning.
    pub(super) fn on_disk_event(&mut self, ev: DiskEvent) {
        let now = self.clock.micros();
        match ev {
            DiskEvent::Read { block, result } => self.node.handle_disk_read(block, result, now),
            DiskEvent::Written { block, slot, ok } => self
                .node
                .reads_mut()
                .handle_disk_written(block, slot, ok, now),
            DiskEvent::Reopened(opened) => return self.on_disk_reopened(opened, now),
        }
        if self.disk.is_some() && self.node.reads().disk().is_none() {
            self.disk = None;
            tracing::warn!(
                errors = coopcache_core::protocol::MAX_DISK_ERRORS,
                "the disk tier failed every read and write in a row: going on with memory alone, and opening it again later"
            );
        }
    }
}

/// Logs a failed slot call (the protocol counts them and decides).
fn failed(what: &str, e: &DiskError) {
    tracing::debug!(error = %e, "disk tier: a slot's {what} failed");
}

impl Driver {
    /// The given-up tier's store, opened again or not, to the protocol.
    fn on_disk_reopened(
        &mut self,
        opened: Result<(Arc<DiskStore>, Vec<Recovered>), DiskError>,
        now: u64,
    ) {
        let reads = self.node.reads_mut();
        match opened {
            Ok((store, found)) => {
                // Taken only if the protocol made a tier of it (not if it
                // had one already): never a second store beside the first.
                let before = reads.stats().disk_reopened;
                reads.handle_disk_reopened(Some(store.slots()), now);
                if reads.stats().disk_reopened == before {
                    return;
                }
                let kept = recover(reads, &found);
                tracing::warn!(
                    slots = store.slots(),
                    blocks = kept,
                    "the disk tier is back: its blocks are served once checked"
                );
                self.disk = Some(store);
            }
            Err(e) => {
                tracing::warn!(error = %e, "the disk tier is still failing: memory alone");
                reads.handle_disk_reopened(None, now);
            }
        }
    }
}

/// Gives the protocol the blocks a store found in its slots; returns how
/// many it took in.
pub(crate) fn recover(
    protocol: &mut coopcache_core::protocol::NodeProtocol<BlockId, Block>,
    found: &[Recovered],
) -> usize {
    found
        .iter()
        .filter(|r| {
            let digest = Digest {
                hash: r.hash,
                len: r.len,
            };
            protocol.recover_disk(r.block, r.slot, digest)
        })
        .count()
}
