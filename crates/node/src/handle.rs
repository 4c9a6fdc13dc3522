//! Starting a node, and the API every access path uses (`coopcache cat`,
//! the HTTP gateway, the demo, tests): stat a file, read byte ranges.

use crate::block::{BlockId, first_block, private_file_id};
use crate::budget::{Budget, BudgetError};
use crate::clock::Clock;
use crate::discovery;
use crate::driver::{CommitEvent, DiskPlace, Driver, DriverConfig, Event, ReadError, Status};
use crate::link::{LinkCtx, accept_loop};
use crate::metrics::Metrics;
use crate::origin::{FileVersion, Origin, OriginError, check_path};
use crate::tls::Identity;
use bytes::{Bytes, BytesMut};
use coopcache_core::c2cfs::exclusive::{CommitConfig, CommitProtocol};
use coopcache_core::c2cfs::listings::{ListConfig, ListProtocol};
use coopcache_core::c2cfs::{Committed, Tcommit, VersionCache};
use coopcache_core::coop::{AlgorithmKind, ClassPolicies, Level, LiveShape};
use coopcache_core::policy::PolicyKind;
use coopcache_core::protocol::{NodeProtocol, ProtocolConfig, classed};
use futures::{Stream, StreamExt};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::streams::{Blocks, Lease, StreamPool};
pub use crate::streams::{MAX_STREAM_BLOCKS, READ_AHEAD_BYTES, read_ahead, stream_blocks};

/// Events queued for the driver; senders wait beyond this.
const EVENT_QUEUE: usize = 1024;

/// Files whose version a node trusts for `--attr-ttl` (the core's
/// [`VersionCache`]).
const MAX_VERSIONS: usize = 65536;

/// Everything a node needs to start.
pub struct NodeOptions {
    /// Its certificate and TLS configs; its name and its id
    /// ([`Identity::id`]) are the certificate's.
    pub identity: Identity,
    /// Where to accept peers.
    pub listen: SocketAddr,
    /// The address peers should dial, if not `listen` (a wildcard listen
    /// address must be given one).
    pub advertise: Option<String>,
    /// Seeds to join.
    pub join: Vec<String>,
    /// Multicast group to announce on and discover members through (one
    /// subnet, no seeds needed); `None` (the default) turns discovery off.
    pub discover: Option<SocketAddrV4>,
    /// The origin.
    pub origin: Origin,
    /// The algorithm (one that runs live: [`AlgorithmKind::live`]).
    pub algorithm: AlgorithmKind,
    /// The replacement policy of the node's locally managed cache.
    pub policy: PolicyKind,
    /// Memory budget in bytes.
    pub memory: u64,
    /// Block size in bytes.
    pub block_size: u32,
    /// N-Chance's recirculation count.
    pub chances: u8,
    /// Seed of N-Chance's random peer choices.
    pub seed: u64,
    /// How long a file's version is trusted before the origin is asked
    /// again. 0 (the default) is close-to-open: every open (a `read`, a
    /// gateway request) asks the origin, so it sees every write closed
    /// before it; more trades that for fewer origin round trips, like
    /// NFS's attribute cache timeout (a write is then seen within this
    /// window; the core's `VersionCache`).
    pub attr_ttl: Duration,
    /// Least time to wait on peers before reading the origin.
    pub min_timeout: Duration,
    /// How long this node's own reads must have stopped before it calls
    /// itself idle and lends its memory to busy peers (Netcache).
    pub idle_after: Duration,
    /// The origin is private: no other member can read it (Netcache
    /// section 3.5). Its blocks never enter the shared directory and no
    /// peer is served one; with Direct, evictions are parked on idle peers
    /// sealed under a key only this process holds. Needs Direct or Base.
    pub private: bool,
    /// With a private origin, the cluster's dedup key: identical blocks
    /// parked by nodes holding it are stored once (unification, opt-in;
    /// `seal.rs`). `None`: nothing is unified.
    pub unify: Option<crate::seal::DedupKey>,
    /// Glob patterns (`secrets/**`, `*.key`) of privacy-critical paths,
    /// never unified.
    pub critical: Vec<String>,
    /// C2Cfs `exclusive` mode: how long after a membership change the
    /// files' managers answer no open from their commit tables (opens
    /// read the origin's version meanwhile), for every member's view of
    /// the members to agree again (`coopcache_core::c2cfs::exclusive`).
    pub commit_stable: Duration,
    /// C2Cfs `exclusive` mode: an open asks its manager to serve the
    /// file's first block with the answer, one round trip for both (on
    /// by default; off only to measure what it saves, `coopcache bench
    /// mount --phases opens`).
    pub first_block_with_open: bool,
    /// Bytes of the memory budget set aside for pinned files (`coopcache
    /// pin`, `crate::pins`), at most half of it; the cache has the rest.
    /// 0 (the default): nothing can be pinned.
    pub max_pinned: u64,
    /// Directories of the disk tier (`crate::disk`), one per disk; none
    /// (the default): memory alone.
    pub disk: Vec<std::path::PathBuf>,
    /// Bytes of the disk tier over all of `disk`; its index in memory
    /// comes out of `memory` ([`disk_index_bytes`]).
    pub disk_size: u64,
    /// How long after the disk tier is given up (it failed every call in
    /// a row) the node first tries to open it again; then twice as long
    /// after each failure, up to half an hour. A minute by default.
    pub disk_retry: Duration,
    /// Size-class policies (the request-distribution paper's): what the
    /// cluster does with the blocks of files of each size class. N-Chance
    /// only ([`coopcache_core::coop::live_classes`]); every member must
    /// run the same classes, as a file's blocks are named in its class.
    /// One class with the default policy (the default): none.
    pub classes: ClassPolicies,
}

