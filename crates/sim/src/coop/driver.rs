//! Driving a cluster's state machines with a trace, in virtual time.

use super::hardware::{Busy, Hardware, Resources};
use super::profile::CostProfile;
use crate::trace::{Op, Request};
use coopcache_core::coop::{
    Addr, Cluster, Envelope, Level, ManagerMachine, Msg, NodeMachine, Outbox, load_units,
};

/// The manager's load in the paper's units (Figure 6), by what caused it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Load {
    /// Reads served from the origin: request, disk transfer, data reply.
    pub origin: u64,
    /// Reads forwarded to another node: request and forward.
    pub remote: u64,
    /// Reads served from the manager's memory: request and data reply.
    pub manager_memory: u64,
    /// Everything else: singlet queries, invalidations, placements.
    pub other: u64,
}

impl Load {
    /// All units.
    pub fn total(&self) -> u64 {
        self.origin + self.remote + self.manager_memory + self.other
    }
}

/// One node's reads.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClientStats {
    /// Reads measured.
    pub reads: u64,
    /// Their total read time, microseconds.
    pub time_us: f64,
}

impl ClientStats {
    /// Average read time, microseconds (0 without reads).
    pub fn avg_us(&self) -> f64 {
        if self.reads == 0 {
            0.0
        } else {
            self.time_us / self.reads as f64
        }
    }
}

/// What a simulated cluster measured after the warm-up.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// Reads measured.
    pub reads: u64,
    /// Writes measured.
    pub writes: u64,
    /// Reads served at each [`Level`] (indexed by [`Level::index`]).
    pub by_level: [u64; Level::ALL.len()],
    /// Read time spent at each level, microseconds.
    pub time_by_level_us: [f64; Level::ALL.len()],
    /// Network messages on the measured reads' paths.
    pub hops: u64,
    /// Manager load.
    pub load: Load,
    /// Per node.
    pub clients: Vec<ClientStats>,
    /// Messages delivered, warm-up included (for the throughput figures).
    pub messages: u64,
    /// Requests replayed, warm-up included.
    pub requests: u64,
    /// What the disks and links did, if a [`Hardware`] was given.
    pub busy: Option<Busy>,
}

impl Stats {
    /// Total read time, microseconds.
    pub fn time_us(&self) -> f64 {
        self.time_by_level_us.iter().sum()
    }

    /// Average read time, microseconds.
    pub fn avg_read_us(&self) -> f64 {
        if self.reads == 0 {
            0.0
        } else {
            self.time_us() / self.reads as f64
        }
    }

    /// Fraction of reads served at `level`.
    pub fn fraction(&self, level: Level) -> f64 {
        if self.reads == 0 {
            0.0
        } else {
            self.by_level[level.index()] as f64 / self.reads as f64
        }
    }

    /// Fraction of reads that missed the local cache.
    pub fn local_miss_rate(&self) -> f64 {
        1.0 - self.fraction(Level::Local)
    }
}

/// A request named a node the cluster does not have.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "request {request} comes from client {client}, but the cluster has {nodes} nodes (set the number of clients)"
)]
pub struct ClientOutOfRange {
    /// 1-based request number.
    pub request: u64,
    /// The client.
    pub client: u32,
    /// Nodes in the cluster.
    pub nodes: usize,
}

/// A cluster, the messages in flight between its machines, and what it has
/// measured. Each request runs to quiescence (every message it causes is
/// delivered, in the order sent) before the next starts: the paper's
/// model, one outstanding request per client and no queueing.
pub struct Simulation<N, M> {
    cluster: Cluster<N, M>,
    outbox: Outbox<u64, ()>,
    profile: CostProfile,
    warmup: u64,
    stats: Stats,
    resources: Option<Resources>,
}

impl<N: NodeMachine<u64, ()>, M: ManagerMachine<u64, ()>> Simulation<N, M> {
    /// Simulates `cluster` under `profile`, excluding the first `warmup`
    /// requests from every figure.
    pub fn new(cluster: Cluster<N, M>, profile: CostProfile, warmup: u64) -> Self {
        let clients = vec![ClientStats::default(); cluster.nodes.len()];
        Simulation {
            cluster,
            outbox: Outbox::default(),
            profile,
            warmup,
            stats: Stats {
                clients,
                ..Stats::default()
            },
            resources: None,
        }
    }

    /// Also accounts the busy time of the disks and links of `hw`, moving
    /// blocks of `block_bytes`, for throughput.
    pub fn with_hardware(mut self, hw: Hardware, block_bytes: u64) -> Self {
        let nodes = self.cluster.nodes.len();
        self.resources = Some(Resources::new(hw, nodes, block_bytes));
        self
    }

    /// The cluster, for inspection between requests.
    pub fn cluster(&self) -> &Cluster<N, M> {
        &self.cluster
    }

