//! Membership under faults and a liar, seeded: 3-6 nodes, each the
//! [`Membership`] the daemon runs (its view joined to SWIM), over a
//! simulated network with links that come up, hang in partitions and reset
//! when a peer crashes, on a simulated clock. One member may lie in its
//! gossip without pause: it says honest members are suspect or down, with
//! incarnations they can never refute, and speaks about the receiver
//! itself. Checked:
//!
//! - while the network is calm, no honest node ever drops an honest member
//!   (what one member says about another is never a verdict);
//! - after crashes, restarts (clean ones too: `Leaving`, then a new
//!   incarnation at once) and partitions heal, every honest node counts
//!   every node as live again within a bound;
//! - the view's tables stay within their bounds.

use super::swim::lies::{self, Lie};
use super::swim::tests::id;
use super::swim::{Swim, SwimId};
use super::{Dropped, MemberAction, MemberNote, Membership, View};
use crate::coop::NodeId;
use std::collections::{BTreeMap, BTreeSet};

/// Simulated time per step, in microseconds.
const STEP: u64 = 10_000;
const SECOND: u64 = 1_000_000;
const MAX_LINKS: usize = 16;
const MAX_DOWN: usize = 16;
/// A link task's first wait before dialling again, and its longest
/// (crates/node/src/link.rs).
const FIRST_BACKOFF: u64 = 100_000;
const MAX_BACKOFF: u64 = 2 * SECOND;

/// splitmix64: the seed's one source of randomness.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

/// What travels between nodes.
enum Frame {
    Gossip(Vec<u8>),
    Members(Vec<(NodeId, String)>),
    Leaving,
}

enum Event {
    /// `from`'s link task to `to` connects (up, or refused: it tries
    /// again after `backoff`, as the daemon's does, until its membership
    /// drops the address).
    Dialled {
        from: NodeId,
        to: NodeId,
        backoff: u64,
    },
    /// `from`'s link to `to` was reset (`to` crashed).
    Reset { from: NodeId, to: NodeId },
    Deliver {
        from: NodeId,
        to: NodeId,
        frame: Frame,
    },
}

fn addr(n: NodeId) -> String {
    id(n).listen
}

fn node_of(addr: &str) -> NodeId {
    let host = addr.split(':').next().unwrap_or_default();
    host.rsplit('.')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap()
}

struct Net {
    rng: Rng,
    now: u64,
    nodes: BTreeMap<NodeId, Option<Membership<(), ()>>>,
    liar: Option<NodeId>,
    /// Restarts so far, for new incarnations.
    restarts: u64,
    /// Partitions in force: one side each.
    cuts: Vec<BTreeSet<NodeId>>,
    /// Dials whose links are up: (from, to).
    links: BTreeSet<(NodeId, NodeId)>,
    events: BTreeMap<(u64, u64), Event>,
    seq: u64,
    drop: f64,
    /// Honest members an honest node dropped: (observer, member, when).
    drops: Vec<(NodeId, NodeId, u64)>,
    counts: Counts,
}

/// What the seeds did, so a test can see they did it.
#[derive(Debug, Default)]
struct Counts {
    lies: u64,
    /// Updates about other members SWIM's screen dropped.
    screened: u64,
    crashes: u64,
    /// Nodes stopped cleanly (`Leaving`) and started again at once.
    clean_restarts: u64,
    partitions: u64,
    /// Honest members dropped by honest nodes in storms.
    storm_drops: u64,
}

impl Net {
    fn new(seed: u64) -> Net {
        let mut rng = Rng(seed);
        let n = 3 + rng.below(4) as NodeId;
        let liar = rng.chance(0.7).then_some(n);
        let mut net = Net {
            rng,
            now: SECOND,
            nodes: BTreeMap::new(),
            liar,
            restarts: 0,
            cuts: Vec::new(),
            links: BTreeSet::new(),
            events: BTreeMap::new(),
            seq: 0,
            drop: 0.0,
            drops: Vec::new(),
            counts: Counts::default(),
        };
        for node in 1..=n {
            net.boot(node, 1);
        }
        net
    }