impl NodeOptions {
    /// Options with the defaults: N-Chance (n = 2) over LRU, 64 KiB
    /// blocks, 2 GiB, close-to-open (versions asked on every open), peer
    /// timeout floor 50 ms, idle after 10 s without reads.
    pub fn new(identity: Identity, listen: SocketAddr, origin: Origin) -> Self {
        NodeOptions {
            identity,
            listen,
            advertise: None,
            join: Vec::new(),
            discover: None,
            origin,
            algorithm: AlgorithmKind::NChance,
            policy: PolicyKind::Lru,
            memory: 2 << 30,
            block_size: 64 << 10,
            chances: 2,
            seed: 1,
            attr_ttl: Duration::ZERO,
            min_timeout: Duration::from_millis(50),
            idle_after: Duration::from_micros(coopcache_core::protocol::IDLE_AFTER_US),
            private: false,
            unify: None,
            critical: Vec::new(),
            commit_stable: Duration::from_secs(5),
            first_block_with_open: true,
            max_pinned: 0,
            disk: Vec::new(),
            disk_size: 0,
            disk_retry: Duration::from_micros(coopcache_core::protocol::DISK_RETRY_US),
            classes: ClassPolicies::uniform(),
        }
    }
}

/// How long an `exclusive`-mode open or commit waits on the file's
/// manager before the node asks the origin itself.
const COMMIT_TIMEOUT: Duration = Duration::from_secs(1);

/// Why a node could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Memory budget too small.
    #[error(transparent)]
    Budget(#[from] BudgetError),
    /// Block size out of range.
    #[error("block size {0} bytes: expected a power of two from 512 B to 4 MiB")]
    BlockSize(u32),
    /// Listening failed.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Discovery could not open its multicast socket.
    #[error("cannot join discovery group {group}: {source}")]
    Discovery {
        /// The group.
        group: SocketAddrV4,
        /// Why.
        source: std::io::Error,
    },
    /// The origin refused.
    #[error(transparent)]
    Origin(#[from] OriginError),
    /// A read failed.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A range outside the file.
    #[error("range {start}-{end} is outside {path} ({size} bytes)")]
    Range {
        /// The file.
        path: String,
        /// Range start.
        start: u64,
        /// Range end (exclusive).
        end: u64,
        /// File size.
        size: u64,
    },
    /// The node stopped.
    #[error("the node is shutting down")]
    Shutdown,
    /// A file does not fit in what is left of the pinned share.
    #[error(
        "{path} does not fit in what is left of this node's pinned share ({max_bytes} bytes, --max-pinned): unpin something first, or give the node a larger share"
    )]
    PinFull {
        /// The file.
        path: String,
        /// The share's size.
        max_bytes: u64,
    },
    /// Bad settings.
    #[error("{0}")]
    Config(String),
    /// Nodes still busy when they were expected to be at rest.
    #[error("{0}")]
    NotQuiet(String),
}

/// A running node.
pub struct NodeHandle {
    pub(crate) events: mpsc::Sender<Event>,
    origin: Arc<Origin>,
    block_size: u32,
    /// Blocks the node caches (bounds how far a stream reads ahead).
    capacity: usize,
    /// Blocks all streams together may hold ([`crate::budget::STREAM_BYTES`]).
    streaming: Arc<StreamPool>,
    /// `shared` mode: versions trusted for `--attr-ttl` (the core decides).
    versions: Mutex<VersionCache<Arc<FileVersion>>>,
    clock: Clock,
    metrics: Arc<Metrics>,
    listen: SocketAddr,
    tasks: Vec<JoinHandle<()>>,
    /// A private origin's file id salt ([`private_file_id`]) and which
    /// files may be unified.
    private: Option<PrivateIds>,
    /// The files pinned here.
    pub(crate) pins: crate::pins::Pins,
    /// Size-class policies: a shared origin's file is named in its size's
    /// class ([`coopcache_core::protocol::classed`]).
    classes: Arc<ClassPolicies>,
}

