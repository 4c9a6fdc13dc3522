//! Connections between nodes: mutual TLS under the cluster CA, a `Hello`
//! each way, then frames. Each node dials every member it knows and sends
//! on that connection; it receives on the connections others dial to it.

use crate::block::Block;
use crate::driver::Event;
use crate::frame::{self, HEADER, PROTOCOL_VERSION, Wire};
use crate::metrics::Metrics;
use crate::revocation::Revocations;
use crate::tls::{Identity, SERVER_NAME, peer_identity};
use crate::version::OLDEST_VERSION;
use bytes::{Bytes, BytesMut};
use coopcache_core::coop::NodeId;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::ServerName;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};

pub mod admission;
mod cause;
use admission::{Admission, Refused, Ticket};
pub use cause::{Noise, REPORT_EVERY, Throttle, cause};

/// Frames queued for one peer; beyond this new messages are dropped (and
/// counted): the protocol recovers from a lost message by timeout.
///
/// A remote hit can put two frames on one node's queue to the reader (as
/// manager, its `Expect`; as holder, the `Data`), and a block a stream
/// fetches several on its queue to a peer (a `Read` to the block's
/// manager, notices of the block it evicts, the forward of that block);
/// the queue fills while the link writes the previous batch. At 64
/// frames, 48 concurrent readers on one node dropped about 1% of them and
/// each drop cost a read the peer timeout (50 ms) and an origin read
/// (`coopcache bench latency`); at 256 (with streams holding 128
/// blocks), three streams of 8 KiB blocks still dropped frames or timed
/// out in 3 runs out of 16 (`crates/node/tests/bursts.rs`: 14 frames, or
/// 1 to 64 reads past the timeout), at 512 in none of 32, 16 of them
/// beside a busy core. 512 frames carry four frames for each
/// block a node's streams fetch at once
/// ([`MAX_STREAM_BLOCKS`](crate::streams::MAX_STREAM_BLOCKS)), and
/// forwarded singlets are kept to a quarter of them
/// ([`BEST_EFFORT_QUEUED`]). A queued `Data` shares its buffer with the
/// holder's cache, and blocks' bytes on the queues are bounded apart
/// ([`PEER_OUT_BYTES`](crate::budget::PEER_OUT_BYTES)); the frames
/// themselves take at most 512 x 136 bytes (68 KiB) per peer (tested
/// below).
pub const PEER_QUEUE: usize = 512;

/// Frames queued for a peer beyond which a best-effort message (a
/// forwarded singlet, `PeerMsg::best_effort`) is not sent, and counted
/// as shed: three quarters of the queue stay for the reads and answers
/// that a dropped frame would stall for the peer timeout. Forwards come
/// one per block a node takes in, whatever the peer's pace; with a
/// 1,024-frame queue and streams of 8 KiB blocks holding up to 512
/// blocks, forwards filled the queues and reads' frames were dropped
/// (`crates/node/tests/bursts.rs`: 285 to 1,517 frames in 5 runs of 6,
/// none in 4 once forwards were shed). The stream bound now keeps that
/// test's queues short by itself; this one guards a link its peer reads
/// slowly.
pub const BEST_EFFORT_QUEUED: usize = PEER_QUEUE / 4;

/// SWIM datagrams queued for one peer. They are sent ahead of every other
/// frame, so blocks in flight neither delay nor crowd out the failure
/// detector's probes (which would make a busy member look dead).
pub const GOSSIP_QUEUE: usize = 16;

/// A frame queued on a link, with its share of the node's
/// [`PEER_OUT_BYTES`](crate::budget::PEER_OUT_BYTES) if it carries a block;
/// the share is returned once the frame is written.
#[derive(Debug)]
pub struct Outgoing {
    /// The frame.
    pub wire: Wire,
    /// Its block bytes' permits, if any.
    pub held: Option<OwnedSemaphorePermit>,
}

/// The sending ends of one dialled link: frames in order, and gossip ahead
/// of them. Dropping it closes the link.
#[derive(Clone, Debug)]
pub struct LinkTx {
    /// Every frame but gossip, in order.
    pub frames: mpsc::Sender<Outgoing>,
    /// `Gossip` frames, sent first.
    pub gossip: mpsc::Sender<Wire>,
}

