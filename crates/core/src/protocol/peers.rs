//! The other members: who is live, and how far away each is (round trips
//! from pings), which sets how long a read waits on peers.

use super::node::NodeProtocol;
use super::{Content, PeerMsg, ProtocolKey, Status};
use crate::coop::{NodeId, SizeClassed};
use std::collections::{BTreeMap, HashMap};

/// Round trips to the members, what each last advertised, and pings in
/// flight.
#[derive(Debug, Default)]
pub(super) struct Peers {
    /// Smoothed round trip per member, microseconds.
    rtt: BTreeMap<NodeId, u64>,
    /// What each live member last said of its memory.
    status: BTreeMap<NodeId, Status>,
    /// Nonce to (peer, when sent).
    pings: HashMap<u64, (NodeId, u64)>,
    nonce: u64,
    /// The live members advertising memory to lend, sorted: what the node
    /// machine was last told ([`LiveNode::set_lenders`]).
    ///
    /// [`LiveNode::set_lenders`]: crate::coop::LiveNode::set_lenders
    lenders: Vec<NodeId>,
    /// Where the next round of pings starts: the first live peer whose id
    /// is at least this ([`MAX_PINGS_PER_ROUND`]).
    next: NodeId,
}

/// Most peers one round of pings reaches (a round every
/// [`ProtocolConfig::ping_every_us`](super::ProtocolConfig::ping_every_us)).
/// A node with more peers pings the next ones in id order each round, so
/// what it sends and answers while idle stays flat as the cluster grows
/// (it grew by two messages a second per member: `coopcache bench
/// scale`, docs/benchmarks.md). Each peer is then pinged every
/// `ceil((N - 1) / 16)` rounds, 7 s at 100 members: how stale its status
/// and round trip may be. Members' liveness is not the pings' business
/// (SWIM's gossip decides it).
pub const MAX_PINGS_PER_ROUND: usize = 16;

impl Peers {
    /// `from` says this of itself (kept only while it is live).
    pub(super) fn advertised(&mut self, from: NodeId, status: Status) {
        if self.rtt.contains_key(&from) {
            self.status.insert(from, status);
        }
    }

    /// The live members advertising memory to lend, sorted.
    pub(super) fn lenders(&self) -> &[NodeId] {
        &self.lenders
    }

    pub(super) fn status(&self, peer: NodeId) -> Option<Status> {
        self.status.get(&peer).copied()
    }

    pub(super) fn rtt(&self, peer: NodeId) -> Option<u64> {
        self.rtt.get(&peer).copied().filter(|&r| r > 0)
    }

    /// The slowest live peer's round trip.
    pub(super) fn max_rtt(&self) -> Option<u64> {
        self.rtt.values().copied().max()
    }