    fn boot(&mut self, node: NodeId, incarnation: u64) {
        let me = SwimId {
            incarnation,
            ..id(node)
        };
        let swim = Swim::new(me, self.rng.next());
        let view = View::new(node, addr(node), MAX_LINKS, MAX_DOWN);
        let mut m = Membership::new(view, swim);
        if node != 1 {
            m.handle_join(addr(1));
        }
        self.nodes.insert(node, Some(m));
        self.carry(node);
    }

    fn is_honest(&self, n: NodeId) -> bool {
        Some(n) != self.liar
    }

    fn up(&self, n: NodeId) -> bool {
        matches!(self.nodes.get(&n), Some(Some(_)))
    }

    fn cut(&self, a: NodeId, b: NodeId) -> bool {
        self.cuts.iter().any(|s| s.contains(&a) != s.contains(&b))
    }

    fn at(&mut self, delay: u64, e: Event) {
        self.seq += 1;
        self.events.insert((self.now + delay, self.seq), e);
    }

    fn delay(&mut self) -> u64 {
        100 + self.rng.below(2_000)
    }

    /// Sends `frame` on `from`'s link to `to`, through the faults.
    fn send(&mut self, from: NodeId, to: NodeId, frame: Frame) {
        if self.links.contains(&(from, to)) && !self.cut(from, to) && !self.rng.chance(self.drop) {
            let d = self.delay();
            self.at(d, Event::Deliver { from, to, frame });
        }
    }

    /// Carries out what `node`'s membership decided.
    fn carry(&mut self, node: NodeId) {
        loop {
            let Some(Some(m)) = self.nodes.get_mut(&node) else {
                return;
            };
            let Some(action) = m.poll() else { return };
            match action {
                MemberAction::Dial { addr, hinted } => {
                    m.dialled(addr.clone(), (), hinted);
                    let to = node_of(&addr);
                    let d = self.delay();
                    let backoff = FIRST_BACKOFF;
                    self.at(
                        d,
                        Event::Dialled {
                            from: node,
                            to,
                            backoff,
                        },
                    );
                }
                MemberAction::Gossip { to, data } => {
                    self.send(node, to, Frame::Gossip(data.to_vec()))
                }
                MemberAction::Welcome { id } => {
                    let list = m.advertised();
                    self.send(node, id, Frame::Members(list));
                }
                MemberAction::Dropped { id, why, .. } => {
                    if why == Dropped::Leaving {
                        self.send(node, id, Frame::Leaving);
                    }
                    self.links.remove(&(node, id));
                    if self.is_honest(node) && self.is_honest(id) {
                        self.drops.push((node, id, self.now));
                    }
                }
                MemberAction::Note(MemberNote::Screened { updates }) => {
                    self.counts.screened += updates as u64;
                }
                MemberAction::Changed | MemberAction::Note(_) => {}
                // No revocation lists here: none is ever in force.
                MemberAction::PassRevocation { .. } => {}
            }
            let (links, down) = self.nodes[&node]
                .as_ref()
                .map_or((0, 0), |m| m.view().sizes());
            assert!(
                links <= MAX_LINKS && down <= MAX_DOWN,
                "node {node}: {links} links, {down} down"
            );
        }
    }