/// How a node with a private origin names its files.
#[derive(Clone)]
struct PrivateIds {
    salt: [u8; 32],
    /// Whether the node unifies blocks at all.
    unify: bool,
    /// Privacy-critical paths, never unified.
    critical: globset::GlobSet,
}

/// The privacy-critical path patterns `patterns`, compiled, or which one
/// is not a glob.
pub fn critical_paths(patterns: &[String]) -> Result<globset::GlobSet, NodeError> {
    let mut set = globset::GlobSetBuilder::new();
    for p in patterns {
        let glob = globset::Glob::new(p).map_err(|e| {
            NodeError::Config(format!(
                "critical path pattern `{p}`: {e} (expected a glob such as `secrets/**` or `*.key`)"
            ))
        })?;
        set.add(glob);
    }
    set.build()
        .map_err(|e| NodeError::Config(format!("critical path patterns: {e}")))
}

/// How long [`NodeHandle::leave`] waits for the driver, and then for the
/// links to write their goodbyes.
pub const LEAVE_WAIT: Duration = Duration::from_millis(250);

/// The blocks a node with `memory` bytes of budget and blocks of
/// `block_size` bytes may cache, or why it could not start with them:
/// what [`start`] checks first, for a caller that checks settings without
/// starting (`coopcache node --check-config`).
pub fn check_capacity(
    memory: u64,
    max_pinned: u64,
    disk_size: u64,
    block_size: u32,
    private: bool,
) -> Result<usize, NodeError> {
    if !(512..=(4 << 20)).contains(&block_size) || !block_size.is_power_of_two() {
        return Err(NodeError::BlockSize(block_size));
    }
    let index = disk_index_bytes(disk_size, block_size);
    if index > memory / 2 {
        return Err(NodeError::Config(format!(
            "--disk-size {disk_size} bytes: its index would take {index} bytes of memory, more than half of --memory ({memory} bytes); give a smaller disk tier, larger blocks or more memory"
        )));
    }
    if max_pinned > memory / 2 {
        return Err(NodeError::Config(format!(
            "--max-pinned {max_pinned} bytes: more than half of the memory budget ({memory} bytes); pinned files would leave the cache too little"
        )));
    }
    Ok(Budget {
        total: memory - max_pinned - index,
        block_size,
        private,
    }
    .blocks()?)
}

/// Bytes of memory a disk tier of `disk_size` bytes takes at most, in
/// blocks of `block_size`, counted in the memory budget: its index, a
/// slot per block
/// ([`DISK_ENTRY_BYTES`](coopcache_core::protocol::DISK_ENTRY_BYTES)
/// each), and its writes in flight
/// ([`DISK_WRITE_BYTES`](crate::budget::DISK_WRITE_BYTES)).
pub fn disk_index_bytes(disk_size: u64, block_size: u32) -> u64 {
    if disk_size == 0 {
        return 0;
    }
    let slots = disk_size / u64::from(block_size.max(1));
    slots * coopcache_core::protocol::DISK_ENTRY_BYTES + crate::budget::DISK_WRITE_BYTES
}

/// Blocks the pinned share of `max_pinned` bytes holds, each counted with
/// its metadata as a cached block is.
pub fn pinned_blocks(max_pinned: u64, block_size: u32, private: bool) -> usize {
    let per_block = Budget {
        total: 0,
        block_size,
        private,
    }
    .per_block();
    usize::try_from(max_pinned / per_block).unwrap_or(usize::MAX)
}

/// Whether a node with a private origin can run `algorithm`: Direct parks
/// its blocks sealed, Base keeps them to itself; the others would hand
/// them to peers in the clear or list them in the shared directory.
pub fn check_private(algorithm: AlgorithmKind) -> Result<(), NodeError> {
    match algorithm {
        AlgorithmKind::Direct | AlgorithmKind::Base => Ok(()),
        other => Err(NodeError::Config(format!(
            "a private origin needs --algorithm direct (evictions parked on idle peers, sealed) or base (kept to this node); {other} would hand its blocks to peers in the clear"
        ))),
    }
}

