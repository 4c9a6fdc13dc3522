//! One seed's run: the nodes, the network and the origin, the workload
//! and the faults, stepped on a virtual clock. Each node is the core's
//! [`Node`], the machine every `coopcache node` runs: block reads, C2Cfs
//! `exclusive` opens and commits, and locks.

mod members;
mod requests;
mod timers;

use super::byzantine::{Liar, Msg};
use super::check::Checker;
use super::net::{Event, MemberFrame, Queue, max_in_flight};
use super::origin::Origin;
use super::plan::{Mode, Plan};
use super::report::{Counts, Failure, FaultKind, Outcome, Violation};
use super::version::{self, Listed, Version};
use super::{BLOCK_SIZE, RunConfig};
use coopcache_core::c2cfs::exclusive::{Action as CommitAction, CommitConfig, CommitProtocol};
use coopcache_core::c2cfs::listings::{ListAction, ListConfig, ListProtocol};
use coopcache_core::c2cfs::locks::{LockAction, LockProtocol};
use coopcache_core::coop::{AlgorithmKind, LiveShape, NodeId};
use coopcache_core::node::{self, Node, Output};
use coopcache_core::policy::PolicyKind;
use coopcache_core::protocol::DigestSealer;
use coopcache_core::protocol::{
    Action, BlockId, Digest, NodeProtocol, PeerMsg, ProtocolConfig, ReadFailure, Verdict,
    manager_of,
};
use coopcache_core::warm::WarmAction;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::BuildHasher;
use timers::{Machine, Timers};

type Proto = Node<BlockId, Digest, Version, Listed>;

/// A node: running (its reads, commits and locks, and its membership),
/// with the incarnation its links belong to, or down.
enum Slot {
    Up {
        proto: Box<Proto>,
        members: Box<members::Members>,
        incarnation: u32,
    },
    Down {
        incarnation: u32,
    },
}

/// A seed's cluster in flight.
pub(super) struct World {
    plan: Plan,
    /// A private node's file ids (salted per incarnation, as the daemon
    /// salts them with a secret drawn at start), to the origin's.
    private_ids: std::collections::HashMap<u64, u64>,
    seed: u64,
    rng: Pcg64Mcg,
    now: u64,
    queue: Queue,
    nodes: Vec<Slot>,
    /// Partitions in force: one side of each (the rest is the other).
    cuts: BTreeMap<u64, BTreeSet<NodeId>>,
    next_cut: u64,
    /// (observer, suspect): the link between them loses everything both
    /// ways for a while, so the observer's SWIM may declare a live member
    /// down (others still reach it).
    suspected: BTreeSet<(NodeId, NodeId)>,
    /// Links up, by (dialler, dialled), with the dialled node's
    /// incarnation: membership frames travel on them.
    links: BTreeMap<(NodeId, NodeId), u32>,
    slow: BTreeSet<NodeId>,
    origin_slow: bool,
    origin: Origin,
    liars: BTreeMap<NodeId, Liar>,
    check: Checker,
    counts: Counts,
    fingerprint: u64,
    trace: Option<Vec<String>>,
    /// The workload is over: faults stopped, everything healed.
    calm: bool,
    failure: Option<Failure>,
    actions: Vec<Output<BlockId, Digest, Version, Listed>>,
    forged: Vec<(NodeId, Msg)>,
    /// `exclusive` opens and commits in flight, by request id.
    requests: requests::Requests,
    /// Blocks the callers of the node being collected read next: the
    /// first blocks of the opens just answered.
    callers: std::collections::VecDeque<BlockId>,
    /// Every node's armed deadlines, in time order.
    timers: Timers,
}

/// The protocol's bounds in the harness: small, so they are reached.
fn config(plan: &Plan) -> ProtocolConfig {
    let capacity = plan.capacity;
    let mut cfg = ProtocolConfig::for_node(capacity, BLOCK_SIZE);
    cfg.max_timeout_us = plan.peer_timeout_us();
    cfg.max_reads = 16;
    cfg.max_queued = 64;
    cfg.max_held = 16;
    cfg.max_records = 4 * capacity;
    cfg.max_directory = 4 * capacity;
    cfg.ping_every_us = plan.ping_us;
    cfg.idle_after_us = plan.idle_after_us;
    cfg
}

