//! The daemon's side of the disk tier (`--disk`): carries the slot reads
//! and writes the protocol asks for (`coopcache_core::protocol`'s disk
//! tier decides which block, which slot, and whether a block read back is
//! served) to the store (`crate::disk`), on the blocking pool, and their
//! results back as events. A block read back is hashed there, off the
//! driver's task, as an origin's or a peer's is where it arrives.

use super::{Driver, Event};
use crate::block::{Block, BlockId};
use crate::budget::DISK_WRITE_BYTES;
use crate::disk::{DiskError, DiskStore};
use coopcache_core::protocol::{Content, DiskMiss};
use std::sync::Arc;

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
        /// Bytes it carried.
        len: u64,
    },
}

impl Driver {
    /// The store this node's disk tier keeps its slots in.
    pub(crate) fn set_disk_store(&mut self, store: Arc<DiskStore>) {
        self.disk = Some(store);
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

    /// Writes `data` of `block` into `slot` on the blocking pool, unless
    /// [`DISK_WRITE_BYTES`] are on their way already: skipped then.
    pub(super) fn write_disk(&mut self, block: BlockId, slot: u32, data: Block) {
        let Some(store) = self.disk.clone() else {
            let reads = self.node.reads_mut();
            return reads.handle_disk_written(block, slot, false);
        };
        let len = data.bytes.len() as u64;
        let busy = self.disk_writing > 0 && self.disk_writing + len > DISK_WRITE_BYTES;
        if busy {
            return self.node.reads_mut().handle_disk_skipped(block, slot);
        }
        self.disk_writing += len;
        let events = self.events.clone();
        tokio::task::spawn_blocking(move || {
            let hash = data.digest().hash;
            let written = store.write(slot, block, &hash, &data.bytes);
            if let Err(e) = &written {
                failed("write", e);
            }
            let ok = written.is_ok();
            let ev = DiskEvent::Written {
                block,
                slot,
                ok,
                len,
            };
            let _ = events.blocking_send(Event::Disk(ev));
        });
    }

    /// What the store did, to the protocol; a tier the protocol gave up
    /// (its disk failed every call) is closed, once, with a warning.
    pub(super) fn on_disk_event(&mut self, ev: DiskEvent) {
        let now = self.clock.micros();
        match ev {
            DiskEvent::Read { block, result } => self.node.handle_disk_read(block, result, now),
            DiskEvent::Written {
                block,
                slot,
                ok,
                len,
            } => {
                self.disk_writing = self.disk_writing.saturating_sub(len);
                self.node.reads_mut().handle_disk_written(block, slot, ok)
            }
        }
        if self.disk.is_some() && self.node.reads().disk().is_none() {
            self.disk = None;
            tracing::warn!(
                errors = coopcache_core::protocol::MAX_DISK_ERRORS,
                "the disk tier failed every read and write in a row: going on with memory alone"
            );
        }
    }
}

/// Logs a failed slot call (the protocol counts them and decides).
fn failed(what: &str, e: &DiskError) {
    tracing::debug!(error = %e, "disk tier: a slot's {what} failed");
}
