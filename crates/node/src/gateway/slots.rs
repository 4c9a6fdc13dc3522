//! The gateway's connection slots, and which connection gives way when
//! they are all taken.
//!
//! At the cap a new connection never waits. The connection that has
//! waited longest for a request header (a new one that sent nothing or
//! half a header, or a kept-alive one between requests) gives up its slot
//! if it has waited at least [`EVICT_AFTER`] and has no response bytes
//! still unsent; if none has, the newcomer is answered 503 at once. This
//! is nginx's answer to running out of connections (it closes its
//! "reusable" connections, those waiting for a request, oldest first):
//! without it 2,000 connections that send nothing held all 512 slots for
//! the header timeout, and the accept loop, waiting a second on each one
//! past the cap, kept a real client waiting 17 s (issue 42, item 4).
//!
//! A connection in the middle of a request is never closed for another:
//! the rate floor (`pace.rs`) deals with clients that read too slowly.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::service::TowerToHyperService;
use tokio::sync::Notify;

/// How long a connection must have waited for a request header before a
/// newcomer at the cap may take its slot. A client sends its request in
/// the same flight as the end of its handshake, and the server reads it
/// within a scheduling delay (milliseconds, tens on a loaded node), so
/// this protects every connection about to send a request; and it is far
/// below the header timeout (20 s), so silent connections lose their
/// slots to new ones at once rather than after it.
pub const EVICT_AFTER: Duration = Duration::from_millis(500);

/// One connection's slot: what the accept loop needs to know of it.
pub(super) struct Slot {
    base: Instant,
    /// Requests in progress (read and not yet answered in full).
    requests: AtomicU32,
    /// When it began waiting for a request header, in µs from `base`.
    waiting_since: AtomicU64,
    /// Its last write waited on the client: response bytes unsent.
    write_blocked: AtomicBool,
    ended: AtomicBool,
    evict: Notify,
}

impl Slot {
    fn new(base: Instant) -> Slot {
        Slot {
            base,
            requests: AtomicU32::new(0),
            waiting_since: AtomicU64::new(micros(base)),
            write_blocked: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            evict: Notify::new(),
        }
    }

    pub(super) fn set_write_blocked(&self, blocked: bool) {
        self.write_blocked.store(blocked, Ordering::Relaxed);
    }

    /// Since when it has waited for a request header with nothing left
    /// to send, if it has.
    fn waiting(&self) -> Option<u64> {
        let idle = self.requests.load(Ordering::Acquire) == 0
            && !self.write_blocked.load(Ordering::Relaxed)
            && !self.ended.load(Ordering::Relaxed);
        idle.then(|| self.waiting_since.load(Ordering::Acquire))
    }

    /// Resolves when the accept loop takes this slot for a newcomer.
    pub(super) async fn evicted(&self) {
        self.evict.notified().await;
    }

    fn request_done(&self) {
        self.waiting_since
            .store(micros(self.base), Ordering::Release);
        self.requests.fetch_sub(1, Ordering::AcqRel);
    }
}

fn micros(base: Instant) -> u64 {
    u64::try_from(crate::clock::now().duration_since(base).as_micros()).unwrap_or(u64::MAX)
}

/// Marks its slot ended when the connection's task ends, however.
pub(super) struct Ended(pub(super) Arc<Slot>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.ended.store(true, Ordering::Relaxed);
    }
}

/// The slots of the connections being served, at most `cap`; owned by the
/// accept loop alone.
pub(super) struct Slots {
    cap: usize,
    base: Instant,
    live: Vec<Arc<Slot>>,
}

impl Slots {
    pub(super) fn new(cap: usize) -> Slots {
        Slots {
            cap,
            base: crate::clock::now(),
            live: Vec::with_capacity(cap),
        }
    }

    /// A slot for a new connection: a free one, or that of the connection
    /// that has waited longest for a request, at least [`EVICT_AFTER`]
    /// (it is closed); `None` if every slot is young or busy.
    pub(super) fn admit(&mut self) -> Option<Arc<Slot>> {
        if self.live.len() >= self.cap {
            self.live.retain(|s| !s.ended.load(Ordering::Relaxed));
        }
        if self.live.len() >= self.cap {
            let old_enough = micros(self.base).saturating_sub(EVICT_AFTER.as_micros() as u64);
            let (i, _) = self
                .live
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.waiting().map(|since| (i, since)))
                .filter(|&(_, since)| since <= old_enough)
                .min_by_key(|&(_, since)| since)?;
            let victim = self.live.swap_remove(i);
            victim.ended.store(true, Ordering::Relaxed);
            victim.evict.notify_one();
        }
        let slot = Arc::new(Slot::new(self.base));
        self.live.push(slot.clone());
        Some(slot)
    }
}

/// The router, counting each request in its connection's slot from its
/// header to the last byte of its response body.
pub(super) struct Tracked {
    inner: TowerToHyperService<Router>,
    slot: Arc<Slot>,
}

impl Tracked {
    pub(super) fn new(router: Router, slot: Arc<Slot>) -> Tracked {
        Tracked {
            inner: TowerToHyperService::new(router),
            slot,
        }
    }
}

type Answer = Pin<Box<dyn Future<Output = Result<Response<Guarded>, Infallible>> + Send>>;

impl Service<Request<Incoming>> for Tracked {
    type Response = Response<Guarded>;
    type Error = Infallible;
    type Future = Answer;

    fn call(&self, req: Request<Incoming>) -> Answer {
        self.slot.requests.fetch_add(1, Ordering::AcqRel);
        let busy = Busy(self.slot.clone());
        let answer = self.inner.call(req);
        Box::pin(async move {
            let resp = answer.await?;
            Ok(resp.map(|body| Guarded { body, _busy: busy }))
        })
    }
}

/// A request in progress; dropped with its response's body (once hyper
/// has taken all of it) or with the request, if it never got that far.
struct Busy(Arc<Slot>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.request_done();
    }
}

/// A response body that keeps its request counted while it is sent.
pub(super) struct Guarded {
    body: Body,
    _busy: Busy,
}

impl HttpBody for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