/// The receiving ends of a link, for [`run_link`].
pub struct LinkRx {
    frames: mpsc::Receiver<Outgoing>,
    gossip: mpsc::Receiver<Wire>,
}

/// Gossip holds no block bytes.
fn unheld(wire: Wire) -> Outgoing {
    Outgoing { wire, held: None }
}

impl LinkRx {
    /// The next frame to send, gossip first; `None` once the driver
    /// dropped the link and every frame queued before is out (a node
    /// leaving queues its `Leaving` last).
    async fn recv(&mut self) -> Option<Outgoing> {
        tokio::select! {
            biased;
            Some(m) = self.gossip.recv() => Some(unheld(m)),
            m = self.frames.recv() => m,
        }
    }

    /// A frame ready now, gossip first.
    fn try_recv(&mut self) -> Option<Outgoing> {
        match self.gossip.try_recv() {
            Ok(wire) => Some(unheld(wire)),
            Err(_) => self.frames.try_recv().ok(),
        }
    }

    fn is_closed(&self) -> bool {
        self.frames.is_closed()
    }
}

/// A new link's two queues.
pub fn link_channels() -> (LinkTx, LinkRx) {
    let (frames, frames_rx) = mpsc::channel(PEER_QUEUE);
    let (gossip, gossip_rx) = mpsc::channel(GOSSIP_QUEUE);
    (
        LinkTx { frames, gossip },
        LinkRx {
            frames: frames_rx,
            gossip: gossip_rx,
        },
    )
}

/// Most links all authenticated members hold to a node at once (besides
/// at most [`admission::MAX_UNAUTHENTICATED`] connections still in their
/// handshake).
pub const MAX_INBOUND: usize = 256;

/// Time allowed for TCP connect, TLS handshake and `Hello`.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Time an accepted connection has to finish its TLS handshake and send a
/// valid `Hello`, all together (a joiner's whole exchange has as long).
pub const HELLO_DEADLINE: Duration = Duration::from_secs(5);

/// An inbound link on which no frame arrives for this long is closed: its
/// peer is gone or holds it open for nothing.
pub const IDLE_DEADLINE: Duration = Duration::from_secs(60);

/// A dialled link with nothing to send for this long sends an empty
/// `Gossip` frame, so that its peer's [`IDLE_DEADLINE`] never closes a
/// quiet but healthy link.
pub const KEEPALIVE: Duration = Duration::from_secs(15);

/// Time allowed to write a batch of frames to a peer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Bytes of frames written to the socket at once.
const WRITE_BATCH: usize = 256 << 10;

/// What every connection of one node needs.
pub struct LinkCtx {
    /// This node's certificate and TLS configs.
    pub identity: Arc<Identity>,
    /// This node's id, its identity's.
    pub id: NodeId,
    /// This node's listen address as peers should dial it.
    pub listen: String,
    /// Block size, checked against each peer's.
    pub block_size: u32,
    /// Where connection events go.
    pub events: mpsc::Sender<Event>,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// Bytes of received frames not yet handled, all links together
    /// ([`PEER_IN_BYTES`](crate::budget::PEER_IN_BYTES)).
    pub inbound: Arc<Semaphore>,
    /// Bytes of blocks queued to peers, all links together
    /// ([`PEER_OUT_BYTES`](crate::budget::PEER_OUT_BYTES)).
    pub outbound: Arc<Semaphore>,
    /// The revocation list in force: every link checks its peer against it
    /// at its handshake and whenever it changes (`crate::revocation`).
    pub revoked: watch::Sender<Arc<Revocations>>,
}

