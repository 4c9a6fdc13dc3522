//! Streaming a file's blocks to a reader that may be slow: every block a
//! stream holds (fetching, queued, or handed to its reader and not yet
//! dropped) counts against one pool of [`stream_blocks`], so all streams
//! together never hold more than the budget's [`STREAM_BYTES`]; and the
//! pool is shared so that no few readers can take it all.
//!
//! Before (issue 42, item 4), every stream read a quarter of the pool
//! ahead, waiting on the pool for each block: five clients reading 32 KB/s
//! held it whole, for as long as they kept reading, and every other
//! stream, even of a 17-byte cached file, waited behind them. Now:
//!
//! - a stream holds at most its share, [`StreamPool::share`]: the pool
//!   divided among the streams alive, and never less than one block, so
//!   every stream progresses;
//! - only the block a stream cannot go on without (it holds none) waits on
//!   the pool, in turn with the others (tokio's semaphore is fair); blocks
//!   read ahead are taken only while more than [`StreamPool::reserve`]
//!   permits are free, never waited for, so the reserve is there for the
//!   next stream's first block whatever the readers already streaming do;
//! - a reader that does not take its bytes at all is cut by the gateway's
//!   rate floor (`gateway::MIN_RATE`), which gives its blocks back.
//!
//! [`STREAM_BYTES`]: crate::budget::STREAM_BYTES

use crate::handle::NodeError;
use bytes::Bytes;
use futures::Stream;
use futures::stream::{FuturesOrdered, StreamExt};
use futures::task::AtomicWaker;
use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore, TryAcquireError};

/// Bytes a streamed read fetches ahead of the block it is sending:
/// enough to keep a peer's pipe full across its round trip and the time
/// each block spends being decrypted and checked (`coopcache bench
/// stream`: 8 blocks of 64 KiB reached 1.1 GB/s from a peer's memory, 32
/// reached 1.4 GB/s).
pub const READ_AHEAD_BYTES: usize = 2 << 20;

/// Blocks a stream of blocks of `block_size` fetches ahead at a node
/// caching `capacity` blocks: [`READ_AHEAD_BYTES`], but at most half the
/// cache (a stream reading further ahead than its node caches evicts its
/// own blocks before their bytes arrive), and between 1 and 256.
pub fn read_ahead(block_size: u32, capacity: usize) -> usize {
    let by_bytes = READ_AHEAD_BYTES / block_size.max(1) as usize;
    by_bytes.min(capacity / 2).clamp(1, 256)
}

/// Blocks all of a node's streams may hold at once: [`STREAM_BYTES`]
/// (counted in the budget's reserve, so the cache is that much smaller),
/// at least 8 blocks and at most [`MAX_STREAM_BLOCKS`]. A stream reads
/// ahead at most a quarter of them (2 MiB at 64 KiB blocks), and less
/// when others stream too (`StreamPool::share`).
///
/// Not also bounded by the cache's size: from 2026-11-25 (09a37b5) to
/// 2026-12-01 streams held at most an eighth of the cache, added when the
/// reserve did not yet count [`STREAM_BYTES`] (5e24a1a made it count them
/// the same day). At a small cache that bound left a stream 4 blocks of
/// read-ahead, and a peer stream through the library fell from 1.05 to
/// 0.60 GB/s (`coopcache bench stream`, whose reader caches 128 blocks;
/// found by bisecting with it, docs/benchmarks.md).
///
/// [`STREAM_BYTES`]: crate::budget::STREAM_BYTES
pub fn stream_blocks(block_size: u32) -> usize {
    ((crate::budget::STREAM_BYTES / u64::from(block_size.max(1))) as usize)
        .clamp(8, MAX_STREAM_BLOCKS)
}

/// Blocks all of a node's streams may hold at once, whatever the block
/// size: a quarter of a link's queue
/// ([`PEER_QUEUE`](crate::link::PEER_QUEUE)). Each block a stream fetches
/// can put several frames on one peer's queue (a `Read` to the block's
/// manager, notices and the forward of the block its arrival evicts), and
/// a full queue drops frames, each dropped `Read` costing its read the
/// peer timeout and an origin read. Without this bound, streams at 8 KiB
/// blocks had 1,024 blocks in flight and three of them dropped 60 to 748
/// frames a run (`crates/node/tests/bursts.rs`). It binds below 64 KiB
/// blocks only: at 64 KiB, [`STREAM_BYTES`] is 128 blocks, this bound.
/// Its cost: a lone stream of 8 KiB blocks reads 32 blocks ahead, not
/// 256, and streamed about 10% slower from a peer through the library
/// (`coopcache bench stream --block-size 8KiB`, docs/benchmarks.md).
///
/// [`STREAM_BYTES`]: crate::budget::STREAM_BYTES
pub const MAX_STREAM_BLOCKS: usize = crate::link::PEER_QUEUE / 4;

