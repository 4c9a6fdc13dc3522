//! Accepting gateway connections with bounds: a header timeout, an idle
//! timeout and a rate floor (`pace.rs`), a connection cap below the
//! open-file limit at which a newcomer takes a silent connection's slot
//! or is refused at once (`slots.rs`), and a listener that survives
//! running out of descriptors.
//!
//! Without them a client that sends half a header, or nothing, holds a
//! descriptor for ever, and enough of them lock every client out.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::auth::Token;
use super::pace::{MIN_RATE, Pace, PacedIo, RATE_WINDOW, SEND_BACKLOG};
use super::slots::{Ended, Slots, Tracked};
use crate::metrics::ClosedCounters;

/// How the gateway bounds its clients.
#[derive(Clone, Debug)]
pub struct GatewayOptions {
    /// From accepting a connection, or finishing a response on it, to
    /// having the next request's whole header: a kept-alive connection
    /// waits this long for its next request, a slow sender this long for
    /// its header.
    pub header_timeout: Duration,
    /// A connection with no byte in or out for this long is closed (a
    /// client that stopped reading its response, or sending its request).
    pub idle_timeout: Duration,
    /// A client that takes a response slower than this many bytes a
    /// second, over [`GatewayOptions::rate_window`] of the gateway waiting
    /// on it, is cut ([`MIN_RATE`]); 0: no floor.
    pub min_rate: u64,
    /// The waiting time `min_rate` is averaged over ([`RATE_WINDOW`]).
    pub rate_window: Duration,
    /// Connections served at once. One more takes the slot of the
    /// connection that has waited longest for a request, if it has waited
    /// [`EVICT_AFTER`](super::EVICT_AFTER), or is answered 503 at once.
    /// Also capped below the open-file limit ([`connection_cap`]).
    pub max_connections: usize,
    /// The bearer token clients must present, if any.
    pub token: Option<Token>,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        GatewayOptions {
            header_timeout: Duration::from_secs(20),
            idle_timeout: Duration::from_secs(60),
            min_rate: MIN_RATE,
            rate_window: RATE_WINDOW,
            max_connections: MAX_CONNECTIONS,
            token: None,
        }
    }
}

/// The default connection cap: as many connections as the budget's
/// reserve holds ([`GATEWAY_BYTES`] of [`CONNECTION_BYTES`] each, 512);
/// `coopcache bench rss`: 2,000 clients at once on a 64 MiB node. A
/// larger configured cap is outside the budget (the daemon warns).
///
/// [`GATEWAY_BYTES`]: crate::budget::GATEWAY_BYTES
/// [`CONNECTION_BYTES`]: crate::budget::CONNECTION_BYTES
pub const MAX_CONNECTIONS: usize =
    (crate::budget::GATEWAY_BYTES / crate::budget::CONNECTION_BYTES) as usize;

/// Refusals answered at once: each 503 lingers up to a second to be
/// read, so a flood beyond this is closed unanswered rather than let
/// refusals take the descriptors the cap leaves free.
const REFUSALS: usize = 64;

/// Descriptors kept free for everything else the daemon opens (peer
/// links, origin files, the blocking pool) when the connection cap is
/// derived from the open-file limit.
pub const RESERVED_DESCRIPTORS: u64 = 256;

/// The connection cap in force: the configured one, lowered to leave
/// [`RESERVED_DESCRIPTORS`] free under the soft open-file limit.
pub fn connection_cap(configured: usize) -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX);
    let room = usize::try_from(soft.saturating_sub(RESERVED_DESCRIPTORS)).unwrap_or(usize::MAX);
    configured.min(room).max(1)
}