impl World {
    /// The cluster of `cfg`'s seed, every node up and a member.
    pub(super) fn new(cfg: &RunConfig) -> World {
        let plan = Plan::draw(cfg.seed, cfg.mode, cfg.algorithm, cfg.nodes);
        let mut rng = Pcg64Mcg::seed_from_u64(cfg.seed ^ 0x77_6f72_6c64);
        // Private nodes' files after the shared ones (drawn only when there
        // are any: other seeds draw as they did before).
        let files = plan.files + plan.private * super::plan::PRIVATE_FILES;
        let lengths: Vec<u32> = (0..files)
            .map(|_| rng.random_range(1..=plan.max_blocks))
            .collect();
        let liars = (0..plan.nodes)
            .filter(|&n| plan.is_byzantine(n))
            .map(|n| (n, Liar::default()))
            .collect();
        let mut world = World {
            check: Checker::new(&plan),
            seed: cfg.seed,
            rng,
            now: 0,
            queue: Queue::default(),
            nodes: Vec::new(),
            cuts: BTreeMap::new(),
            next_cut: 0,
            suspected: BTreeSet::new(),
            links: BTreeMap::new(),
            slow: BTreeSet::new(),
            origin_slow: false,
            origin: Origin::new(lengths),
            liars,
            counts: Counts::default(),
            fingerprint: 0xcbf2_9ce4_8422_2325,
            trace: cfg.trace.then(Vec::new),
            calm: false,
            failure: None,
            actions: Vec::new(),
            forged: Vec::new(),
            requests: Default::default(),
            callers: Default::default(),
            private_ids: Default::default(),
            timers: Timers::default(),
            plan,
        };
        for id in 0..world.plan.nodes {
            let proto = world.boot(id);
            let members = world.boot_members(id, 0);
            world.timers.touch(id);
            world.nodes.push(Slot::Up {
                proto,
                members,
                incarnation: 0,
            });
        }
        // Each node dials the others; the cluster forms as the daemon's
        // does, while the first reads run.
        for id in 0..world.plan.nodes {
            world.carry_members(id);
            world.collect(id);
        }
        world
    }

    /// A fresh protocol for node `id`, its memory empty.
    fn boot(&self, id: NodeId) -> Box<Proto> {
        let shape = LiveShape {
            capacity: self.plan.capacity,
            policy: PolicyKind::Lru,
            chances: 2,
            seed: self.seed ^ u64::from(id),
            classes: Default::default(),
        };
        let machines = self
            .plan
            .algorithm
            .build_live(id, &shape)
            .expect("the plan draws only live algorithms");
        let cfg = config(&self.plan);
        let mut reads = NodeProtocol::new(id, self.plan.algorithm, machines, cfg, self.now);
        if self.plan.is_private(id) {
            // A restart draws a new key, as the daemon does.
            let key = self.seed ^ u64::from(id) ^ self.now.rotate_left(32);
            let sealer = match self.plan.unify {
                // One dedup key for the cluster; a quarter of the files
                // privacy-critical.
                true => DigestSealer::unifying(key, self.seed, |file| file % 4 == 0),
                false => DigestSealer::new(key),
            };
            reads.set_private(Box::new(sealer), 4 * self.plan.capacity);
        }
        let commit_cfg = CommitConfig {
            capacity: 4 * self.plan.capacity,
            timeout_us: self.plan.peer_timeout_us(),
            stable_us: self.plan.detect_us,
            // As the daemon: not where reads go to a host first (Direct)
            // or where no manager knows the blocks (a private origin).
            serve_first: self.plan.algorithm != AlgorithmKind::Direct && !self.plan.is_private(id),
        };
        // A restarted node issues `Tcommit`s of a new epoch, as the daemon
        // draws one at start.
        let epoch = self.seed ^ u64::from(id) << 48 ^ self.now;
        let commits = CommitProtocol::new(id, epoch, commit_cfg).expect("capacity is at least 4");
        let locks = LockProtocol::new(id, Default::default());
        let list_cfg = ListConfig {
            timeout_us: self.plan.peer_timeout_us(),
            stable_us: self.plan.detect_us,
            ..ListConfig::default()
        };
        let listings = ListProtocol::new(id, list_cfg).expect("the default capacity");
        Box::new(Node::new(
            reads,
            commits,
            locks,
            listings,
            version::first_block,
        ))
    }

    fn proto(&mut self, id: NodeId) -> Option<&mut Proto> {
        self.timers.touch(id);
        match self.nodes.get_mut(id as usize)? {
            Slot::Up { proto, .. } => Some(proto),
            Slot::Down { .. } => None,
        }
    }

    fn incarnation(&self, id: NodeId) -> Option<u32> {
        match self.nodes.get(id as usize)? {
            Slot::Up { incarnation, .. } => Some(*incarnation),
            Slot::Down { .. } => None,
        }
    }