    fn event(&mut self, e: Event) {
        let now = self.now;
        match e {
            Event::Dialled { from, to, backoff } => {
                let ok = self.up(to) && !self.cut(from, to);
                let Some(Some(m)) = self.nodes.get_mut(&from) else {
                    return;
                };
                if !m.view().is_dialled(&addr(to)) {
                    // Dropped meanwhile: the task ended.
                    return;
                }
                match ok {
                    true => {
                        self.links.insert((from, to));
                        m.handle_link_up(&addr(to), to, addr(to), |_| (), now);
                    }
                    false => m.handle_link_down(&addr(to), None),
                }
                let retry = !ok && m.view().is_dialled(&addr(to));
                self.carry(from);
                if retry {
                    let next = (2 * backoff).min(MAX_BACKOFF);
                    self.at(
                        backoff,
                        Event::Dialled {
                            from,
                            to,
                            backoff: next,
                        },
                    );
                }
            }
            Event::Reset { from, to } => {
                if self.links.remove(&(from, to))
                    && let Some(Some(m)) = self.nodes.get_mut(&from)
                {
                    m.handle_link_down(&addr(to), Some(to));
                    let retry = m.view().is_dialled(&addr(to));
                    self.carry(from);
                    if retry {
                        let backoff = 2 * FIRST_BACKOFF;
                        self.at(FIRST_BACKOFF, Event::Dialled { from, to, backoff });
                    }
                }
            }
            Event::Deliver { from, to, frame } => {
                let Some(Some(m)) = self.nodes.get_mut(&to) else {
                    return;
                };
                match frame {
                    Frame::Gossip(data) => m.handle_gossip(from, &data, now),
                    Frame::Members(list) => m.handle_members(list),
                    Frame::Leaving => m.handle_leaving(from),
                }
                self.carry(to);
            }
        }
    }

    /// The liar's gossip: every honest member suspect or down, with
    /// incarnations no one can refute, and the receiver itself suspect.
    fn lie(&mut self) {
        let Some(liar) = self.liar.filter(|&l| self.up(l)) else {
            return;
        };
        let honest: Vec<NodeId> = self.nodes.keys().copied().filter(|&n| n != liar).collect();
        let victim = honest[self.rng.below(honest.len() as u64) as usize];
        let to = honest[self.rng.below(honest.len() as u64) as usize];
        let lie = match self.rng.below(2) {
            0 => Lie::Down,
            _ => Lie::Suspect,
        };
        self.counts.lies += 1;
        self.send(
            liar,
            to,
            Frame::Gossip(lies::about(&id(liar), &id(to), &id(victim), lie)),
        );
    }

    /// Runs for `us` microseconds; faults strike at `storm` rates.
    fn run(&mut self, us: u64, storm: bool) {
        let end = self.now + us;
        while self.now < end {
            self.now += STEP;
            while let Some(entry) = self.events.first_entry() {
                if entry.key().0 > self.now {
                    break;
                }
                let e = entry.remove();
                self.event(e);
            }
            let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
            for n in ids {
                let now = self.now;
                if let Some(Some(m)) = self.nodes.get_mut(&n)
                    && m.poll_timeout().is_some_and(|t| t <= now)
                {
                    m.handle_timeout(now);
                    self.carry(n);
                }
            }
            if self.rng.chance(0.05) {
                self.lie();
            }
            if storm {
                self.strike();
            }
        }
    }

    fn strike(&mut self) {
        let nodes: Vec<NodeId> = self.nodes.keys().copied().collect();
        let pick = nodes[self.rng.below(nodes.len() as u64) as usize];
        if self.rng.chance(0.002) && self.is_honest(pick) && self.up(pick) {
            // A crash: the peers' links to it reset a little later.
            self.counts.crashes += 1;
            self.nodes.insert(pick, None);
            self.links.retain(|&(a, _)| a != pick);
            for &n in &nodes {
                let d = self.delay();
                self.at(d, Event::Reset { from: n, to: pick });
            }
        } else if self.rng.chance(0.002) && self.is_honest(pick) && self.up(pick) && pick != 1 {
            // A clean restart (a service manager's, an upgrade): the node
            // says it is leaving and comes back at once as a new
            // incarnation, before the others' SWIM has missed the old one.
            // Node 1, everyone's seed, has none of its own to come back
            // through.
            self.counts.clean_restarts += 1;
            if let Some(Some(m)) = self.nodes.get_mut(&pick) {
                m.handle_leave();
            }
            self.carry(pick);
            self.nodes.insert(pick, None);
            self.links.retain(|&(a, _)| a != pick);
            self.restarts += 1;
            self.boot(pick, 1 + self.restarts);
        } else if self.rng.chance(0.004) && !self.up(pick) {
            self.restarts += 1;
            self.boot(pick, 1 + self.restarts);
        }
        if self.rng.chance(0.002) && self.cuts.len() < 2 {
            let side = nodes
                .iter()
                .copied()
                .filter(|_| self.rng.chance(0.5))
                .collect();
            self.cuts.push(side);
            self.counts.partitions += 1;
        } else if self.rng.chance(0.003) && !self.cuts.is_empty() {
            self.cuts.remove(0);
        }
    }