/// Serves `router` on `listener` until the task is dropped.
pub(crate) async fn serve_router(
    listener: TcpListener,
    router: Router,
    opts: &GatewayOptions,
    closed: Arc<ClosedCounters>,
) -> io::Result<()> {
    let cap = connection_cap(opts.max_connections);
    if cap < opts.max_connections {
        tracing::warn!(
            configured = opts.max_connections,
            cap,
            "gateway connection cap lowered to stay under the open-file limit (raise `ulimit -n`)"
        );
    }
    if cap > MAX_CONNECTIONS {
        let outside_mib = ((cap - MAX_CONNECTIONS) as u64 * crate::budget::CONNECTION_BYTES) >> 20;
        tracing::warn!(
            cap,
            outside_mib,
            "the budget's reserve holds {MAX_CONNECTIONS} gateway connections: the ones beyond may take this much memory outside --memory"
        );
    }
    let mut slots = Slots::new(cap);
    let refusing = Arc::new(Semaphore::new(REFUSALS));
    let pace = Pace {
        idle: opts.idle_timeout,
        min_rate: opts.min_rate,
        window: opts.rate_window,
    };
    let mut quiet = Quiet::default();
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of descriptors (or a connection reset before accept):
                // wait a little rather than spin; the cap makes this rare.
                quiet.warn(|| tracing::warn!(error = %e, "gateway accept failed"));
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Never a wait here: the connections queued behind this one
        // would wait with it.
        let Some(slot) = slots.admit() else {
            quiet.warn(|| tracing::warn!(cap, %peer, "gateway at its connection cap, every slot busy; answering 503"));
            closed.refused.inc();
            if let Ok(permit) = refusing.clone().try_acquire_owned() {
                tokio::spawn(async move {
                    refuse(stream).await;
                    drop(permit);
                });
            }
            continue;
        };
        let _ = stream.set_nodelay(true);
        let _ = socket2::SockRef::from(&stream).set_tcp_notsent_lowat(SEND_BACKLOG);
        let service = Tracked::new(router.clone(), slot.clone());
        let io = TokioIo::new(PacedIo::new(stream, pace, slot.clone(), closed.clone()));
        let counts = closed.clone();
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(opts.header_timeout);
        let conn = http.serve_connection(io, service);
        tokio::spawn(async move {
            let ended = Ended(slot);
            tokio::select! {
                r = conn => if let Err(e) = r {
                    tracing::debug!(%peer, error = %e, "gateway connection ended");
                },
                () = ended.0.evicted() => {
                    counts.evicted.inc();
                    tracing::debug!(%peer, "gateway connection closed for a newcomer: it sent no request");
                }
            }
        });
    }
}

/// Answers a connection over the cap with a 503 and closes it.
async fn refuse(mut stream: tokio::net::TcpStream) {
    const BODY: &str = "the gateway is serving as many connections as it may; retry shortly\n";
    let reply = format!(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\r\n{BODY}",
        BODY.len()
    );
    // Lingering close, as nginx does: closing with the client's request
    // unread would send a reset that can destroy the reply in flight, so
    // shut our side and drain theirs for a moment first.
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(reply.as_bytes()).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 1024];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<_, io::Error>(())
    })
    .await;
}

/// At most one warning a second: a flood of refused connections must not
/// become a flood of log lines.
#[derive(Default)]
struct Quiet {
    last: Option<std::time::Instant>,
}

impl Quiet {
    fn warn(&mut self, log: impl FnOnce()) {
        let now = crate::clock::now();
        if self.last.is_none_or(|t| now - t >= Duration::from_secs(1)) {
            self.last = Some(now);
            log();
        }
    }
}

/// Raises the soft open-file limit to the hard limit, so the gateway's
/// connection cap can be high; returns the limit before and after.
pub fn raise_open_file_limit() -> io::Result<(u64, u64)> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let before = limit.current.unwrap_or(u64::MAX);
    if limit.current == limit.maximum {
        return Ok((before, before));
    }
    let raised = rustix::process::Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    setrlimit(Resource::Nofile, raised)?;
    Ok((before, limit.maximum.unwrap_or(u64::MAX)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

    /// With `ulimit -n 1024` the cap leaves room for the rest of the
    /// daemon, and raising the soft limit to the hard one lifts it.
    #[test]
    fn the_cap_stays_under_the_open_file_limit_and_the_limit_is_raised() {
        let hard = getrlimit(Resource::Nofile).maximum;
        if hard.is_some_and(|h| h < 4096) {
            eprintln!("hard open-file limit {hard:?} below 4096; nothing to check");
            return;
        }
        let low = Rlimit {
            current: Some(1024),
            maximum: hard,
        };
        setrlimit(Resource::Nofile, low).expect("lower the soft limit");
        assert_eq!(connection_cap(4096), 1024 - RESERVED_DESCRIPTORS as usize);
        let (before, after) = raise_open_file_limit().expect("raise");
        assert_eq!(before, 1024);
        assert_eq!(Some(after), hard.or(Some(u64::MAX)));
        assert_eq!(getrlimit(Resource::Nofile).current, hard);
        assert_eq!(connection_cap(4096), 4096);
    }
}