/// Opens the disk tier's store at `place` and gives the protocol its
/// slots and what they held from an earlier run. `None` if the disk fails
/// (the protocol then tries again after `retry`).
async fn open_disk(
    place: &DiskPlace,
    retry: Duration,
    protocol: &mut NodeProtocol<BlockId, crate::block::Block>,
    now: u64,
) -> Result<Option<Arc<crate::disk::DiskStore>>, NodeError> {
    let owned = place.clone();
    let opened = tokio::task::spawn_blocking(move || {
        crate::disk::DiskStore::open(&owned.dirs, owned.size, owned.block_size)
    })
    .await
    .map_err(|e| NodeError::Config(format!("opening the disk tier: {e}")))?;
    // As many writes on their way as DISK_WRITE_BYTES holds of the
    // largest slot's bytes.
    let max_writing = crate::budget::DISK_WRITE_BYTES / u64::from(place.block_size.max(1));
    let settings = |slots| coopcache_core::protocol::DiskSettings {
        slots,
        max_writing: u32::try_from(max_writing).unwrap_or(u32::MAX).max(1),
        retry_us: retry.as_micros().try_into().unwrap_or(u64::MAX),
    };
    let (store, found) = match opened {
        Ok(opened) => opened,
        // A disk that fails at start is a disk that failed while running
        // (memory alone, a WARN): a node restarted after its disk died
        // must come back, not crash-loop. What the operator can fix (no
        // room, a directory in use or not writable) stops the start.
        Err(e @ crate::disk::DiskError::Io { .. }) => {
            let cause = std::error::Error::source(&e).map(ToString::to_string);
            tracing::warn!(
                error = %e,
                cause = cause.unwrap_or_default(),
                "disk tier: the disk fails at start; this node goes on with memory alone"
            );
            protocol.lose_disk(settings(0), now);
            return Ok(None);
        }
        Err(e) => return Err(NodeError::Config(e.to_string())),
    };
    protocol.set_disk(settings(store.slots()));
    let kept = crate::driver::recover(protocol, &found);
    tracing::info!(
        slots = store.slots(),
        blocks = kept,
        dirs = ?place.dirs,
        "disk tier open: blocks from an earlier run are served once checked"
    );
    Ok(Some(Arc::new(store)))
}