    /// Runs `ops` operations, then heals every fault and runs until the
    /// cluster is quiet; returns what happened.
    pub(super) fn run(mut self, ops: u64) -> (Outcome, Option<Vec<String>>) {
        let gap = self.plan.op_gap_us;
        let mut next_op = gap;
        let mut calm_at = 0;
        let settle_bound = match self.plan.mode {
            Mode::Liveness => 2 * self.plan.read_bound_us(),
            Mode::Safety => self.plan.hang_bound_us(),
        };
        while self.failure.is_none() {
            if self.counts.ops == ops && !self.calm {
                self.calm_down();
                calm_at = self.now;
            }
            if self.calm && self.is_settled() {
                self.final_checks();
                break;
            }
            if self.calm && self.now > calm_at + settle_bound {
                let what = self.waiting();
                self.fail(Violation::NeverQuiet {
                    waited_us: self.now - calm_at,
                    what,
                });
                break;
            }
            let timer = self.next_timer();
            let event = self.queue.next_at();
            let op = (!self.calm).then_some(next_op);
            let Some(at) = [timer, event, op].into_iter().flatten().min() else {
                break;
            };
            self.now = self.now.max(at);
            if op == Some(at) && timer != Some(at) && event != Some(at) {
                self.op();
                next_op = self.now + self.rng.random_range(1..=2 * gap);
            } else if event == Some(at) && timer != Some(at) {
                if let Some((_, e)) = self.queue.pop() {
                    self.event(e);
                }
            } else {
                self.timeouts();
            }
            let bound = max_in_flight(self.plan.nodes);
            if self.queue.len() > bound {
                self.fail(Violation::OverBound {
                    node: u32::MAX,
                    table: "the simulated network",
                    len: self.queue.len(),
                    bound,
                });
            }
            if let Err(v) = self.check.overdue(self.now) {
                self.fail(v);
            }
            if let Err(v) = self.overdue_request() {
                self.fail(v);
            }
            if self.counts.steps.is_multiple_of(4096) {
                for id in 0..self.plan.nodes {
                    self.check_directory(id);
                }
                self.check_timers();
            }
        }
        for slot in &self.nodes {
            if let Slot::Up { proto, .. } = slot {
                self.counts.unified += proto.reads().stats().unified_hosted;
            }
        }
        let outcome = Outcome {
            seed: self.seed,
            plan: self.plan.to_string(),
            fingerprint: self.fingerprint,
            counts: self.counts,
            failure: self.failure,
        };
        (outcome, self.trace)
    }

    /// The earliest timer any node has armed.
    fn next_timer(&mut self) -> Option<u64> {
        self.refresh_timers();
        self.timers.first()
    }

    /// Asks every node touched since the last call for its deadlines.
    fn refresh_timers(&mut self) {
        let touched = self.timers.take_touched();
        for &id in &touched {
            let (proto, members) = match self.nodes.get(id as usize) {
                Some(Slot::Up { proto, members, .. }) => {
                    (proto.poll_timeout(), members.poll_timeout())
                }
                _ => (None, None),
            };
            self.timers.set(id, Machine::Proto, proto);
            self.timers.set(id, Machine::Members, members);
        }
        self.timers.recycle(touched);
    }

    /// The timer index against the nodes themselves: a mutable access that
    /// did not mark its node would leave a deadline unseen or stale.
    fn check_timers(&mut self) {
        self.refresh_timers();
        for (id, slot) in (0..).zip(&self.nodes) {
            let asked = match slot {
                Slot::Up { proto, members, .. } => (proto.poll_timeout(), members.poll_timeout()),
                Slot::Down { .. } => (None, None),
            };
            let held = (
                self.timers.get(id, Machine::Proto),
                self.timers.get(id, Machine::Members),
            );
            assert_eq!(
                asked, held,
                "the harness's timer index holds node {id}'s deadlines stale: a mutable access did not mark it"
            );
        }
    }

    /// Fires every timer due now, in node order.
    fn timeouts(&mut self) {
        let mut from = 0;
        loop {
            self.refresh_timers();
            let now = self.now;
            let Some(id) = self.timers.due_from(Machine::Proto, from, now) else {
                break;
            };
            from = id + 1;
            let Some(p) = self.proto(id) else { continue };
            p.handle_timeout(now);
            self.note(("timeout", id, id, None));
            self.collect(id);
        }
        self.member_timeouts();
    }

    /// One workload operation: a node opens a file and reads a block of
    /// it; faults strike; liars forge.
    fn op(&mut self) {
        self.counts.ops += 1;
        self.strike();
        let up: Vec<NodeId> = (self.plan.idle_hosts..self.plan.nodes)
            .filter(|&n| self.incarnation(n).is_some())
            .collect();
        if up.is_empty() {
            return;
        }
        let node = up[self.rng.random_range(0..up.len())];
        let path = self.some_path(Some(node));
        let exclusive = self.plan.exclusive && !self.plan.is_private(node);
        match self.rng.random_range(0..8) {
            0 if exclusive => self.list(node),
            1..=4 if exclusive => self.open(node, path),
            _ => self.read(node, path),
        }
        let liars: Vec<NodeId> = self.liars.keys().copied().collect();
        for liar in liars {
            if self.incarnation(liar).is_some() && self.rng.random_bool(self.plan.lie) {
                self.forge(liar);
            }
        }
    }

    /// Node `node` reads a block of the current version of `path`.
    fn read(&mut self, node: NodeId, path: u32) {
        let block = self.block_of(path);
        let block = self.private_id(node, block);
        // Only honest nodes' reads are checked: a liar's own reads owe
        // nobody anything (its lies stall them).
        if !self.plan.is_byzantine(node) {
            self.check.started(node, block, self.now);
        }
        let now = self.now;
        if let Some(p) = self.proto(node) {
            p.handle_read(block, now);
        }
        self.note(("read", node, node, Some(block)));
        self.collect(node);
    }