/// Why a connection ended.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// Socket or TLS failure.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A bad frame.
    #[error("{0}")]
    Frame(#[from] frame::FrameError),
    /// The peer is not a member we can talk to.
    #[error("{0}")]
    Refused(String),
    /// Too slow.
    #[error("timed out {0}")]
    Timeout(&'static str),
    /// The address (a seed, or a name that resolves to this node among
    /// others) leads to this node itself: not a peer, not an error.
    #[error("{0} leads to this node itself")]
    Myself(String),
}

impl LinkCtx {
    /// The context of a node's links, with empty pools of
    /// [`PEER_IN_BYTES`](crate::budget::PEER_IN_BYTES) and
    /// [`PEER_OUT_BYTES`](crate::budget::PEER_OUT_BYTES).
    pub fn new(
        identity: Arc<Identity>,
        listen: String,
        block_size: u32,
        events: mpsc::Sender<Event>,
        metrics: Arc<Metrics>,
    ) -> LinkCtx {
        LinkCtx {
            id: identity.id,
            identity,
            listen,
            block_size,
            events,
            metrics,
            inbound: Arc::new(Semaphore::new(crate::budget::PEER_IN_BYTES as usize)),
            outbound: Arc::new(Semaphore::new(crate::budget::PEER_OUT_BYTES as usize)),
            revoked: watch::channel(Arc::new(Revocations::default())).0,
        }
    }

    /// This node's `Hello` on a link that agreed on `version`.
    fn hello(&self, version: u16) -> Wire {
        Wire::Hello {
            version,
            node: self.id,
            name: self.identity.name.clone(),
            listen: self.listen.clone(),
            block_size: self.block_size,
            release: frame::RELEASE.to_string(),
        }
    }

    fn max_frame(&self) -> usize {
        frame::max_frame(self.block_size)
    }

    /// Refuses a peer whose certificate the revocation list in force names.
    fn check_revoked(&self, chain: &[CertificateDer<'_>], name: &str) -> Result<(), LinkError> {
        let revoked = self.revoked.borrow();
        match revoked.revokes(chain) {
            true => Err(LinkError::Refused(format!(
                "the certificate of `{name}` is revoked (revocation list {})",
                revoked.number
            ))),
            false => Ok(()),
        }
    }

    /// Checks a peer's `Hello` against its certificate, the protocol
    /// version the link's TLS handshake agreed on (`agreed`,
    /// [`crate::version`]) and our settings; returns the peer's id (its
    /// certificate's, [`peer_identity`]), listen address and release.
    /// Public for the fuzz target `hello` (fuzz/); the links call it after
    /// the TLS handshake.
    #[doc(hidden)]
    pub fn check_hello(
        &self,
        wire: Wire,
        (cert_name, id): (&str, NodeId),
        agreed: u16,
    ) -> Result<Greeting, LinkError> {
        let Wire::Hello {
            version,
            node,
            name,
            listen,
            block_size,
            release,
        } = wire
        else {
            return Err(LinkError::Refused("first frame is not a Hello".into()));
        };
        if !(OLDEST_VERSION..=PROTOCOL_VERSION).contains(&version) {
            return Err(LinkError::Refused(format!(
                "peer speaks protocol version {version}, this node {} (docs/PROTOCOL.md, \"Versions\")",
                crate::version::spoken()
            )));
        }
        // A version-14 node always says 14, whatever a newer dialler
        // offered; a newer one says what the handshake agreed.
        if version != agreed {
            return Err(LinkError::Refused(format!(
                "peer's Hello says protocol version {version}, but the TLS handshake agreed on {agreed}"
            )));
        }
        if name != cert_name {
            return Err(LinkError::Refused(format!(
                "peer says it is `{name}` but its certificate is `{cert_name}`"
            )));
        }
        if block_size != self.block_size {
            return Err(LinkError::Refused(format!(
                "peer `{name}` uses blocks of {block_size} bytes, this node {}",
                self.block_size
            )));
        }
        // The id is the certificate's, never the frame's: a member cannot
        // speak under another's id (docs/PROTOCOL.md, "Identity").
        if node != id {
            return Err(LinkError::Refused(format!(
                "peer `{name}` claims id {node}, but its certificate's id is {id}"
            )));
        }
        // This node dialled itself (a name that resolves to its own
        // address): the same certificate and the same listen address. Two
        // processes with one certificate differ in the latter.
        if id == self.id && name == self.identity.name && listen == self.listen {
            return Err(LinkError::Myself(listen));
        }
        if id == self.id {
            return Err(LinkError::Refused(match name == self.identity.name {
                true => format!(
                    "peer has this node's own name `{name}`: two nodes run with one certificate"
                ),
                false => format!("peer `{name}` has this node's id {id} under another name"),
            }));
        }
        Ok(Greeting {
            id,
            listen,
            version,
            release,
        })
    }
}

/// What a checked `Hello` tells of the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Greeting {
    /// Its id: its certificate's, never the frame's.
    pub id: NodeId,
    /// Where it accepts peers.
    pub listen: String,
    /// The protocol version the link speaks.
    pub version: u16,
    /// Its release (`coopcache --version`), empty for a version-14 peer.
    pub release: String,
}

/// The protocol version a TLS session agreed on (its ALPN protocol).
fn agreed_version(alpn: Option<&[u8]>) -> Result<u16, LinkError> {
    crate::version::agreed(alpn).ok_or_else(|| {
        LinkError::Refused(format!(
            "the TLS handshake chose protocol {:?}, which this node does not speak",
            String::from_utf8_lossy(alpn.unwrap_or_default())
        ))
    })
}

/// Reads one frame, or `None` at a clean end of stream.
pub async fn read_frame<R: AsyncRead + Unpin>(
    r: &mut R,
    max: usize,
) -> Result<Option<Wire>, LinkError> {
    Ok(read_frame_held(r, max, None, None)
        .await?
        .map(|(wire, _)| wire))
}

/// Frames up to this size are not counted against
/// [`PEER_IN_BYTES`](crate::budget::PEER_IN_BYTES): only blocks are large,
/// and a pool too full for a 100-byte `Read` must not stall a link.
const UNCOUNTED: usize = 1024;

/// Reads one frame as [`read_frame`] does; a frame larger than
/// [`UNCOUNTED`] first waits for its length in bytes from `pool`, before
/// its buffer is allocated, and returns the permits with it. With `idle`,
/// fails if no frame starts within it (waiting for the pool is not idle).
async fn read_frame_held<R: AsyncRead + Unpin>(
    r: &mut R,
    max: usize,
    pool: Option<&Arc<Semaphore>>,
    idle: Option<Duration>,
) -> Result<Option<(Wire, Option<OwnedSemaphorePermit>)>, LinkError> {
    let mut header = [0u8; HEADER];
    let read = match idle {
        Some(idle) => tokio::time::timeout(idle, r.read_exact(&mut header))
            .await
            .map_err(|_| LinkError::Timeout("idle: no frame from the peer"))?,
        None => r.read_exact(&mut header).await,
    };
    match read {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    // The length is checked before the buffer is allocated; the body is
    // read into it without zero-filling it first (a block's worth of
    // writes per frame).
    let len = frame::body_len(header, max)?;
    let held = match pool {
        Some(pool) if len > UNCOUNTED => {
            // `max` is a block plus 1 KiB, far below u32::MAX.
            let n = u32::try_from(len).unwrap_or(u32::MAX);
            let permit = pool.clone().acquire_many_owned(n).await;
            Some(permit.map_err(|_| std::io::Error::other("the node is shutting down"))?)
        }
        _ => None,
    };
    let mut body = BytesMut::with_capacity(len);
    let mut rest = (&mut *r).take(len as u64);
    while body.len() < len {
        if rest.read_buf(&mut body).await? == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
        }
    }
    Ok(Some((frame::decode(body.freeze())?, held)))
}

/// Writes one frame.
pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, wire: &Wire) -> Result<(), LinkError> {
    let mut buf = BytesMut::new();
    frame::encode(wire, &mut buf);
    w.write_all(&buf).await?;
    w.flush().await?;
    Ok(())
}