    /// What was measured so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Consumes the simulation, returning its figures.
    pub fn into_stats(mut self) -> Stats {
        self.stats.busy = self.resources.map(Resources::into_busy);
        self.stats
    }

    /// Runs one request to quiescence. Returns the read's level and hops if
    /// it was a read.
    pub fn request(&mut self, r: &Request) -> Result<Option<(Level, u8)>, ClientOutOfRange> {
        let now = self.stats.requests;
        self.stats.requests += 1;
        let nodes = self.cluster.nodes.len();
        let Some(node) = self.cluster.nodes.get_mut(r.client as usize) else {
            return Err(ClientOutOfRange {
                request: now + 1,
                client: r.client,
                nodes,
            });
        };
        match r.op {
            Op::Read => node.read(r.id, now, &mut self.outbox),
            // A cluster has no deletes: the object's other copies are
            // invalidated, as for a write.
            Op::Write | Op::Delete => node.write(r.id, (), now, &mut self.outbox),
        }
        let read_load = self.deliver_all(now);
        let measured = now >= self.warmup;
        if measured && r.op != Op::Read {
            self.stats.writes += 1;
        }
        let mut outcome = None;
        for done in self.outbox.drain_done() {
            outcome = Some((done.level, done.hops));
            if !measured {
                continue;
            }
            let time = self.profile.read_time_us(done.level, done.hops);
            if let Some(res) = &mut self.resources {
                res.served(u64::from(r.size));
            }
            let s = &mut self.stats;
            s.reads += 1;
            s.by_level[done.level.index()] += 1;
            s.time_by_level_us[done.level.index()] += time;
            s.hops += u64::from(done.hops);
            let client = &mut s.clients[done.node as usize];
            client.reads += 1;
            client.time_us += time;
            match done.level {
                // No simulated node keeps a disk tier.
                Level::Local | Level::LocalDisk => {}
                Level::ManagerMemory => s.load.manager_memory += read_load,
                Level::RemoteNode => s.load.remote += read_load,
                Level::Origin => s.load.origin += read_load,
            }
        }
        Ok(outcome)
    }

    /// Delivers messages until none is left; returns the manager load of
    /// the read path (the rest is booked as other load).
    fn deliver_all(&mut self, now: u64) -> u64 {
        let measured = now >= self.warmup;
        let mut read_load = 0;
        while let Some(Envelope { from, to, msg }) = self.outbox.next_message() {
            self.stats.messages += 1;
            if let (true, Some(res)) = (measured, &mut self.resources) {
                account(res, from, to, &msg);
            }
            if measured && (from == Addr::Manager || to == Addr::Manager) {
                let units = load_units(&msg);
                if on_read_path(&msg) {
                    read_load += units;
                } else {
                    self.stats.load.other += units;
                }
            }
            match to {
                Addr::Node(n) => {
                    if let Some(node) = self.cluster.nodes.get_mut(n as usize) {
                        node.handle(from, msg, now, &mut self.outbox);
                    }
                }
                Addr::Manager => self
                    .cluster
                    .manager
                    .handle(from, msg, now, &mut self.outbox),
                Addr::Origin => self.origin(from, msg),
            }
        }
        read_load
    }

    /// The simulated origin answers every fetch at once, to whoever asked
    /// (its time is charged by the cost profile), and absorbs writes.
    fn origin(&mut self, from: Addr, msg: Msg<u64, ()>) {
        if let Msg::Fetch {
            block,
            reader,
            hops,
        } = msg
        {
            let reply = Msg::Fetched {
                block,
                data: (),
                reader,
                hops,
            };
            self.outbox.send(Addr::Origin, from, reply);
        }
    }
}

/// Books a message's use of the disks and links.
fn account(res: &mut Resources, from: Addr, to: Addr, msg: &Msg<u64, ()>) {
    match *msg {
        Msg::Fetch { block, .. } | Msg::Store { block, .. } => res.disk_access(from, block),
        // The origin's reply is local to the machine that read the disk;
        // directory updates ride on the node's next message (as in the
        // server-load units).
        Msg::Fetched { .. }
        | Msg::Dropped { .. }
        | Msg::Cached { .. }
        | Msg::Moved { .. }
        | Msg::Weight { .. } => {}
        Msg::Data { .. }
        | Msg::Recirculate { .. }
        | Msg::Place { .. }
        | Msg::Discard { .. }
        | Msg::Write { .. } => res.message(from, to, true),
        _ => res.message(from, to, false),
    }
}

/// Whether a message belongs to the read path (its load is booked under the
/// level that served the read).
fn on_read_path<K, D>(msg: &Msg<K, D>) -> bool {
    matches!(
        msg,
        Msg::Read { .. }
            | Msg::Forward { .. }
            | Msg::Data { .. }
            | Msg::NotHere { .. }
            | Msg::Fetch { .. }
            | Msg::Fetched { .. }
    )
}