    /// A block of the current version of a file, the first files read
    /// more often.
    /// `block` as node `node` names it: a private node's file ids are
    /// salted per incarnation, so a restarted node (with a new key) never
    /// asks for what it parked before, as in the daemon.
    fn private_id(&mut self, node: NodeId, block: BlockId) -> BlockId {
        if !self.plan.is_private(node) {
            return block;
        }
        let incarnation = self.incarnation(node).unwrap_or(0);
        let salt = u64::from(node) << 32 | u64::from(incarnation);
        let salt = salt.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let file = block.file ^ salt;
        self.private_ids.insert(file, block.file);
        BlockId { file, ..block }
    }

    /// A path `reader` reads (any shared one for `None`), the first ones
    /// more often.
    fn some_path(&mut self, reader: Option<NodeId>) -> u32 {
        let u: f64 = self.rng.random();
        let paths = self.plan.paths_of(reader);
        let n = paths.len() as u32;
        paths.start + ((u * u * f64::from(n)) as u32).min(n - 1)
    }

    /// A block of the current version of `path`.
    fn block_of(&mut self, path: u32) -> BlockId {
        let (file, blocks) = self.origin.open(path);
        let index = self.rng.random_range(0..blocks);
        // Every version of a path has one manager, as in the daemon.
        let route = version::route(path);
        BlockId { file, index, route }
    }

    /// Liar `liar` sends messages of its own making.
    fn forge(&mut self, liar: NodeId) {
        let path = self.some_path(None);
        let block = self.block_of(path);
        let members = match self.proto(liar) {
            Some(p) => p.reads().members().to_vec(),
            None => return,
        };
        let mut forged = std::mem::take(&mut self.forged);
        if let Some(l) = self.liars.get_mut(&liar) {
            l.forge(&mut self.rng, liar, &members, (path, block), &mut forged);
        }
        self.send_forged(liar, &mut forged);
        self.forged = forged;
        self.gossip_lie(liar);
    }

    /// Sends what liar `liar` forged (never to itself).
    fn send_forged(&mut self, liar: NodeId, forged: &mut Vec<(NodeId, Msg)>) {
        for (to, msg) in forged.drain(..) {
            if to != liar {
                self.counts.fault(FaultKind::Forgery);
                self.transmit(liar, to, msg);
            }
        }
    }

    /// Faults that strike between operations.
    fn strike(&mut self) {
        let p = self.plan.clone();
        let r = &mut self.rng;
        let (crash, cut, suspect, slow, change, slow_origin) = (
            r.random_bool(p.crash),
            r.random_bool(p.partition),
            r.random_bool(p.suspect),
            r.random_bool(p.slow),
            r.random_bool(p.change),
            r.random_bool(p.slow_origin),
        );
        if crash {
            self.crash();
        }
        if cut && (p.mode == Mode::Safety || self.cuts.is_empty()) {
            self.partition();
        }
        if suspect {
            let observer = self.rng.random_range(0..p.nodes);
            let suspect = self.rng.random_range(0..p.nodes);
            if observer != suspect && self.suspected.insert((observer, suspect)) {
                self.counts.fault(FaultKind::Suspect);
                let until = self.now + self.outage();
                self.queue.at(until, Event::Trust { observer, suspect });
            }
        }
        if slow {
            let node = self.rng.random_range(0..p.nodes);
            if self.slow.insert(node) {
                self.counts.fault(FaultKind::SlowNode);
                let until = self.now + self.outage();
                self.queue.at(until, Event::Fast { node });
            }
        }
        if change {
            let path = self.rng.random_range(0..self.origin.len());
            let blocks = self.rng.random_range(1..=p.max_blocks);
            self.counts.fault(FaultKind::Change);
            match p.exclusive && path < p.files {
                // In `exclusive` mode files change only by the cluster's
                // writes, committed at their manager.
                true => self.write(path, blocks),
                false => self.origin.change(path, blocks),
            }
        }
        if slow_origin && !self.origin_slow {
            self.origin_slow = true;
            self.counts.fault(FaultKind::SlowOrigin);
            let until = self.now + self.outage();
            self.queue.at(until, Event::OriginFast);
        }
    }

    fn outage(&mut self) -> u64 {
        let (lo, hi) = self.plan.outage_us;
        self.rng.random_range(lo..=hi)
    }