async fn timed<T>(
    what: &'static str,
    f: impl Future<Output = Result<T, LinkError>>,
) -> Result<T, LinkError> {
    tokio::time::timeout(HANDSHAKE_TIMEOUT, f)
        .await
        .map_err(|_| LinkError::Timeout(what))?
}

/// Accepts peers' connections until the listener fails.
pub async fn accept_loop(listener: TcpListener, ctx: Arc<LinkCtx>) {
    let admission = Arc::new(Admission::default());
    let noise = Arc::new(Noise::default());
    loop {
        let (stream, addr) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let ticket = admission.arrive();
        let (ctx, noise, admission) = (ctx.clone(), noise.clone(), admission.clone());
        tokio::spawn(async move {
            let result = serve_inbound(stream, &ctx, &admission, ticket).await;
            if let Err(e) = result.or_else(|e| match e {
                LinkError::Myself(_) => Ok(()),
                e => Err(e),
            }) {
                ctx.metrics.peer_errors.inc();
                cause::say(
                    &addr,
                    &e,
                    noise.failed(crate::clock::now()),
                    "inbound peer connection failed (all of them counted in peer_errors; said at most every 10 s)",
                );
            }
        });
    }
}

/// One inbound connection, until a newer one takes its place
/// ([`admission`]).
async fn serve_inbound(
    stream: TcpStream,
    ctx: &LinkCtx,
    admission: &Admission,
    mut ticket: Ticket,
) -> Result<(), LinkError> {
    let evicted = ticket.eviction();
    tokio::select! {
        biased;
        () = evicted.notified() => Err(LinkError::Refused(
            "closed for a newer connection (too many unauthenticated, or this member's links)".into(),
        )),
        r = inbound(stream, ctx, admission, &mut ticket) => r,
    }
}

