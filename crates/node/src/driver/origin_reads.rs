//! Origin reads, carried in as few requests as the protocol allows.
//!
//! The protocol decides which blocks this node reads from the origin, one
//! block at a time. A sequential reader's read-ahead asks for a window of
//! blocks at once, and each became its own ranged GET: on MinIO the
//! requests, not the bytes, cost the time (a 1 GiB first epoch took 16,384
//! GETs of 64 KiB and 22 s, where rclone took 6.5 s). So the driver
//! queues the origin reads the protocol asks for while it handles the
//! events already waiting, then reads each run of consecutive blocks of
//! one file with one request of at most [`MAX_RUN_BYTES`]. Nothing waits
//! for a batch to fill: a read the protocol asks for is sent as soon as
//! the events before it are handled, so an idle node sends single blocks
//! and a busy one larger runs.

use super::{Driver, Event};
use crate::block::Block;
use bytes::Bytes;
use coopcache_core::protocol::BlockId;
use std::sync::Arc;

/// The most one origin request carries: 16 blocks of 64 KiB. Larger runs
/// delay the run's first block by the transfer of the rest.
pub(super) const MAX_RUN_BYTES: u64 = 1 << 20;

/// Events handled before the queued origin reads are sent: a bound on how
/// long a read can wait behind other events.
pub(super) const DRAIN: usize = 64;

impl Driver {
    /// Queues an origin read of `block`, sent by
    /// [`Driver::send_origin_reads`].
    /// A block whose bytes a reader holds ([`Event::Written`]) is answered
    /// with them at once, as its origin read would be: no task, no origin.
    pub(super) fn read_origin(&mut self, block: BlockId) {
        let Some(w) = self.waiting.get_mut(&block) else {
            return;
        };
        match w.known.take() {
            Some(bytes) => {
                let now = self.clock.micros();
                self.node
                    .handle_origin_done(block, Ok(Block::new(bytes)), now);
            }
            None => self.origin_queue.push(block),
        }
    }

    /// Sends the queued origin reads: one request per run of consecutive
    /// blocks of one file, each on its own task, which also hashes the
    /// blocks (off this task's serial path).
    pub(super) fn send_origin_reads(&mut self) {
        if self.origin_queue.is_empty() {
            return;
        }
        let mut queue = std::mem::take(&mut self.origin_queue);
        queue.sort_unstable();
        queue.dedup();
        let bs = u64::from(self.cfg.block_size);
        let max_run = (MAX_RUN_BYTES / bs).max(1) as usize;
        let mut rest = queue.as_slice();
        while let Some(&first) = rest.first() {
            let len = rest
                .iter()
                .take(max_run)
                .enumerate()
                .take_while(|&(i, b)| {
                    b.file == first.file && b.index as usize == first.index as usize + i
                })
                .count();
            self.read_run(first, len as u32);
            rest = &rest[len..];
        }
        queue.clear();
        // Keep the allocation for the next batch.
        self.origin_queue = queue;
    }

    /// Reads blocks `first.index..first.index + len` of `first.file` with
    /// one request.
    fn read_run(&mut self, first: BlockId, len: u32) {
        let Some(w) = self.waiting.get(&first) else {
            return;
        };
        let (path, version) = (w.path.clone(), w.version.clone());
        let origin = self.origin.clone();
        let events = self.events.clone();
        let bs = u64::from(self.cfg.block_size);
        let start = u64::from(first.index) * bs;
        let end = (start + u64::from(len) * bs).min(version.size);
        self.metrics.origin_reads.inc_by(u64::from(len));
        self.metrics.origin_requests.inc();
        tokio::spawn(async move {
            let result = origin
                .read(&path, &version, start..end)
                .await
                .map_err(Arc::new);
            for i in 0..len {
                let block = BlockId {
                    index: first.index + i,
                    ..first
                };
                let result = match &result {
                    Ok(bytes) => Ok(Block::new(block_of(bytes, i, bs))),
                    Err(e) => Err(Arc::clone(e)),
                };
                let _ = events.send(Event::OriginDone { block, result }).await;
            }
        });
    }
}

/// Block `i` of a run's `bytes` (shorter, or empty, if the origin returned
/// less than asked: the file shrank, and the protocol's check settles it).
fn block_of(bytes: &Bytes, i: u32, bs: u64) -> Bytes {
    let len = bytes.len() as u64;
    let start = (u64::from(i) * bs).min(len);
    let end = (start + bs).min(len);
    bytes.slice(start as usize..end as usize)
}