    /// An honest node crashes: its memory and its reads are lost.
    fn crash(&mut self) {
        let honest_up: Vec<NodeId> = (0..self.plan.nodes)
            .filter(|&n| !self.plan.is_byzantine(n) && self.incarnation(n).is_some())
            .collect();
        let down = self.plan.nodes as usize - self.plan.byzantine as usize - honest_up.len();
        let most_down = match self.plan.mode {
            Mode::Liveness => 1,
            Mode::Safety => honest_up.len() + down - 1,
        };
        if honest_up.len() < 2 || down >= most_down {
            return;
        }
        let node = honest_up[self.rng.random_range(0..honest_up.len())];
        let incarnation = self.incarnation(node).unwrap_or_default();
        if let Slot::Up { proto, .. } = &self.nodes[node as usize] {
            self.counts.unified += proto.reads().stats().unified_hosted;
        }
        self.timers.touch(node);
        self.nodes[node as usize] = Slot::Down { incarnation };
        self.counts.reads_lost += self.check.lost(node);
        self.requests.lost(node);
        self.counts.fault(FaultKind::Crash);
        self.note(("crash", node, node, None));
        self.links_crashed(node);
        let until = self.now + self.outage();
        self.queue.at(until, Event::Restart { node });
    }

    /// The cluster is cut in two.
    fn partition(&mut self) {
        let side: BTreeSet<NodeId> = (0..self.plan.nodes)
            .filter(|_| self.rng.random_bool(0.5))
            .collect();
        if side.is_empty() || side.len() == self.plan.nodes as usize {
            return;
        }
        self.next_cut += 1;
        let id = self.next_cut;
        self.cuts.insert(id, side);
        self.counts.fault(FaultKind::Partition);
        let until = self.now + self.outage();
        self.queue.at(until, Event::Heal { id });
    }

    /// Whether a partition, or a link losing everything, cuts `a` off
    /// from `b`.
    fn cut(&self, a: NodeId, b: NodeId) -> bool {
        self.suspected.contains(&(a, b))
            || self.suspected.contains(&(b, a))
            || self
                .cuts
                .values()
                .any(|side| side.contains(&a) != side.contains(&b))
    }

    /// The workload is over: every fault heals, crashed nodes restart,
    /// and from now on no message is lost.
    fn calm_down(&mut self) {
        self.calm = true;
        self.cuts.clear();
        self.suspected.clear();
        self.slow.clear();
        self.origin_slow = false;
        for node in 0..self.plan.nodes {
            if self.incarnation(node).is_none() {
                self.restart(node);
            }
        }
    }

    /// Whether the cluster has settled: no read waits, every node is
    /// quiet, every view agrees, and nothing but pings is in flight.
    fn is_settled(&self) -> bool {
        let all: Vec<NodeId> = (0..self.plan.nodes).collect();
        self.check.pending() == 0
            && self.requests.is_empty()
            && self.nodes.iter().all(|s| match s {
                Slot::Up { proto, .. } => proto.is_quiet() && proto.reads().members() == all,
                Slot::Down { .. } => false,
            })
    }

    /// What keeps the cluster from settling, for the report.
    fn waiting(&self) -> String {
        let mut what = vec![
            format!("{} reads pending", self.check.pending()),
            format!("{} opens and commits pending", self.requests.len()),
        ];
        for (id, slot) in self.nodes.iter().enumerate() {
            match slot {
                Slot::Up { proto, .. } if !proto.is_quiet() => {
                    let on = proto.reads().waits_on().unwrap_or_default();
                    what.push(format!("node {id} waits on {on}"));
                }
                Slot::Down { .. } => what.push(format!("node {id} down")),
                Slot::Up { .. } => {}
            }
            if let Slot::Up { members, .. } = slot
                && members.live().len() != self.nodes.len()
            {
                let linked: Vec<NodeId> = members.view().linked().collect();
                let alive: Vec<NodeId> = members.swim().alive().collect();
                what.push(format!(
                    "node {id} counts {:?} live (linked {linked:?}, swim alive {alive:?}, swim incarnation {})",
                    members.live(),
                    members.swim().identity().incarnation
                ));
            }
        }
        what.join("; ")
    }

    fn final_checks(&mut self) {
        for id in 0..self.plan.nodes {
            self.check_directory(id);
        }
    }

    fn restart(&mut self, node: NodeId) {
        let Some(Slot::Down { incarnation }) = self.nodes.get(node as usize) else {
            return;
        };
        let incarnation = incarnation + 1;
        let proto = self.boot(node);
        let members = self.boot_members(node, incarnation);
        self.timers.touch(node);
        self.nodes[node as usize] = Slot::Up {
            proto,
            members,
            incarnation,
        };
        self.note(("restart", node, node, None));
        self.carry_members(node);
        self.collect(node);
    }