/// The TLS handshake and the `Hello` (within [`HELLO_DEADLINE`]), then
/// every frame to the driver.
async fn inbound(
    stream: TcpStream,
    ctx: &LinkCtx,
    admission: &Admission,
    ticket: &mut Ticket,
) -> Result<(), LinkError> {
    stream.set_nodelay(true)?;
    let peer = stream.peer_addr()?;
    let hello = tokio::time::timeout(HELLO_DEADLINE, handshake(stream, ctx, peer))
        .await
        .map_err(|_| LinkError::Timeout("from accept to Hello"))??;
    let Some((mut tls, greeting, name, chain)) = hello else {
        return Ok(()); // a joiner, served
    };
    let Greeting {
        id: node,
        listen,
        version,
        ..
    } = greeting;
    admission
        .authenticated(ticket, node, &listen)
        .map_err(|refused| match refused {
            Refused::Full => LinkError::Refused(format!("{MAX_INBOUND} member links open already")),
            Refused::Duplicate { listen: first } => LinkError::Refused(format!(
                "a second node named `{name}` (id {node}, listening at {listen}): \
                 `{name}` is linked already from {first}; two processes run with one certificate"
            )),
        })?;
    timed("sending Hello", write_frame(&mut tls, &ctx.hello(version))).await?;
    let max = ctx.max_frame();
    let mut revoked = ctx.revoked.subscribe();
    loop {
        let read = read_frame_held(&mut tls, max, Some(&ctx.inbound), Some(IDLE_DEADLINE));
        let Some((wire, held)) = read.await? else {
            break;
        };
        // A new revocation list: checked before the next frame is used (a
        // read is never cut short for it; a silent link meets the idle
        // deadline).
        if revoked.has_changed().unwrap_or(false) {
            revoked.mark_unchanged();
            ctx.check_revoked(&chain, &name)?;
        }
        let event = match wire {
            // Contents are hashed here, on this connection's task, so the
            // protocol compares digests without hashing on its own.
            Wire::Peer(msg) => Event::Peer {
                from: node,
                msg: msg.map_data(Block::new),
                held,
            },
            // A keepalive (see KEEPALIVE): it only proves the link.
            Wire::Gossip(data) if data.is_empty() => continue,
            wire => Event::Frame { from: node, wire },
        };
        if ctx.events.send(event).await.is_err() {
            break; // the node is shutting down
        }
    }
    Ok(())
}

type InboundTls = tokio_rustls::server::TlsStream<TcpStream>;