/// Starts a node: listens, dials the seeds, and serves.
pub async fn start(opts: NodeOptions) -> Result<NodeHandle, NodeError> {
    let id = opts.identity.id;
    let bs = opts.block_size;
    let capacity = check_capacity(
        opts.memory,
        opts.max_pinned,
        opts.disk_size,
        bs,
        opts.private,
    )?;
    if opts.private {
        check_private(opts.algorithm)?;
    }
    if opts.unify.is_some() && !opts.private {
        return Err(NodeError::Config(
            "a dedup key unifies a private origin's parked blocks: it needs --private".into(),
        ));
    }
    let critical = critical_paths(&opts.critical)?;
    let listener = TcpListener::bind(opts.listen)
        .await
        .map_err(|source| NodeError::Listen {
            addr: opts.listen,
            source,
        })?;
    let listen = listener.local_addr().map_err(|source| NodeError::Listen {
        addr: opts.listen,
        source,
    })?;
    let advertise = opts.advertise.clone().unwrap_or_else(|| listen.to_string());
    let metrics = Arc::new(Metrics::default());
    let (tx, rx) = mpsc::channel(EVENT_QUEUE);
    let name = opts.identity.name.clone();
    let discovery = match opts.discover {
        Some(group) => {
            // Announce on the interface peers reach us through.
            let interface = match listen.ip() {
                IpAddr::V4(ip) if !ip.is_unspecified() => ip,
                _ => Ipv4Addr::UNSPECIFIED,
            };
            let socket = discovery::open(group, interface)
                .map_err(|source| NodeError::Discovery { group, source })?;
            let me = discovery::Announcement {
                cluster: discovery::cluster_tag(&opts.identity.cluster),
                node: id,
                listen: advertise.clone(),
            };
            Some(discovery::run(
                socket,
                group,
                me,
                tx.clone(),
                metrics.clone(),
            ))
        }
        None => None,
    };
    let ctx = Arc::new(LinkCtx::new(
        Arc::new(opts.identity),
        advertise,
        bs,
        tx.clone(),
        metrics.clone(),
    ));
    // A revocation list kept from before a restart is in force at once.
    if let Some(r) = crate::revocation::load(&ctx.identity.dir, &ctx.identity.ca) {
        tracing::info!(
            number = r.number,
            certificates = r.len(),
            "revocation list in force"
        );
        ctx.revoked.send_replace(Arc::new(r));
    }
    let shape = LiveShape {
        capacity,
        policy: opts.policy,
        chances: opts.chances,
        seed: opts.seed,
        classes: opts.classes.clone(),
    };
    let machines = opts
        .algorithm
        .build_live(id, &shape)
        .map_err(|e| NodeError::Config(e.to_string()))?;
    let mut protocol_cfg = ProtocolConfig::for_node(capacity, bs);
    protocol_cfg.min_timeout_us = opts.min_timeout.as_micros() as u64;
    protocol_cfg.idle_after_us = u64::try_from(opts.idle_after.as_micros()).unwrap_or(u64::MAX);
    let clock = Clock::start();
    let mut protocol =
        NodeProtocol::new(id, opts.algorithm, machines, protocol_cfg, clock.micros());
    let private = opts.private.then(|| PrivateIds {
        salt: crate::seal::random_salt(),
        unify: opts.unify.is_some(),
        critical,
    });
    if opts.private {
        let sealer = match opts.unify {
            Some(dedup) => crate::seal::BlockSealer::unifying(bs, dedup),
            None => crate::seal::BlockSealer::new(bs),
        };
        protocol.set_private(Box::new(sealer), crate::budget::parked_notes(capacity));
    }
    protocol.set_max_pinned(pinned_blocks(opts.max_pinned, bs, opts.private));
    // A private node's slots hold sealed blocks: a nonce and a tag more.
    let sealed = match opts.private {
        true => coopcache_core::protocol::SEAL_OVERHEAD,
        false => 0,
    };
    let disk_place = DiskPlace {
        dirs: opts.disk.clone(),
        size: opts.disk_size,
        block_size: bs + sealed,
    };
    let disk = match opts.disk.is_empty() {
        true => None,
        false => {
            let now = clock.micros();
            open_disk(&disk_place, opts.disk_retry, &mut protocol, now).await?
        }
    };
    let commits = CommitProtocol::new(
        id,
        crate::clock::unix_micros(),
        CommitConfig {
            capacity: crate::budget::COMMIT_FILES,
            // A manager's answer may wait on one origin stat; past this,
            // the open asks the origin itself (always safe).
            timeout_us: COMMIT_TIMEOUT.as_micros() as u64,
            stable_us: opts
                .commit_stable
                .as_micros()
                .try_into()
                .unwrap_or(u64::MAX),
            serve_first: opts.first_block_with_open && protocol.serves_carried_reads(),
        },
    )
    .map_err(|e| NodeError::Config(e.to_string()))?;
    let listings = ListProtocol::new(
        id,
        ListConfig {
            capacity: crate::budget::LISTING_BYTES as usize,
            // A listing sent is one frame: within a block's room.
            max_listing: bs as usize,
            timeout_us: COMMIT_TIMEOUT.as_micros() as u64,
            stable_us: opts
                .commit_stable
                .as_micros()
                .try_into()
                .unwrap_or(u64::MAX),
        },
    )
    .map_err(|e| NodeError::Config(e.to_string()))?;
    let origin = Arc::new(opts.origin);
    let mut driver = Driver::new(
        DriverConfig {
            id,
            name,
            policy: opts.policy,
            block_size: bs,
            budget: opts.memory,
            max_pinned: opts.max_pinned,
        },
        crate::driver::Node::new(
            protocol,
            commits,
            coopcache_core::c2cfs::locks::LockProtocol::new(id, Default::default()),
            listings,
            crate::driver::first_block_of,
        ),
        clock,
        origin.clone(),
        metrics.clone(),
        ctx.clone(),
        tx.clone(),
    );
    if !opts.disk.is_empty() {
        driver.set_disk_store(disk, disk_place);
    }
    let attr_ttl = opts.attr_ttl.as_micros().try_into().unwrap_or(u64::MAX);
    let classes = Arc::new(opts.classes.clone());
    let streaming = Arc::new(StreamPool::new(stream_blocks(bs)));
    // One handle for the caller, one for the node's own warm server: the
    // same driver, origin, stream pool and metrics.
    let handle = |tasks| NodeHandle {
        events: tx.clone(),
        origin: origin.clone(),
        block_size: bs,
        capacity,
        streaming: streaming.clone(),
        versions: Mutex::new(VersionCache::new(attr_ttl, MAX_VERSIONS)),
        clock,
        metrics: metrics.clone(),
        listen,
        tasks,
        private: private.clone(),
        pins: Default::default(),
        classes: classes.clone(),
    };
    // The files peers ask this node to warm: as many as the core lets it
    // read at once. The server's handle owns no task, so dropping it
    // stops nothing; the caller's stops the server with the rest.
    let (serve_tx, serve_rx) = mpsc::channel(coopcache_core::warm::MAX_SERVING);
    driver.serve_warms_to(serve_tx);
    let server = crate::warm::serve(Arc::new(handle(Vec::new())), serve_rx);
    let mut tasks = vec![
        tokio::spawn(driver.run(rx)),
        tokio::spawn(accept_loop(listener, ctx.clone())),
        tokio::spawn(server),
    ];
    tasks.extend(discovery.map(tokio::spawn));
    if let Some(dir) = ctx.identity.signer.clone() {
        tasks.push(tokio::spawn(crate::revocation::watch_ca(dir, tx.clone())));
    }
    for seed in opts.join {
        let _ = tx.send(Event::Join(seed)).await;
    }
    Ok(handle(tasks))
}

impl NodeHandle {
    /// Hands the driver `ev`, or says the node stopped.
    pub(crate) async fn send_event(&self, ev: Event) -> Result<(), NodeError> {
        self.events.send(ev).await.map_err(|_| NodeError::Shutdown)
    }