    /// `from` answered a ping: a round-trip sample, if it was ours to it
    /// and at most `max_age` old (an answer later than any read would
    /// wait says nothing a timeout can use, and lets a member that holds
    /// its answers back, or replays another's, stretch every timeout).
    pub(super) fn pong(&mut self, from: NodeId, nonce: u64, now: u64, max_age: u64) {
        if self.pings.get(&nonce).is_some_and(|(p, _)| *p == from)
            && let Some((peer, sent)) = self.pings.remove(&nonce)
            && let Some(rtt) = self.rtt.get_mut(&peer)
            && now.saturating_sub(sent) <= max_age
        {
            let sample = now.saturating_sub(sent);
            *rtt = if *rtt == 0 {
                sample
            } else {
                (*rtt * 7 + sample) / 8
            };
        }
    }
}

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// One round of pings: every live peer, or the next
    /// [`MAX_PINGS_PER_ROUND`] of them in id order.
    pub(super) fn ping_round(&mut self, now: u64) {
        self.peers
            .pings
            .retain(|_, (_, sent)| now.saturating_sub(*sent) <= self.cfg.max_timeout_us);
        let others: Vec<NodeId> = self
            .live
            .iter()
            .copied()
            .filter(|&p| p != self.me)
            .collect();
        let start = others.partition_point(|&p| p < self.peers.next);
        let round = others.len().min(MAX_PINGS_PER_ROUND);
        let peers: Vec<NodeId> = others
            .iter()
            .cycle()
            .skip(start)
            .take(round)
            .copied()
            .collect();
        if let Some(&last) = peers.last() {
            self.peers.next = last.wrapping_add(1);
        }
        for peer in peers {
            self.peers.nonce = self.peers.nonce.wrapping_add(1);
            let nonce = self.peers.nonce;
            self.peers.pings.insert(nonce, (peer, now));
            let status = self.own_status(now);
            self.send(peer, PeerMsg::Ping { nonce, status });
        }
    }

    /// `from` advertised `status` on a ping or its answer: kept, and the
    /// node machine told if the members lending memory changed.
    pub(super) fn advertised(&mut self, from: NodeId, status: Status) {
        let lends = |peers: &Peers| peers.status(from).is_some_and(|s| s.lendable() > 0);
        let before = lends(&self.peers);
        self.peers.advertised(from, status);
        let after = lends(&self.peers);
        // Only a change of whether `from` lends changes the lenders, and
        // by `from` alone: a walk over every member at each change cost
        // 78% of a 1,000-node replay's time (`coopcache sim live --nodes
        // 1000 --lenders 250`), where lenders fill and empty all along.
        if after != before {
            let lenders = &mut self.peers.lenders;
            match (lenders.binary_search(&from), after) {
                (Err(at), true) => lenders.insert(at, from),
                (Ok(at), false) => {
                    lenders.remove(at);
                }
                _ => return,
            }
            self.node.set_lenders(&self.peers.lenders);
        }
    }

    /// The lenders once members left: those still live (a member's status
    /// comes only from its pings, so a new one lends from its first).
    /// The node machine hears of a change only.
    fn lenders_left(&mut self) {
        let live = &self.live;
        let before = self.peers.lenders.len();
        (self.peers.lenders).retain(|p| live.binary_search(p).is_ok());
        if self.peers.lenders.len() != before {
            self.node.set_lenders(&self.peers.lenders);
        }
    }

    /// The live members are now `members` (and this node).
    pub(super) fn change_members(&mut self, members: &[NodeId], now: u64) {
        let mut live: Vec<NodeId> = members.to_vec();
        live.push(self.me);
        live.sort_unstable();
        live.dedup();
        if live == self.live {
            return;
        }
        let old = std::mem::replace(&mut self.live, live);
        self.owners = crate::coop::Owners::Live(self.live.clone());
        // `live` is sorted: a search, not a scan, per old member (a scan
        // made every change O(N^2): a million comparisons at 1,000 members).
        let lost: Vec<NodeId> = old
            .iter()
            .copied()
            .filter(|n| self.live.binary_search(n).is_err())
            .collect();
        self.node.set_peers(&self.live);
        self.manager.set_peers(&self.live);
        for &peer in &self.live {
            if peer != self.me {
                self.peers.rtt.entry(peer).or_insert(0);
            }
        }
        for &gone in &lost {
            self.peers.rtt.remove(&gone);
            self.peers.status.remove(&gone);
            self.manager.forget_node(gone);
            self.manager_lost(gone, now);
        }
        self.lenders_left();
        self.reads_lost(&lost, &old, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coop::{AlgorithmKind, LiveShape};
    use crate::policy::PolicyKind;
    use crate::protocol::{Action, BlockId, Digest, ProtocolConfig};

    /// The peers node `n` pings when its round falls due at `now`.
    fn pinged(n: &mut NodeProtocol<BlockId, Digest>, now: u64) -> Vec<NodeId> {
        n.handle_timeout(now);
        std::iter::from_fn(|| n.poll())
            .filter_map(|a| match a {
                Action::Send {
                    to,
                    msg: PeerMsg::Ping { .. },
                } => Some(to),
                _ => None,
            })
            .collect()
    }

    /// Node 0 of a `kind` cluster, 4 blocks of memory.
    fn node(kind: AlgorithmKind) -> NodeProtocol<BlockId, Digest> {
        let shape = LiveShape {
            capacity: 4,
            policy: PolicyKind::Lru,
            chances: 2,
            seed: 1,
            classes: Default::default(),
        };
        let machines = kind.build_live(0, &shape).unwrap();
        NodeProtocol::new(0, kind, machines, ProtocolConfig::for_node(4, 4096), 0)
    }

    #[test]
    fn a_round_pings_at_most_sixteen_peers_and_each_peer_in_turn() {
        let every = ProtocolConfig::for_node(4, 4096).ping_every_us;
        let mut n = node(AlgorithmKind::Base);
        n.set_members(&[0, 1, 2, 3], 0);
        assert_eq!(pinged(&mut n, every), [1, 2, 3], "a small cluster: all");
        let members: Vec<NodeId> = (0..40).collect();
        n.set_members(&members, every);
        let mut times = [0u32; 40];
        for round in 2..=4 {
            let peers = pinged(&mut n, round * every);
            assert_eq!(peers.len(), MAX_PINGS_PER_ROUND, "round {round}");
            for p in peers {
                times[p as usize] += 1;
            }
        }
        // 48 pings over 39 peers, in turn: each once or twice, never itself.
        assert_eq!(times[0], 0);
        assert!(times[1..].iter().all(|t| (1..=2).contains(t)), "{times:?}");
    }

    #[test]
    fn the_lenders_follow_each_members_lending_and_the_members() {
        let mut n = node(AlgorithmKind::Direct);
        n.set_members(&[0, 1, 2, 3, 4, 5], 0);
        let says = |n: &mut NodeProtocol<BlockId, Digest>, from: NodeId, idle: bool| {
            let status = Status {
                capacity: 4,
                idle,
                ..Status::default()
            };
            n.handle_message(from, PeerMsg::Ping { nonce: 1, status }, 1);
        };
        for (from, idle) in [(4, true), (2, true), (5, false), (3, true)] {
            says(&mut n, from, idle);
        }
        assert_eq!(n.peers.lenders(), [2, 3, 4], "sorted, the idle ones");
        says(&mut n, 3, false);
        says(&mut n, 2, true);
        assert_eq!(n.peers.lenders(), [2, 4], "3 stopped, 2 said it again");
        n.set_members(&[0, 1, 2, 3, 5, 6], 2);
        assert_eq!(n.peers.lenders(), [2], "4 left");
        says(&mut n, 6, true);
        assert_eq!(n.peers.lenders(), [2, 6], "6 joined and lends");
        n.set_members(&[0, 1, 2, 3, 4, 5, 6], 3);
        assert_eq!(
            n.peers.lenders(),
            [2, 6],
            "4 is back, lending once it says so"
        );
    }
}