/// What an inbound handshake proved: the link, the member's `Hello`, its
/// name, and its certificate chain.
type Proved = (InboundTls, Greeting, String, Vec<CertificateDer<'static>>);

/// TLS and the peer's `Hello`, checked (and the certificate against the
/// revocation list), or `None` for a joiner (served the join protocol
/// here).
async fn handshake(
    stream: TcpStream,
    ctx: &LinkCtx,
    peer: std::net::SocketAddr,
) -> Result<Option<Proved>, LinkError> {
    let acceptor =
        tokio_rustls::LazyConfigAcceptor::new(rustls::server::Acceptor::default(), stream);
    let start = acceptor.await?;
    if asks_to_join(&start.client_hello()) {
        // A joiner has no certificate: it gets the join protocol only,
        // never a frame of the member protocol.
        let config = ctx.identity.join.clone();
        let mut tls = start.into_stream(config).await?;
        let outcome = crate::join::server::serve(&mut tls, &ctx.identity).await?;
        crate::join::server::log(&peer, &outcome);
        return Ok(None);
    }
    let config = ctx.identity.server.clone();
    let mut tls = start.into_stream(config).await?;
    let (chain, cert_name, cert_id) = proven_peer(tls.get_ref().1.peer_certificates(), ctx)?;
    let agreed = agreed_version(tls.get_ref().1.alpn_protocol())?;
    let hello = read_frame(&mut tls, ctx.max_frame())
        .await?
        .ok_or_else(|| LinkError::Refused("closed before Hello".into()))?;
    let greeting = ctx.check_hello(hello, (&cert_name, cert_id), agreed)?;
    Ok(Some((tls, greeting, cert_name, chain)))
}

/// The peer's certificate chain (owned), name and id, if it presented a
/// node certificate that is not revoked.
fn proven_peer(
    certs: Option<&[CertificateDer<'_>]>,
    ctx: &LinkCtx,
) -> Result<(Vec<CertificateDer<'static>>, String, NodeId), LinkError> {
    let certs = certs.unwrap_or(&[]);
    let (name, id) = peer_identity(certs)
        .ok_or_else(|| LinkError::Refused("peer presented no node certificate".into()))?;
    ctx.check_revoked(certs, &name)?;
    let chain = certs.iter().map(|c| c.clone().into_owned()).collect();
    Ok((chain, name, id))
}

/// Whether a ClientHello asks for the join protocol's ALPN.
fn asks_to_join(hello: &rustls::server::ClientHello<'_>) -> bool {
    hello
        .alpn()
        .is_some_and(|mut protocols| protocols.any(|p| p == crate::tls::JOIN_ALPN))
}

/// Dials `addr` and keeps a connection to it, sending what arrives on
/// `queue`; reconnects with backoff until `queue` is closed. Reports each
/// connection and disconnection to the driver.
pub async fn run_link(addr: String, ctx: Arc<LinkCtx>, mut queue: LinkRx) {
    let mut backoff = Duration::from_millis(100);
    let mut notes = Throttle::new(REPORT_EVERY);
    loop {
        match dial(&addr, &ctx).await {
            Ok((tls, greeting, name, chain)) => {
                let id = greeting.id;
                backoff = Duration::from_millis(100);
                if notes.up() {
                    tracing::info!(%addr, peer = %name, "peer reachable again");
                }
                let up = Event::LinkUp {
                    addr: addr.clone(),
                    name: name.clone(),
                    greeting,
                };
                if ctx.events.send(up).await.is_err() {
                    return;
                }
                let result = pump(tls, &mut queue, &ctx, &chain, &name).await;
                let closed = matches!(result, Ok(true));
                if let Err(e) = result {
                    ctx.metrics.peer_errors.inc();
                    tracing::warn!(peer = %name, error = %e, "link lost");
                }
                let down = Event::LinkDown {
                    addr: addr.clone(),
                    id: Some(id),
                };
                // A closed queue means the driver dropped this link (SWIM
                // declared the peer down): it must not hear of it again,
                // as a new link to the same address may be up by now.
                if closed || queue.is_closed() || ctx.events.send(down).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                // An operator joining a foreign cluster or a dead seed
                // must hear why, but not on every retry.
                // A seed that is this node (the first pod of a cluster,
                // alone behind its Service's name) is said once, at DEBUG.
                let failures = match e {
                    LinkError::Myself(_) => None,
                    _ => notes.failed(crate::clock::now()),
                };
                cause::say(
                    &addr,
                    &e,
                    failures,
                    "cannot reach peer (retrying; said again in a minute if it lasts)",
                );
                let down = Event::LinkDown {
                    addr: addr.clone(),
                    id: None,
                };
                if ctx.events.send(down).await.is_err() {
                    return;
                }
            }
        }
        // Drop what was queued for the dead connection while waiting.
        let wait = tokio::time::sleep(backoff);
        tokio::pin!(wait);
        loop {
            tokio::select! {
                _ = &mut wait => break,
                m = queue.recv() => if m.is_none() { return },
            }
        }
        backoff = (backoff * 2).min(Duration::from_secs(2));
    }
}

type Tls = tokio_rustls::client::TlsStream<TcpStream>;

/// A dialled link, the peer's `Hello`, its name, and its certificate
/// chain.
type Dialled = (Tls, Greeting, String, Vec<CertificateDer<'static>>);

/// Addresses of a name tried at most, in the resolver's order.
const MAX_DIAL_ADDRS: usize = 16;

/// The longest one dial takes, over every address its name resolves to:
/// a name that resolves to many dead addresses costs this once, not a
/// handshake's timeout at each step of each address (up to 16 x 20 s).
const DIAL_TIMEOUT: Duration = Duration::from_secs(15);

/// What a dial past [`DIAL_TIMEOUT`] was doing.
const DIALLING: &str = "dialling the addresses the name resolves to";

/// Dials `addr`: each address it resolves to in turn (a headless
/// Kubernetes Service's name resolves to every pod, this one included)
/// until one links. This node's own advertised address is skipped, and an
/// address whose Hello turns out to be this node's is passed over: a
/// name that leads a node to itself is not a peer's error.
async fn dial(addr: &str, ctx: &LinkCtx) -> Result<Dialled, LinkError> {
    tokio::time::timeout(DIAL_TIMEOUT, dial_each(addr, ctx))
        .await
        .map_err(|_| LinkError::Timeout(DIALLING))?
}

/// [`dial`] without its deadline.
async fn dial_each(addr: &str, ctx: &LinkCtx) -> Result<Dialled, LinkError> {
    let own: Option<std::net::SocketAddr> = ctx.listen.parse().ok();
    let resolved = timed("resolving", async {
        Ok(tokio::net::lookup_host(addr).await?)
    })
    .await?;
    let mut last = None;
    for a in resolved.filter(|a| Some(*a) != own).take(MAX_DIAL_ADDRS) {
        match dial_one(a, ctx).await {
            Ok(dialled) => return Ok(dialled),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| LinkError::Myself(addr.to_string())))
}

async fn dial_one(addr: std::net::SocketAddr, ctx: &LinkCtx) -> Result<Dialled, LinkError> {
    let stream = timed("connecting", async { Ok(TcpStream::connect(addr).await?) }).await?;
    stream.set_nodelay(true)?;
    let connector = tokio_rustls::TlsConnector::from(ctx.identity.client.clone());
    let server = ServerName::try_from(SERVER_NAME)
        .map_err(|e| LinkError::Refused(format!("server name: {e}")))?;
    let mut tls = timed("in the TLS handshake", async {
        Ok(connector.connect(server, stream).await?)
    })
    .await?;
    let (chain, cert_name, cert_id) = proven_peer(tls.get_ref().1.peer_certificates(), ctx)?;
    let agreed = agreed_version(tls.get_ref().1.alpn_protocol())?;
    timed("sending Hello", write_frame(&mut tls, &ctx.hello(agreed))).await?;
    let hello = timed("waiting for Hello", async {
        read_frame(&mut tls, ctx.max_frame())
            .await?
            .ok_or_else(|| LinkError::Refused("closed before Hello".into()))
    })
    .await?;
    let greeting = ctx.check_hello(hello, (&cert_name, cert_id), agreed)?;
    Ok((tls, greeting, cert_name, chain))
}

/// Sends queued frames in batches until the queue closes (`Ok(true)`) or
/// the connection fails, the peer closes it or a revocation list names
/// the peer's certificate (`chain`).
async fn pump(
    tls: Tls,
    queue: &mut LinkRx,
    ctx: &LinkCtx,
    chain: &[CertificateDer<'static>],
    name: &str,
) -> Result<bool, LinkError> {
    let mut revoked = ctx.revoked.subscribe();
    let (mut rd, mut wr) = tokio::io::split(tls);
    let mut buf = BytesMut::with_capacity(64 << 10);
    // Permits of the frames in the batch, returned once it is written.
    let mut held = Vec::with_capacity(64);
    let mut probe = [0u8; 1];
    loop {
        let first = tokio::select! {
            m = queue.recv() => match m {
                Some(m) => m,
                None => {
                    // Dropped by the driver (this node leaving, or SWIM
                    // declaring the peer down): end the TLS session
                    // properly, so the peer reads a clean end, not a cut.
                    let _ = tokio::time::timeout(WRITE_TIMEOUT, wr.shutdown()).await;
                    return Ok(true);
                }
            },
            // The peer never writes after its Hello: a read returning means
            // it closed or broke the connection.
            r = rd.read(&mut probe) => {
                r?;
                return Err(LinkError::Refused("peer closed the connection".into()));
            }
            () = tokio::time::sleep(KEEPALIVE) => unheld(Wire::Gossip(Bytes::new())),
            Ok(()) = revoked.changed() => {
                ctx.check_revoked(chain, name)?;
                continue;
            }
        };
        buf.clear();
        frame::encode(&first.wire, &mut buf);
        held.extend(first.held);
        while buf.len() < WRITE_BATCH {
            match queue.try_recv() {
                Some(m) => {
                    frame::encode(&m.wire, &mut buf);
                    held.extend(m.held);
                }
                None => break,
            }
        }
        let data: Bytes = buf.split().freeze();
        tokio::time::timeout(WRITE_TIMEOUT, async {
            wr.write_all(&data).await?;
            wr.flush().await
        })
        .await
        .map_err(|_| LinkError::Timeout("writing to a peer"))??;
        held.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coopcache_core::protocol::{BlockId, PeerMsg};

    fn data_frame(index: u32, len: usize) -> Vec<u8> {
        let wire = Wire::Peer(PeerMsg::Data {
            block: BlockId::new(1, index),
            data: Bytes::from(vec![9u8; len]),
        });
        let mut buf = BytesMut::new();
        frame::encode(&wire, &mut buf);
        buf.to_vec()
    }

    #[test]
    fn a_full_queue_of_frames_is_small() {
        // The frames' own memory, outside the budget's counts: 68 KiB per
        // peer with a full queue (blocks' bytes are counted apart).
        let each = std::mem::size_of::<Outgoing>();
        assert!(each <= 136, "a queued frame takes {each} bytes");
    }

    #[tokio::test]
    async fn a_link_waits_for_received_blocks_to_be_handled_before_reading_more() {
        let block = 64 << 10;
        let max = frame::max_frame(block as u32);
        // Room for one block's frame, not two.
        let pool = Arc::new(Semaphore::new(block + 1024));
        let (mut tx, mut rx) = tokio::io::duplex(4 * block);
        tx.write_all(&data_frame(0, block)).await.unwrap();
        tx.write_all(&data_frame(1, block)).await.unwrap();

        let (first, held) = read_frame_held(&mut rx, max, Some(&pool), None)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(first.data_len(), block);
        let held = held.expect("a block's frame holds its bytes");
        let second = tokio::spawn({
            let pool = pool.clone();
            async move {
                let got = read_frame_held(&mut rx, max, Some(&pool), None).await;
                got.unwrap().unwrap()
            }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            !second.is_finished(),
            "the second block waits for the first"
        );

        drop(held);
        let (second, _held) = second.await.unwrap();
        assert_eq!(second.data_len(), block);
    }
}