/// The blocks all of a node's streams share.
///
/// A block already in the cache takes a permit like any other: its bytes
/// are counted in the cache only while the cache keeps it, and a reader's
/// clone keeps them alive after the cache evicts the block. A stalled
/// reader of cached blocks would otherwise hold any number of evicted
/// blocks outside the budget.
pub(crate) struct StreamPool {
    permits: Arc<Semaphore>,
    size: usize,
    /// Streams alive.
    active: AtomicUsize,
}

impl StreamPool {
    /// A pool of `size` blocks.
    pub(crate) fn new(size: usize) -> StreamPool {
        StreamPool {
            permits: Arc::new(Semaphore::new(size)),
            size,
            active: AtomicUsize::new(0),
        }
    }

    /// The pool's size in blocks.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Blocks a stream may hold now: the pool divided among the streams
    /// alive, at most `ahead`, at least 1 (so every stream moves).
    pub(crate) fn share(&self, ahead: usize) -> usize {
        let active = self.active.load(Ordering::Relaxed).max(1);
        (self.size / active).min(ahead).max(1)
    }

    /// Permits read-ahead leaves free: a quarter of the pool, for the
    /// first block of the streams that start while others hold theirs
    /// (32 streams' worth at 64 KiB blocks, beside any number of slow
    /// readers).
    pub(crate) fn reserve(&self) -> usize {
        self.size / 4
    }
}

/// What a stream and the blocks it handed out share: how many it holds,
/// and how to wake it when one is given back.
struct Holding {
    held: AtomicUsize,
    waker: AtomicWaker,
}

/// One block's permit, counted against its stream until dropped.
pub(crate) struct Lease {
    permit: Option<OwnedSemaphorePermit>,
    holding: Arc<Holding>,
}

impl Lease {
    /// `bytes` as the reader gets them: the lease goes with them and ends
    /// when the reader drops them (hyper, once written).
    pub(crate) fn hold(self, bytes: Bytes) -> Bytes {
        Bytes::from_owner(Held {
            bytes,
            _lease: self,
        })
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // The permit first, so that the stream woken below finds it free.
        drop(self.permit.take());
        self.holding.held.fetch_sub(1, Ordering::AcqRel);
        self.holding.waker.wake();
    }
}

/// A block's bytes held by a reader, with the lease that counts them.
struct Held {
    bytes: Bytes,
    _lease: Lease,
}

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

type Acquiring = Pin<Box<dyn Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send>>;

/// The blocks `blocks` of a file, each fetched by `read` under a lease of
/// `pool`, yielded in order, at most `ahead` (and the stream's share)
/// held at once.
pub(crate) struct Blocks<I: Iterator, M, F: Future> {
    pool: Arc<StreamPool>,
    holding: Arc<Holding>,
    ahead: usize,
    blocks: std::iter::Peekable<I>,
    read: M,
    in_flight: FuturesOrdered<F>,
    /// The fair wait for the block the stream cannot go on without, boxed
    /// only when the pool is empty (never while permits are free).
    waiting: Option<Acquiring>,
}

impl<I, M, F> Blocks<I, M, F>
where
    I: Iterator<Item = (u32, Range<usize>)>,
    M: FnMut(u32, Range<usize>, Lease) -> F,
    F: Future<Output = Result<Bytes, NodeError>>,
{
    pub(crate) fn new(pool: Arc<StreamPool>, ahead: usize, blocks: I, read: M) -> Self {
        pool.active.fetch_add(1, Ordering::AcqRel);
        Blocks {
            pool,
            holding: Arc::new(Holding {
                held: AtomicUsize::new(0),
                waker: AtomicWaker::new(),
            }),
            ahead: ahead.max(1),
            blocks: blocks.peekable(),
            read,
            in_flight: FuturesOrdered::new(),
            waiting: None,
        }
    }

    /// A lease for the next block if the stream may take one now;
    /// `Pending` with a wake-up registered (a block given back, a permit
    /// freed) if not.
    fn lease(&mut self, cx: &mut Context<'_>) -> Poll<Result<Lease, NodeError>> {
        let held = self.holding.held.load(Ordering::Acquire);
        if held >= self.pool.share(self.ahead) {
            return Poll::Pending;
        }
        let permit = if held == 0 {
            // The block this stream waits on: in turn with the others.
            let got = match self.waiting.as_mut() {
                Some(acquiring) => std::task::ready!(acquiring.as_mut().poll(cx)),
                None => match self.pool.permits.clone().try_acquire_owned() {
                    Ok(p) => Ok(p),
                    Err(TryAcquireError::Closed) => return Poll::Ready(Err(NodeError::Shutdown)),
                    Err(TryAcquireError::NoPermits) => {
                        let mut acquiring: Acquiring =
                            Box::pin(self.pool.permits.clone().acquire_owned());
                        match acquiring.as_mut().poll(cx) {
                            Poll::Ready(got) => got,
                            Poll::Pending => {
                                self.waiting = Some(acquiring);
                                return Poll::Pending;
                            }
                        }
                    }
                },
            };
            self.waiting = None;
            got.map_err(|_| NodeError::Shutdown)?
        } else {
            // Read-ahead: only above the reserve, never waited for.
            if self.pool.permits.available_permits() <= self.pool.reserve() {
                return Poll::Pending;
            }
            match self.pool.permits.clone().try_acquire_owned() {
                Ok(p) => p,
                Err(_) => return Poll::Pending,
            }
        };
        Poll::Ready(Ok(self.leased(permit)))
    }

    fn leased(&self, permit: OwnedSemaphorePermit) -> Lease {
        self.holding.held.fetch_add(1, Ordering::AcqRel);
        Lease {
            permit: Some(permit),
            holding: self.holding.clone(),
        }
    }
}