    fn event(&mut self, event: Event) {
        match event {
            Event::Deliver {
                from,
                to,
                incarnation,
                msg,
            } => self.deliver(from, to, incarnation, msg),
            Event::Origin {
                node,
                incarnation,
                block,
            } => self.origin_done(node, incarnation, block),
            Event::Stat {
                node,
                incarnation,
                path,
            } => self.stat_done(node, incarnation, path),
            Event::Listed {
                node,
                incarnation,
                dir,
            } => self.origin_listed(node, incarnation, dir),
            Event::Restart { node } => self.restart(node),
            Event::Heal { id } => {
                self.cuts.remove(&id);
            }
            Event::Trust { observer, suspect } => {
                self.suspected.remove(&(observer, suspect));
            }
            Event::Fast { node } => {
                self.slow.remove(&node);
            }
            Event::OriginFast => self.origin_slow = false,
            Event::Dialled {
                from,
                incarnation,
                to,
                backoff,
            } => self.dialled(from, incarnation, to, backoff),
            Event::Reset { from, to } => self.reset(from, to),
            Event::Member {
                from,
                to,
                incarnation,
                frame,
            } => self.member_frame(from, to, incarnation, frame),
        }
    }

    fn deliver(&mut self, from: NodeId, to: NodeId, incarnation: u32, msg: Msg) {
        if self.incarnation(to) != Some(incarnation) {
            return;
        }
        if self.liars.contains_key(&from) {
            self.requests
                .delivered_from_liar(from, (to, incarnation), &msg);
        }
        if self.liars.contains_key(&to) {
            let ambush = self.rng.random_bool(self.plan.lie);
            let mut forged = std::mem::take(&mut self.forged);
            if let Some(liar) = self.liars.get_mut(&to) {
                liar.observe(from, &msg);
                if ambush {
                    liar.ambush(to, from, &msg, &mut forged);
                }
            }
            self.send_forged(to, &mut forged);
            self.forged = forged;
        }
        self.taint(from, to, &msg);
        self.counts.messages += 1;
        self.note(match &msg {
            node::Msg::Read(m) => (m.name(), from, to, m.block()),
            node::Msg::Commit(_) => ("commit", from, to, None),
            node::Msg::Lock(_) => ("lock", from, to, None),
            node::Msg::Warm(_) => ("warm", from, to, None),
            node::Msg::List(_) => ("list", from, to, None),
        });
        if let Some(trace) = &mut self.trace {
            trace.push(format!("{:>12}   {msg:?}", self.now));
        }
        let now = self.now;
        if let Some(p) = self.proto(to) {
            p.handle_message(from, msg, now);
        }
        self.collect(to);
    }

    /// Marks a block whose wrong bytes the trust model allows because an
    /// honest manager granted a liar its first read: when the grant is
    /// sent, as the manager then takes the liar's record whether or not
    /// the grant arrives (a liar need not wait for it to forge one).
    fn taint_grant(&mut self, to: NodeId, msg: &Msg) {
        if let node::Msg::Read(PeerMsg::FetchOrigin {
            block,
            record: true,
        }) = *msg
            && self.liars.contains_key(&to)
        {
            self.check.taint(block);
        }
    }

    /// Marks a block whose wrong bytes the trust model allows because a
    /// liar told an honest node its digest as the block's manager.
    fn taint(&mut self, from: NodeId, to: NodeId, msg: &Msg) {
        let block = match *msg {
            node::Msg::Read(PeerMsg::Expect { block, .. } | PeerMsg::HashIs { block, .. })
                if self.liars.contains_key(&from) =>
            {
                block
            }
            _ => return,
        };
        let manager = match self.nodes.get(to as usize) {
            Some(Slot::Up { proto, .. }) => {
                manager_of(u64::from(block.route), proto.reads().members())
            }
            _ => None,
        };
        if manager == Some(from) {
            self.check.taint(block);
        }
    }

    fn origin_done(&mut self, node: NodeId, incarnation: u32, block: BlockId) {
        if self.incarnation(node) != Some(incarnation) {
            return;
        }
        let failed = !self.calm && self.rng.random_bool(self.plan.origin_error);
        if failed {
            self.counts.fault(FaultKind::OriginError);
        }
        let origin_file = self.private_ids.get(&block.file).copied();
        let result = match self.origin.read(block, origin_file) {
            Some(d) if !failed => Ok(d),
            _ => {
                self.check.origin_failed(node, block);
                Err(())
            }
        };
        self.note(("origin", node, node, Some(block)));
        let now = self.now;
        if let Some(p) = self.proto(node) {
            p.handle_origin_done(block, result, now);
        }
        self.collect(node);
    }

    /// Carries out what node `id` asked for (and what that makes it ask
    /// for), then checks its bounds.
    fn collect(&mut self, id: NodeId) {
        self.counts.steps += 1;
        let mut actions = std::mem::take(&mut self.actions);
        loop {
            if let Some(p) = self.proto(id) {
                while let Some(a) = p.poll() {
                    actions.push(a);
                }
            }
            if actions.is_empty() {
                // The callers of answered opens read now, one at a time,
                // each read's immediate completion (a local hit) carried
                // out before the next starts, as a caller reads after its
                // answer.
                match self.callers.pop_front() {
                    Some(block) => self.caller_reads(id, block),
                    None => break,
                }
                continue;
            }
            for output in actions.drain(..) {
                match output {
                    Output::Read(action) => self.carry_read(id, action),
                    Output::Commit(action) => self.carry_commit(id, action),
                    Output::Lock(LockAction::Send { to, msg }) => {
                        self.transmit(id, to, node::Msg::Lock(msg));
                    }
                    Output::Lock(LockAction::Violation { .. }) => self.counts.refused += 1,
                    Output::Lock(_) => {}
                    Output::Warm(action) => self.carry_warm(id, action),
                    Output::List(action) => self.carry_list(id, action),
                    Output::FirstRead { block, .. } => self.first_read(id, block),
                }
            }
        }
        self.actions = actions;
        if let Some(Slot::Up { proto, .. }) = self.nodes.get(id as usize)
            && let Err(v) = self.check.bounds(id, proto.reads())
        {
            self.fail(v);
        }
    }