    /// Ends every fault: crashed nodes restart, partitions heal, no loss.
    fn heal(&mut self) {
        self.cuts.clear();
        self.drop = 0.0;
        let down: Vec<NodeId> = self
            .nodes
            .iter()
            .filter(|(_, m)| m.is_none())
            .map(|(&n, _)| n)
            .collect();
        for n in down {
            self.restarts += 1;
            self.boot(n, 1 + self.restarts);
        }
    }

    /// Each node's live members, links and down members, for a report.
    fn views(&self) -> String {
        let views = self.nodes.iter().map(|(n, m)| match m {
            Some(m) => format!(
                "{n}: live {:?}, linked {:?}, swim alive {:?}, incarnation {}",
                m.live(),
                m.view().linked().collect::<Vec<_>>(),
                m.swim().alive().collect::<Vec<_>>(),
                m.swim().identity().incarnation
            ),
            None => format!("{n}: down"),
        });
        views.collect::<Vec<_>>().join("; ")
    }

    /// Every honest node counts every node as live.
    fn converged(&self) -> bool {
        let all: Vec<NodeId> = self.nodes.keys().copied().collect();
        self.nodes
            .iter()
            .filter(|(n, _)| self.is_honest(**n))
            .all(|(_, m)| {
                m.as_ref().is_some_and(|m| {
                    let mut live = m.live();
                    live.sort_unstable();
                    live == all
                })
            })
    }
}

fn one_seed(seed: u64) -> Counts {
    let mut net = Net::new(seed);
    net.run(15 * SECOND, false);
    assert!(net.converged(), "seed {seed}: the cluster never formed");
    // Calm network, the liar lying: no honest member is ever dropped.
    net.drops.clear();
    net.run(30 * SECOND, false);
    assert!(
        net.drops.is_empty(),
        "seed {seed}: honest nodes dropped honest members on a liar's word: {:?}",
        net.drops
    );
    // A storm, then everything heals: back together within the bound
    // (a suspicion period, the down members' announce period and a probe
    // round, twice over).
    net.drop = 0.01;
    net.drops.clear();
    net.run(40 * SECOND, true);
    net.counts.storm_drops = net.drops.len() as u64;
    net.heal();
    let bound = 2 * (3 + 3 + 1) * SECOND;
    let healed = net.now;
    while !net.converged() {
        assert!(
            net.now - healed < bound,
            "seed {seed}: not back together {} s after the faults healed: {}",
            bound / SECOND,
            net.views()
        );
        net.run(STEP, false);
    }
    net.counts
}

#[test]
fn one_liar_never_splits_the_cluster_and_faults_heal() {
    let mut all = Counts::default();
    for seed in 0..40 {
        let c = one_seed(seed);
        all.lies += c.lies;
        all.screened += c.screened;
        all.crashes += c.crashes;
        all.clean_restarts += c.clean_restarts;
        all.partitions += c.partitions;
        all.storm_drops += c.storm_drops;
    }
    eprintln!("{all:?}");
    // The seeds did what they claim: lies reached honest nodes and were
    // screened, and storms crashed and cut nodes apart, so that honest
    // members were dropped and had to come back.
    assert!(all.lies > 0 && all.screened > 0, "{all:?}");
    assert!(
        all.crashes > 0 && all.clean_restarts > 0 && all.partitions > 0 && all.storm_drops > 0,
        "{all:?}"
    );
}