    /// Block 0 of `path` at `version` (its others are `BlockId { index,
    /// ..first }`): salted with this node's secret if its origin is
    /// private (and routed by that salted id, so its route tells no one
    /// the path), and marked unifiable if the node unifies and the path is
    /// not privacy-critical.
    pub(crate) fn first_block(&self, path: &str, version: &FileVersion) -> BlockId {
        match &self.private {
            Some(p) => {
                let unifiable = p.unify && !p.critical.is_match(path);
                BlockId::new(
                    private_file_id(&p.salt, path, &version.version, unifiable),
                    0,
                )
            }
            None => classed(
                &self.classes,
                first_block(path, &version.version),
                version.size,
            ),
        }
    }

    /// Where the node accepts peers.
    pub fn listen_addr(&self) -> SocketAddr {
        self.listen
    }

    /// The node's counters.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The block size.
    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    /// Joins the cluster through `addr`.
    pub async fn join(&self, addr: String) -> Result<(), NodeError> {
        self.events
            .send(Event::Join(addr))
            .await
            .map_err(|_| NodeError::Shutdown)
    }

    /// Leaves the cluster before stopping: every member is told (they drop
    /// this node at once, as one that left, where a cut link would read as
    /// a failure) and every link ends its TLS session. Waits at most
    /// [`LEAVE_WAIT`] for the driver and then as long again for the links
    /// to write; call [`NodeHandle::shutdown`] after.
    pub async fn leave(&self) {
        let (tx, rx) = oneshot::channel();
        if self.events.send(Event::Leave(tx)).await.is_ok() {
            let _ = tokio::time::timeout(LEAVE_WAIT, rx).await;
            // The links' tasks write the goodbye on their own; there is
            // no handle to await them by, and a peer that does not read
            // must not hold the shutdown up.
            tokio::time::sleep(LEAVE_WAIT).await;
        }
    }

    /// The node's status.
    pub async fn status(&self) -> Result<Status, NodeError> {
        let (tx, rx) = oneshot::channel();
        self.events
            .send(Event::Status(tx))
            .await
            .map_err(|_| NodeError::Shutdown)?;
        rx.await.map_err(|_| NodeError::Shutdown)
    }

    /// The origin this node reads through (the mount asks it what paths
    /// are and what directories hold).
    pub fn origin(&self) -> &Arc<Origin> {
        &self.origin
    }

    /// The version of `path` (checked: it must stay inside the origin),
    /// from the version cache if the origin gave it less than
    /// `--attr-ttl` ago.
    pub async fn stat(&self, path: &str) -> Result<Arc<FileVersion>, NodeError> {
        check_path(path)?;
        if let Some(v) = self.lock_versions().get(path, self.clock.micros()) {
            return Ok(v);
        }
        self.metrics.origin_stats.inc();
        let v = Arc::new(self.origin.stat(path).await?);
        self.lock_versions()
            .insert(path, v.clone(), self.clock.micros());
        Ok(v)
    }

    /// C2Cfs `exclusive` mode (every write goes through the cluster): the
    /// version an open of `path` reads, as the file's manager knows it
    /// from the last commit, with no origin round trip; and the file's
    /// `Tcommit` (the open's `Topen`). When the manager cannot say (no
    /// entry it could fill, a membership change, no answer in time) the
    /// origin's own version, with no `Topen`: always safe, since every
    /// write reaches the origin before its commit.
    pub async fn open_exclusive(
        &self,
        path: &str,
    ) -> Result<(Option<Tcommit>, Arc<FileVersion>), NodeError> {
        check_path(path)?;
        if let Some((tcommit, version)) = self.manager_says(path, true).await {
            return Ok((Some(tcommit), Arc::new(version)));
        }
        Ok((None, self.stat_fresh(path).await?))
    }

    /// C2Cfs `exclusive` mode: what `path`'s manager says of it (its
    /// `Tcommit` and version), `None` if it cannot say. A writer's open
    /// asks this for its `Topen` only (and no block of the file).
    pub async fn ask_manager(&self, path: &str) -> Option<(Tcommit, FileVersion)> {
        self.manager_says(path, false).await
    }

    /// [`NodeHandle::ask_manager`]; for an open that `reads`, the manager
    /// serves the file's first block with its answer (`c2cfs::exclusive`).
    async fn manager_says(&self, path: &str, reads: bool) -> Option<(Tcommit, FileVersion)> {
        let (reply, answer) = oneshot::channel();
        let ev = CommitEvent::Open {
            path: Arc::from(path),
            reads,
            reply,
        };
        self.events.send(Event::Commits(ev)).await.ok()?;
        // The core answers no other path's version (c2cfs::exclusive::Version).
        let (tcommit, found) = answer.await.ok().flatten()?;
        Some((tcommit, found.version))
    }

