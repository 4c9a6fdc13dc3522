//! A gateway connection's pace: it is closed when nothing moves either
//! way for the idle timeout, and when its client takes a response slower
//! than a floor ([`MIN_RATE`]) however steadily it moves.
//!
//! The idle timeout alone let a client that reads a trickle hold its
//! connection, and the blocks its response had read ahead, for ever: a
//! reader of 32 KB/s is never idle (issue 42, item 4). The floor is what
//! Kestrel's `MinResponseDataRate` is: counted only over the time the
//! server waits on the client to take bytes (its writes pending), so a
//! slow origin, or a connection between requests, is never blamed on the
//! client.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::slots::Slot;
use crate::metrics::ClosedCounters;
use prometheus_client::metrics::counter::Counter;

/// The least rate, in bytes a second, at which a client must take a
/// response while the gateway waits on it ([`RATE_WINDOW`]); a slower one
/// is cut. 16 KiB/s is 128 kbit/s, below any broadband or mobile data
/// link, so only a client that is not really reading falls under it;
/// and at 64 KiB blocks it bounds how long a slow reader keeps each
/// block it holds of the streams' shared pool to 4 s. Kestrel's default
/// (240 B/s) only guards against a client that stopped: ours also keeps
/// the pool turning over.
pub const MIN_RATE: u64 = 16 << 10;

/// The waiting time over which [`MIN_RATE`] is averaged: long enough that
/// a brief stall (a Wi-Fi hand-over, a client's pause) is not cut, short
/// enough that a stalled reader gives its blocks back well within the
/// idle timeout (60 s), which its socket's buffers delay in any case.
pub const RATE_WINDOW: Duration = Duration::from_secs(15);

/// Bytes of a response the kernel may hold unsent for a gateway
/// connection (`TCP_NOTSENT_LOWAT`), beyond what is in flight to the
/// client. Without it the socket's send buffer grows to megabytes
/// (`tcp_wmem`'s 4 MiB), and the kernel lets the server write again only
/// once a third of that has drained: a client reading 32 KB/s left the
/// gateway's writes waiting a minute at a time with nothing taken, and
/// the rate floor could not tell it from a stalled one. With the unsent
/// part bounded, a write is taken as soon as the client makes room for
/// half of this, so [`MIN_RATE`] sees its pace; and a stalled client
/// ties up this much kernel memory, not megabytes. In-flight data (the
/// congestion window) is not limited, so a fast client's throughput is
/// not either: 128 KiB is two blocks' worth, refilled long before it
/// drains (nginx and h2o set it for the same reason, at 16 KiB for
/// HTTP/2's priorities, which this gateway has no need of).
pub const SEND_BACKLOG: u32 = 128 << 10;

/// How a connection is paced.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pace {
    /// No byte in or out for this long closes it.
    pub idle: Duration,
    /// Bytes a second; 0 turns the floor off.
    pub min_rate: u64,
    /// Waiting time [`Pace::min_rate`] is averaged over.
    pub window: Duration,
}

/// A stream that fails with `TimedOut` once neither side has moved a
/// byte for the idle timeout, or once its client takes bytes slower than
/// the floor; and that tells its slot whether its writes wait.
pub(super) struct PacedIo<S> {
    inner: S,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
    floor: Floor,
    slot: Arc<Slot>,
    /// Where a close of this connection's own is counted (once).
    closed: Option<Arc<ClosedCounters>>,
}

impl<S> PacedIo<S> {
    pub(super) fn new(
        inner: S,
        pace: Pace,
        slot: Arc<Slot>,
        closed: Arc<ClosedCounters>,
    ) -> PacedIo<S> {
        PacedIo {
            inner,
            idle: pace.idle,
            deadline: Box::pin(tokio::time::sleep(pace.idle)),
            floor: Floor::new(pace),
            slot,
            closed: Some(closed),
        }
    }

    /// Counts this connection's close by `which` reason, the first time.
    fn count(&mut self, which: fn(&ClosedCounters) -> &Counter) {
        if let Some(c) = self.closed.take() {
            which(&c).inc();
        }
    }