    /// Carries out warm-up placement's actions: the harness starts no
    /// warm-up, so these are a forged `Warm`'s answers and refusals; a
    /// file asked of a node here is answered as not read (it reads no
    /// whole files).
    fn carry_warm(&mut self, id: NodeId, action: WarmAction) {
        match action {
            WarmAction::Send { to, msg } => self.transmit(id, to, node::Msg::Warm(msg)),
            WarmAction::Violation { .. } => self.counts.refused += 1,
            WarmAction::Serve { from, nonce, .. } => {
                let now = self.now;
                if let Some(p) = self.proto(id) {
                    p.handle_warm_served(from, nonce, None, now);
                }
                // Its answer is polled by `collect`'s loop.
            }
            WarmAction::ReadHere { .. } | WarmAction::Placed { .. } => {}
        }
    }

    /// Carries out the listing machine's actions: origin listings on the
    /// origin's clock, answers to the workload's listings and changes
    /// (`world/requests.rs`).
    fn carry_list(&mut self, id: NodeId, action: ListAction<Listed>) {
        match action {
            ListAction::Send { to, msg } => self.transmit(id, to, node::Msg::List(msg)),
            ListAction::Violation { .. } => self.counts.refused += 1,
            ListAction::List { dir } => {
                self.at_origin(id, |node, incarnation| Event::Listed {
                    node,
                    incarnation,
                    dir,
                });
            }
            ListAction::Listed { req, listing } => self.listed(id, req, listing),
            ListAction::Noted { req, assured } => self.noted(id, req, assured),
        }
    }

    /// Carries out one of the block reads' actions.
    fn carry_read(&mut self, id: NodeId, action: Action<BlockId, Digest>) {
        match action {
            Action::Send { to, msg } => {
                let mut msg = node::Msg::Read(msg);
                self.taint_grant(to, &msg);
                self.send_as(id, &mut msg);
                self.transmit(id, to, msg);
            }
            Action::ReadOrigin { block } => self.at_origin(id, |node, incarnation| Event::Origin {
                node,
                incarnation,
                block,
            }),
            // The harness's nodes keep no disk tier (never `set_disk`),
            // so their protocol asks for none of these.
            Action::ReadDisk { .. } | Action::WriteDisk { .. } | Action::ReopenDisk => {}
            Action::Complete { block, result } => self.complete(id, block, result),
            Action::Violation { .. } => self.counts.refused += 1,
            Action::IntegrityFailure {
                block,
                sender,
                manager,
                recorder,
                verdict,
                ..
            } => self.check_blame(id, block, verdict, [sender, manager, recorder]),
        }
    }

    /// Carries out one of the commit machine's actions.
    fn carry_commit(&mut self, id: NodeId, action: CommitAction<Version>) {
        match action {
            CommitAction::Send { to, msg } => {
                let mut msg = node::Msg::Commit(msg);
                let incarnation = self.incarnation(id).unwrap_or_default();
                self.requests.sent((id, incarnation), to, &msg);
                self.send_as(id, &mut msg);
                self.transmit(id, to, msg);
            }
            CommitAction::Stat { path } => match version::number(&path) {
                Some(path) => self.at_origin(id, |node, incarnation| Event::Stat {
                    node,
                    incarnation,
                    path,
                }),
                None => self.fail(Violation::Internal {
                    node: id,
                    what: "stats of paths nobody opened",
                    count: 1,
                }),
            },
            CommitAction::Opened { req, answer } => self.opened(id, req, answer),
            CommitAction::Committed { req, answer } => self.committed(id, req, answer),
            CommitAction::Violation { .. } => self.counts.refused += 1,
            // `Node` carries these out itself.
            CommitAction::ServeFirst { .. }
            | CommitAction::AwaitFirst { .. }
            | CommitAction::ReadFirst { .. } => self.fail(Violation::Internal {
                node: id,
                what: "first-block actions left to the driver",
                count: 1,
            }),
        }
    }

    /// `msg` as node `id` sends it: a liar may lie in it.
    fn send_as(&mut self, id: NodeId, msg: &mut Msg) {
        if let Some(liar) = self.liars.get_mut(&id)
            && self.rng.random_bool(self.plan.lie)
            && liar.tamper(&mut self.rng, msg)
        {
            self.counts.fault(FaultKind::Lie);
        }
    }