    /// C2Cfs `exclusive` mode: `path` changed at the origin through this
    /// node (a close wrote it through, it was removed, or a file was
    /// renamed over it; `topen` is the `Tcommit` the writer's open found,
    /// `None` for the others). Returns once the file's manager recorded
    /// the origin's new version, as it asked the origin itself, or once
    /// every member was told to forget the file: an open that begins
    /// after this returns reads the new version. `None` if not recorded.
    ///
    /// The listing of `path`'s directory changed too: its manager is told
    /// at the same time, and this returns once it dropped its listing
    /// (`crate::listing`).
    pub async fn commit_exclusive(&self, path: &str, topen: Option<Tcommit>) -> Option<Committed> {
        let commit = async {
            let (reply, answer) = oneshot::channel();
            let ev = CommitEvent::Commit {
                path: Arc::from(path),
                topen,
                reply,
            };
            self.events.send(Event::Commits(ev)).await.ok()?;
            answer.await.ok().flatten()
        };
        let parent = crate::listing::parent(path);
        let (committed, _) = tokio::join!(commit, self.dir_changed(parent, false));
        committed
    }

    /// Carries out a lock call of a process of this node (the mount's
    /// `setlk`, `getlk`, `flush` and `release`) at the file's manager;
    /// dropping the future cancels a wait.
    pub async fn lock(
        &self,
        call: coopcache_core::c2cfs::locks::LockCall,
    ) -> coopcache_core::c2cfs::locks::LockResult {
        use coopcache_core::c2cfs::locks::LockError;
        let (reply, rx) = oneshot::channel();
        let ev = crate::driver::LockEvent { call, reply };
        if self.events.send(Event::Locks(ev)).await.is_err() {
            return Err(LockError::Unanswered);
        }
        rx.await.unwrap_or(Err(LockError::Unanswered))
    }

    /// `version` of `path` is what this node's writers just committed to
    /// the origin (the commit stated it after its rename): the version
    /// cache holds it from now on, as [`NodeHandle::stat_fresh`] would
    /// have found it.
    pub fn committed(&self, path: &str, version: FileVersion) -> Arc<FileVersion> {
        let version = Arc::new(version);
        let mut versions = self.lock_versions();
        versions.forget(path);
        versions.insert(path, version.clone(), self.clock.micros());
        version
    }

    /// `path` changed at the origin through this node (removed): the
    /// version cache forgets it, so the next stat asks the origin.
    pub fn forget_version(&self, path: &str) {
        self.lock_versions().forget(path);
    }

    /// The version of `path` as the origin has it now, refreshing the
    /// version cache (a writer's own commit must not be hidden from it
    /// by an entry from before).
    pub async fn stat_fresh(&self, path: &str) -> Result<Arc<FileVersion>, NodeError> {
        self.lock_versions().forget(path);
        self.stat(path).await
    }

    /// Bytes of block memory the node caches in.
    pub fn cache_bytes(&self) -> u64 {
        self.capacity as u64 * u64::from(self.block_size)
    }

    /// Reads `path` at `version` whole through the node, keeping nothing
    /// but what the node caches: a writer's node takes the version it just
    /// committed into its memory this way (as the first reader of the new
    /// version it records its digests and is then the holder its manager
    /// forwards the next readers to), as C2Cfs's writer keeps its copy.
    pub async fn take_in(
        self: &Arc<Self>,
        path: Arc<str>,
        version: Arc<FileVersion>,
    ) -> Result<(), NodeError> {
        let size = version.size;
        let mut s = std::pin::pin!(self.stream(path, version, 0..size));
        while let Some(part) = s.next().await {
            part?;
        }
        Ok(())
    }

    /// [`NodeHandle::take_in`] of a version whose bytes the caller holds
    /// whole (a writer's commit read them back from the file it renamed
    /// into place): the protocol reads it as for any first reader, and
    /// where it would read the origin these bytes answer instead, saving
    /// the origin read and its trip through a task and the blocking pool
    /// (the better part of a small file's close). Bytes that are not the
    /// version's length are refused as the origin's short read would be.
    pub async fn take_in_bytes(
        &self,
        path: Arc<str>,
        version: Arc<FileVersion>,
        bytes: Bytes,
    ) -> Result<(), NodeError> {
        if bytes.len() as u64 != version.size {
            return Err(NodeError::Range {
                path: path.to_string(),
                start: 0,
                end: bytes.len() as u64,
                size: version.size,
            });
        }
        let first = self.first_block(&path, &version);
        let bs = self.block_size as usize;
        let mut replies = Vec::new();
        // `blocks` gives each block's part as offsets within the block.
        for (index, part) in self.blocks(&(0..version.size)) {
            let at = index as usize * bs;
            let (reply, rx) = oneshot::channel();
            let ev = Event::Written {
                path: path.clone(),
                version: version.clone(),
                block: BlockId { index, ..first },
                bytes: bytes.slice(at + part.start..at + part.end),
                reply,
            };
            self.events
                .send(ev)
                .await
                .map_err(|_| NodeError::Shutdown)?;
            replies.push(rx);
        }
        for rx in replies {
            rx.await.map_err(|_| NodeError::Shutdown)??;
        }
        Ok(())
    }

