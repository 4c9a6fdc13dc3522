//! Pinning and eviction by path, as the driver carries them: each block
//! handed to the core (`coopcache_core::protocol`'s pinned blocks), which
//! decides what to keep and whom to tell (`crate::pins`).

use super::*;
use coopcache_core::protocol::PinRefused;

/// A pin, unpin or eviction of blocks, from `crate::pins`.
pub enum PinEvent {
    /// Pin `block` with `data`, contents a read of this node returned;
    /// the answer is the pinned share's bytes if it is full.
    Pin {
        /// The block.
        block: BlockId,
        /// Its contents.
        data: Block,
        /// `Err(max_bytes)` when the pinned share cannot hold it.
        reply: oneshot::Sender<Result<(), u64>>,
    },
    /// Unpin `blocks`.
    Unpin {
        /// The blocks.
        blocks: Vec<BlockId>,
        /// Answered once done.
        reply: oneshot::Sender<()>,
    },
    /// Whether each of `files` (its blocks) is still pinned whole.
    Whole {
        /// Each file's blocks.
        files: Vec<Vec<BlockId>>,
        /// One answer a file.
        reply: oneshot::Sender<Vec<bool>>,
    },
    /// Drop every copy of `blocks` this node holds.
    Evict {
        /// The blocks.
        blocks: Vec<BlockId>,
        /// How many of them it held.
        reply: oneshot::Sender<u64>,
    },
}

impl Driver {
    pub(super) fn on_pin_event(&mut self, ev: PinEvent) {
        let now = self.clock.micros();
        let bs = u64::from(self.cfg.block_size);
        let reads = self.node.reads_mut();
        match ev {
            PinEvent::Pin { block, data, reply } => {
                let r = reads
                    .pin(block, data, now)
                    .map_err(|PinRefused::Full { max }| max as u64 * bs);
                let _ = reply.send(r);
            }
            PinEvent::Unpin { blocks, reply } => {
                for block in blocks {
                    reads.unpin(block, now);
                }
                let _ = reply.send(());
            }
            PinEvent::Whole { files, reply } => {
                let whole = files
                    .iter()
                    .map(|blocks| blocks.iter().all(|&b| reads.is_pinned(b)))
                    .collect();
                let _ = reply.send(whole);
            }
            PinEvent::Evict { blocks, reply } => {
                let held = blocks.into_iter().filter(|&b| reads.evict(b, now)).count();
                let _ = reply.send(held as u64);
            }
        }
    }
}