impl<I, M, F> Stream for Blocks<I, M, F>
where
    I: Iterator<Item = (u32, Range<usize>)> + Unpin,
    M: FnMut(u32, Range<usize>, Lease) -> F + Unpin,
    F: Future<Output = Result<Bytes, NodeError>>,
{
    type Item = Result<Bytes, NodeError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        // Woken when a block this stream handed out is dropped.
        this.holding.waker.register(cx.waker());
        while this.blocks.peek().is_some() {
            let lease = match this.lease(cx) {
                Poll::Ready(Ok(lease)) => lease,
                Poll::Ready(Err(e)) => return Poll::Ready(Some(Err(e))),
                Poll::Pending => break,
            };
            if let Some((index, part)) = this.blocks.next() {
                this.in_flight.push_back((this.read)(index, part, lease));
            }
        }
        match this.in_flight.poll_next_unpin(cx) {
            Poll::Ready(None) if this.blocks.peek().is_some() => Poll::Pending,
            other => other,
        }
    }
}

impl<I: Iterator, M, F: Future> Drop for Blocks<I, M, F> {
    fn drop(&mut self) {
        self.pool.active.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    /// A stream of `n` one-byte blocks that are at hand at once.
    fn stream(pool: &Arc<StreamPool>, n: u32) -> impl Stream<Item = Result<Bytes, NodeError>> {
        let read = |index: u32, _: Range<usize>, lease: Lease| {
            futures::future::ready(Ok(lease.hold(Bytes::from(vec![index as u8]))))
        };
        Blocks::new(pool.clone(), 8, (0..n).map(|i| (i, 0..1)), read)
    }

    /// Takes every part `s` yields without waiting, and keeps them, as a
    /// client that stopped reading leaves them with hyper.
    fn hoard<S: Stream<Item = Result<Bytes, NodeError>> + Unpin>(s: &mut S) -> Vec<Bytes> {
        let mut kept = Vec::new();
        while let Some(Some(part)) = s.next().now_or_never() {
            kept.push(part.expect("part"));
        }
        kept
    }

    /// Readers that keep all they are given take their share of the pool
    /// and no more: one more stream still gets its first block at once
    /// (before, the first two took the whole pool and the third waited),
    /// and a hoarder given its blocks back moves on.
    #[test]
    fn hoarding_readers_leave_the_next_stream_its_first_block() {
        let pool = Arc::new(StreamPool::new(16));
        let mut hoarders: Vec<_> = (0..3).map(|_| Box::pin(stream(&pool, 100))).collect();
        let mut kept: Vec<Vec<Bytes>> = hoarders.iter_mut().map(hoard).collect();
        let held: Vec<usize> = kept.iter().map(Vec::len).collect();
        assert!(
            held.iter().all(|&h| h >= 1),
            "a stream got nothing: {held:?}"
        );
        assert!(held.iter().sum::<usize>() <= 16, "over the pool: {held:?}");
        assert!(
            pool.permits.available_permits() >= 1,
            "the hoarders left no reserve: {held:?}"
        );
        let mut next = Box::pin(stream(&pool, 1));
        assert!(
            matches!(next.next().now_or_never(), Some(Some(Ok(_)))),
            "a new stream waited behind hoarders holding {held:?}"
        );
        let before = kept[0].len();
        kept[0].clear();
        assert!(
            hoard(&mut hoarders[0]).len() >= before.min(1),
            "a stream given its blocks back did not move on"
        );
    }

    /// The share: the pool divided among the streams alive, within the
    /// read-ahead, never below one block.
    #[test]
    fn the_share_shrinks_with_the_streams_alive_and_stays_at_least_one() {
        let pool = Arc::new(StreamPool::new(16));
        assert_eq!(pool.share(8), 8);
        let streams: Vec<_> = (0..4).map(|_| stream(&pool, 1)).collect();
        assert_eq!(pool.share(8), 4);
        let many: Vec<_> = (0..40).map(|_| stream(&pool, 1)).collect();
        assert_eq!(pool.share(8), 1);
        drop((streams, many));
        assert_eq!(pool.share(8), 8);
    }
}