    fn lock_versions(&self) -> std::sync::MutexGuard<'_, VersionCache<Arc<FileVersion>>> {
        self.versions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Block `index` of `path` at `version`, and the level that served it.
    pub async fn read_block(
        &self,
        path: &Arc<str>,
        version: &Arc<FileVersion>,
        index: u32,
    ) -> Result<(Bytes, Level), NodeError> {
        let first = self.first_block(path, version);
        self.read_block_of(path, version, BlockId { index, ..first })
            .await
    }

    /// [`NodeHandle::read_block`] with the block's id already known (the
    /// file id hashed once for a whole stream).
    async fn read_block_of(
        &self,
        path: &Arc<str>,
        version: &Arc<FileVersion>,
        block: BlockId,
    ) -> Result<(Bytes, Level), NodeError> {
        let (tx, rx) = oneshot::channel();
        let ev = Event::Read {
            path: path.clone(),
            version: version.clone(),
            block,
            reply: tx,
        };
        self.events
            .send(ev)
            .await
            .map_err(|_| NodeError::Shutdown)?;
        Ok(rx.await.map_err(|_| NodeError::Shutdown)??)
    }

    /// The blocks covering `range` of a file of `size` bytes, each with
    /// the part of it inside the range.
    fn blocks(&self, range: &Range<u64>) -> impl Iterator<Item = (u32, Range<usize>)> + use<> {
        let bs = u64::from(self.block_size);
        let (start, end) = (range.start, range.end);
        let first = start / bs;
        let last = end.div_ceil(bs);
        (first..last).map(move |i| {
            let b0 = i * bs;
            let lo = start.max(b0) - b0;
            let hi = end.min(b0 + bs) - b0;
            (i as u32, lo as usize..hi as usize)
        })
    }

    /// Streams `range` of `path` at `version` (clamped to the file),
    /// reading up to [`read_ahead`] blocks ahead, less when other streams
    /// share the node's pool (`streams.rs`). Each part counts against the
    /// stream's share until the reader drops it: a reader that kept every
    /// part would stall once it held its share, so copy out of parts or
    /// drop them as they are used.
    pub fn stream(
        self: &Arc<Self>,
        path: Arc<str>,
        version: Arc<FileVersion>,
        range: Range<u64>,
    ) -> impl Stream<Item = Result<Bytes, NodeError>> + use<> {
        let end = range.end.min(version.size);
        let start = range.start.min(end);
        let me = self.clone();
        let first = self.first_block(&path, &version);
        let ahead = read_ahead(self.block_size, self.capacity)
            .min(self.streaming.size() / 4)
            .max(1);
        let read = move |index: u32, part: Range<usize>, lease: Lease| {
            let (me, path, version) = (me.clone(), path.clone(), version.clone());
            async move {
                let block = BlockId { index, ..first };
                let (data, _) = me.read_block_of(&path, &version, block).await?;
                if data.len() < part.end {
                    return Err(NodeError::Config(format!(
                        "block {index} of {path} has {} bytes, expected at least {}",
                        data.len(),
                        part.end
                    )));
                }
                Ok(lease.hold(data.slice(part)))
            }
        };
        Blocks::new(
            self.streaming.clone(),
            ahead,
            self.blocks(&(start..end)),
            read,
        )
    }

    /// Reads `range` of `path` (the whole file if `None`) into memory.
    /// Errors if the range starts past the end of the file.
    pub async fn read(
        self: &Arc<Self>,
        path: &str,
        range: Option<Range<u64>>,
    ) -> Result<Bytes, NodeError> {
        let version = self.stat(path).await?;
        let range = range.unwrap_or(0..version.size);
        if range.start > version.size || range.start > range.end {
            return Err(NodeError::Range {
                path: path.to_string(),
                start: range.start,
                end: range.end,
                size: version.size,
            });
        }
        self.read_version(Arc::from(path), version, range).await
    }

    /// Reads `range` of `path` at `version` (clamped to the file) into
    /// memory, as [`NodeHandle::stream`] fetches it.
    pub async fn read_version(
        self: &Arc<Self>,
        path: Arc<str>,
        version: Arc<FileVersion>,
        range: Range<u64>,
    ) -> Result<Bytes, NodeError> {
        let len = range.end.min(version.size).saturating_sub(range.start);
        let mut out = BytesMut::with_capacity(usize::try_from(len).unwrap_or(0));
        let mut s = std::pin::pin!(self.stream(path, version, range));
        while let Some(part) = s.next().await {
            out.extend_from_slice(&part?);
        }
        Ok(out.freeze())
    }

    /// Stops the node: its driver, listener and links.
    pub fn shutdown(&self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Drop for NodeHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}