    fn progressed(&mut self) {
        let now = Instant::from_std(crate::clock::now());
        self.deadline.as_mut().reset(now + self.idle);
    }

    /// A write's outcome: bytes written are progress; a write that waits
    /// runs the idle deadline and the rate floor.
    fn wrote(
        &mut self,
        r: Poll<io::Result<usize>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<usize>> {
        match r {
            Poll::Ready(r) => {
                self.floor.unblocked();
                self.slot.set_write_blocked(false);
                if let Ok(n) = r
                    && n > 0
                {
                    self.progressed();
                    self.floor.taken(n);
                }
                Poll::Ready(r)
            }
            Poll::Pending => {
                self.slot.set_write_blocked(true);
                if let Poll::Ready(e) = self.floor.blocked(cx) {
                    self.count(|c| &c.slow);
                    return Poll::Ready(Err(e));
                }
                self.expired(cx)
            }
        }
    }

    fn expired<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.count(|c| &c.idle);
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "gateway connection idle too long",
                )))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The rate floor's count: bytes the client took, and time the writes
/// waited on it, over one window of waiting.
struct Floor {
    pace: Pace,
    /// Waiting time in this window before the current wait.
    waited: Duration,
    /// When the current wait began.
    since: Option<Instant>,
    /// Bytes taken since this window's first wait.
    bytes: u64,
    /// Fires when the current wait fills the window.
    check: Pin<Box<Sleep>>,
}

impl Floor {
    fn new(pace: Pace) -> Floor {
        Floor {
            pace,
            waited: Duration::ZERO,
            since: None,
            bytes: 0,
            check: Box::pin(tokio::time::sleep(pace.window)),
        }
    }

    fn taken(&mut self, n: usize) {
        self.bytes = self.bytes.saturating_add(n as u64);
    }

    fn unblocked(&mut self) {
        if let Some(since) = self.since.take() {
            self.waited += now().saturating_duration_since(since);
        }
    }

    /// A write waits on the client: an error once a window of waiting
    /// saw fewer bytes than the floor, else `Pending` with the check's
    /// timer registered.
    fn blocked(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        if self.pace.min_rate == 0 {
            return Poll::Pending;
        }
        loop {
            let now = now();
            let since = match self.since {
                Some(since) => since,
                None => {
                    if self.waited.is_zero() {
                        // A window begins with its first wait: what the
                        // socket's buffers took at once before it says
                        // nothing of the client's pace.
                        self.bytes = 0;
                    }
                    self.since = Some(now);
                    let left = self.pace.window.saturating_sub(self.waited);
                    self.check.as_mut().reset(now + left);
                    now
                }
            };
            if self.waited + now.saturating_duration_since(since) >= self.pace.window {
                let floor = u128::from(self.pace.min_rate) * self.pace.window.as_millis() / 1000;
                if u128::from(self.bytes) < floor {
                    return Poll::Ready(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "gateway client took {} bytes in {:?} of waiting, under the floor of {} bytes/s",
                            self.bytes, self.pace.window, self.pace.min_rate
                        ),
                    ));
                }
                // Fast enough: a new window, beginning with this wait.
                self.waited = Duration::ZERO;
                self.bytes = 0;
                self.since = None;
                continue;
            }
            // The timer is always due when this wait fills the window,
            // on the timer's own clock (`now`), so firing means it did.
            match self.check.as_mut().poll(cx) {
                Poll::Ready(()) => continue,
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// The timer's clock, which the floor's count must agree with.
fn now() -> Instant {
    Instant::from_std(crate::clock::now())
}

impl<S: AsyncRead + Unpin> AsyncRead for PacedIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(r) => {
                if buf.filled().len() > before {
                    self.progressed();
                }
                Poll::Ready(r)
            }
            Poll::Pending => self.expired(cx),
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for PacedIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, data);
        self.wrote(r, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.wrote(r, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_flush(cx) {
            Poll::Pending => self.expired(cx),
            ready => ready,
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