    /// Node `id` sends the origin a request, answered by `done(id, its
    /// incarnation)` when the origin's time for it has passed.
    fn at_origin(&mut self, id: NodeId, done: impl FnOnce(NodeId, u32) -> Event) {
        let (lo, hi) = self.plan.origin_us;
        let mut took = self.rng.random_range(lo..=hi);
        if self.origin_slow || self.slow.contains(&id) {
            took *= 10;
        }
        let incarnation = self.incarnation(id).unwrap_or_default();
        self.queue.at(self.now + took, done(id, incarnation));
    }

    /// Puts `msg` from `from` on the wire to `to`, through the faults.
    fn transmit(&mut self, from: NodeId, to: NodeId, msg: Msg) {
        let Some(incarnation) = self.incarnation(to) else {
            return;
        };
        if self.cut(from, to) {
            return;
        }
        let stormy = !self.calm;
        if stormy && self.rng.random_bool(self.plan.drop) {
            return self.counts.fault(FaultKind::Drop);
        }
        let (lo, hi) = self.plan.delay_us;
        let mut delay = self.rng.random_range(lo..=hi);
        if self.slow.contains(&from) || self.slow.contains(&to) {
            delay *= 10;
        }
        let reorder = stormy && self.rng.random_bool(self.plan.reorder);
        if reorder {
            self.counts.fault(FaultKind::Reorder);
            delay += self.rng.random_range(0..=5 * hi);
        }
        let twice = stormy && self.rng.random_bool(self.plan.duplicate);
        let event = |msg| Event::Deliver {
            from,
            to,
            incarnation,
            msg,
        };
        if twice {
            self.counts.fault(FaultKind::Duplicate);
            let again = self.now + delay + self.rng.random_range(0..=hi);
            self.queue.send((from, to), again, true, event(msg.clone()));
        }
        self.queue
            .send((from, to), self.now + delay, reorder, event(msg));
    }

    /// Node `id` finished every read of `block` it had in flight.
    fn complete(&mut self, id: NodeId, block: BlockId, result: Result<Served, ReadFailure>) {
        if self.plan.is_byzantine(id) {
            return;
        }
        // A private node's blocks hold its origin file's contents.
        let file = self.private_ids.get(&block.file).copied();
        let want = super::origin::content(BlockId {
            file: file.unwrap_or(block.file),
            ..block
        });
        let outcome = self.check.completed(id, block, want, self.now, &result);
        match outcome {
            Ok(tally) => {
                self.counts.reads_ok += tally.ok;
                self.counts.reads_failed += tally.failed;
                self.counts.wrong_tolerated += tally.tolerated;
            }
            Err(v) => self.fail(v),
        }
    }

    /// An honest node's verdict must name a liar, unless a liar vouched
    /// for the block's bytes (then an honest holder may hold bad ones).
    fn check_blame(&mut self, id: NodeId, block: BlockId, verdict: Verdict, who: [NodeId; 3]) {
        let [sender, manager, recorder] = who;
        let liar = |n: NodeId| self.plan.is_byzantine(n);
        let named_a_liar = match verdict {
            Verdict::Sender => liar(sender),
            Verdict::Record => liar(manager) || liar(recorder),
            Verdict::Unsettled => who.into_iter().any(liar),
        };
        if !named_a_liar && !self.plan.is_byzantine(id) && !self.check.is_tainted(block) {
            self.fail(Violation::FalseBlame {
                node: id,
                block,
                verdict,
                sender,
                manager,
                recorder,
            });
        }
    }

    fn check_directory(&mut self, id: NodeId) {
        if let Some(Slot::Up { proto, .. }) = self.nodes.get(id as usize)
            && let Err(v) = Checker::directory(id, proto.reads())
        {
            self.fail(v);
        }
    }

    fn fail(&mut self, violation: Violation) {
        if self.failure.is_none() {
            self.failure = Some(Failure {
                step: self.counts.steps,
                time_us: self.now,
                violation,
            });
        }
    }

    /// Adds a line to the trace, if kept.
    fn trace_line(&mut self, line: impl FnOnce() -> String) {
        if let Some(trace) = &mut self.trace {
            trace.push(format!("{:>12}   {}", self.now, line()));
        }
    }

    /// Folds an event into the fingerprint, and the trace if kept.
    fn note(&mut self, (what, from, to, block): (&'static str, NodeId, NodeId, Option<BlockId>)) {
        let h =
            foldhash::fast::FixedState::with_seed(7).hash_one((self.now, what, from, to, block));
        self.fingerprint = (self.fingerprint ^ h).wrapping_mul(0x0100_0000_01b3);
        if let Some(trace) = &mut self.trace {
            let block = block.map_or(String::new(), |b| format!(" {:016x}/{}", b.file, b.index));
            trace.push(format!("{:>12} {from}->{to} {what}{block}", self.now));
        }
    }
}

type Served = coopcache_core::protocol::Served<Digest>;
