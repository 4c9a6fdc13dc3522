//! SWIM on a simulated network with a simulated clock: members meet, an
//! isolated member is declared down within a bound, the partition heals,
//! and bad datagrams are refused without harm.

use super::*;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// Simulated time per step, in microseconds.
const STEP: u64 = 10_000;

/// Microseconds in `d`.
fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

struct Net {
    nodes: BTreeMap<NodeId, Swim>,
    /// Members cut off from everyone (a blackhole both ways).
    isolated: BTreeSet<NodeId>,
    now: u64,
    start: u64,
    /// (observer, change, when since start).
    changes: Vec<(NodeId, Change, Duration)>,
}

pub(in crate::members) fn id(node: NodeId) -> SwimId {
    SwimId {
        node,
        listen: format!("10.0.0.{node}:7170"),
        incarnation: 1,
    }
}

impl Net {
    fn new(ids: &[NodeId]) -> Net {
        let now = 1_000_000;
        Net {
            nodes: ids.iter().map(|&n| (n, Swim::new(id(n), 7))).collect(),
            isolated: BTreeSet::new(),
            now,
            start: now,
            changes: Vec::new(),
        }
    }

    /// Delivers `effects` of `from`, and whatever they cause, until quiet.
    fn apply(&mut self, from: NodeId, effects: Effects) {
        let mut queue = vec![(from, effects)];
        while let Some((from, effects)) = queue.pop() {
            assert_eq!(effects.dropped_timers, 0);
            let at = Duration::from_micros(self.now - self.start);
            self.changes
                .extend(effects.changes.into_iter().map(|c| (from, c, at)));
            // A hint is dialled, as the driver does; the link up, the
            // node announces itself to the member named.
            for (node, listen) in effects.hints {
                assert_eq!(listen, id(node).listen, "hinted address of {node}");
                let isolated = self.isolated.contains(&from) || self.isolated.contains(&node);
                if !isolated && self.nodes.contains_key(&node) {
                    let now = self.now;
                    let e = self
                        .nodes
                        .get_mut(&from)
                        .unwrap()
                        .announce(node, listen, now);
                    queue.push((from, e));
                }
            }
            for (to, listen, data) in effects.send {
                assert_eq!(listen, id(to).listen, "dial address of {to}");
                if self.isolated.contains(&from) || self.isolated.contains(&to) {
                    continue;
                }
                let Some(swim) = self.nodes.get_mut(&to) else {
                    continue;
                };
                // Refusals are normal here (messages to a stale identity).
                if let Ok(e) = swim.receive(from, &data, self.now) {
                    queue.push((to, e));
                }
            }
        }
    }

    fn announce(&mut self, from: NodeId, to: NodeId) {
        let now = self.now;
        let e = self
            .nodes
            .get_mut(&from)
            .unwrap()
            .announce(to, id(to).listen, now);
        self.apply(from, e);
    }

    fn run(&mut self, d: Duration) {
        let end = self.now + us(d);
        while self.now < end {
            self.now += STEP;
            let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
            for n in ids {
                let now = self.now;
                let e = self.nodes.get_mut(&n).unwrap().tick(now);
                self.apply(n, e);
            }
        }
    }

    fn alive(&self, n: NodeId) -> BTreeSet<NodeId> {
        self.nodes[&n].alive().collect()
    }

    /// When `observer` first saw `change` at or after `since`.
    fn seen(&self, observer: NodeId, change: &Change, since: Duration) -> Option<Duration> {
        self.changes
            .iter()
            .find(|(o, c, at)| *o == observer && c == change && *at >= since)
            .map(|&(_, _, at)| at)
    }
}

fn joined() -> Net {
    let mut net = Net::new(&[1, 2, 3]);
    net.announce(2, 1);
    net.announce(3, 1);
    net.run(Duration::from_secs(5));
    net
}

#[test]
fn members_meet_through_one_seed() {
    let net = joined();
    assert_eq!(net.alive(1), BTreeSet::from([2, 3]));
    assert_eq!(net.alive(2), BTreeSet::from([1, 3]));
    // 3 never talked to 2 directly at first: it learned it from 1's feed.
    assert_eq!(net.alive(3), BTreeSet::from([1, 2]));
    let up = Change::Up {
        node: 2,
        listen: id(2).listen,
    };
    assert!(net.seen(3, &up, Duration::ZERO).is_some());
    assert!(
        !net.changes
            .iter()
            .any(|(_, c, _)| matches!(c, Change::Down { .. }))
    );
}

#[test]
fn an_isolated_member_is_declared_down_and_rejoins_after_healing() {
    let mut net = joined();
    let cut_at = Duration::from_micros(net.now - net.start);
    net.isolated.insert(3);
    net.run(Duration::from_secs(15));
    // Within probe periods + indirect probes + suspicion + dissemination.
    let bound = PROBE_PERIOD * 4 + SUSPECT_TO_DOWN + Duration::from_secs(2);
    for observer in [1, 2] {
        let at = net
            .seen(observer, &Change::Down { node: 3 }, cut_at)
            .unwrap_or_else(|| panic!("{observer} never declared 3 down"));
        eprintln!("node {observer} declared 3 down after {:?}", at - cut_at);
        assert!(at - cut_at <= bound, "{observer} took {:?}", at - cut_at);
        let other = 3 - observer;
        assert_eq!(net.alive(observer), BTreeSet::from([other]));
    }
    // The survivors hold each other up: no false suspicion between them.
    assert!(net.seen(1, &Change::Down { node: 2 }, cut_at).is_none());
    assert!(net.seen(2, &Change::Down { node: 1 }, cut_at).is_none());
    // The isolated member sees everyone else down.
    assert!(net.alive(3).is_empty());

    let healed_at = Duration::from_micros(net.now - net.start);
    net.isolated.clear();
    net.run(Duration::from_secs(20));
    for observer in [1, 2] {
        assert!(
            net.changes.iter().any(|(o, c, at)| *o == observer
                && matches!(c, Change::Up { node: 3, .. })
                && *at >= healed_at),
            "{observer} did not see 3 back"
        );
    }
    assert_eq!(net.alive(1), BTreeSet::from([2, 3]));
    assert_eq!(net.alive(3), BTreeSet::from([1, 2]));
}

/// A member restarted (or upgraded) before the others noticed it go: its
/// new incarnation replaces the old one, which still looked alive, so
/// foca renames it without a change of liveness and says no `MemberUp`.
/// The others must still hear it is up: a member that said it left is
/// dialled again only then (`View::detected_up`), and before this every
/// member but its seed left a quickly restarted node out for good
/// (found by `crates/cli/tests/upgrade.rs`).
#[test]
fn a_member_restarted_before_it_was_missed_is_seen_up_again() {
    let mut net = joined();
    let restart = SwimId {
        incarnation: 2,
        ..id(3)
    };
    net.nodes.insert(3, Swim::new(restart, 9));
    let restarted_at = Duration::from_micros(net.now - net.start);
    net.announce(3, 1);
    net.run(Duration::from_secs(5));
    let up = Change::Up {
        node: 3,
        listen: id(3).listen,
    };
    for observer in [1, 2] {
        assert!(
            net.seen(observer, &up, restarted_at).is_some(),
            "{observer} did not see 3's new incarnation up"
        );
    }
    assert_eq!(net.alive(1), BTreeSet::from([2, 3]));
    assert_eq!(net.alive(3), BTreeSet::from([1, 2]));
}

#[test]
fn a_datagram_speaking_for_another_member_is_refused() {
    let mut net = Net::new(&[1, 2, 3]);
    let now = net.now;
    let e = net
        .nodes
        .get_mut(&2)
        .unwrap()
        .announce(1, id(1).listen, now);
    let (to, _, data) = e.send.into_iter().next().expect("an announce");
    assert_eq!(to, 1);
    // Node 3's link delivers node 2's datagram.
    let err = net
        .nodes
        .get_mut(&1)
        .unwrap()
        .receive(3, &data, now)
        .unwrap_err();
    assert_eq!(
        err,
        GossipError::Spoofed {
            from: 3,
            claimed: 2
        }
    );
    assert!(net.alive(1).is_empty());
    // From its own link it is taken.
    net.nodes
        .get_mut(&1)
        .unwrap()
        .receive(2, &data, now)
        .unwrap();
    assert_eq!(net.alive(1), BTreeSet::from([2]));
}

#[test]
fn malformed_datagrams_are_refused() {
    let mut swim = Swim::new(id(1), 1);
    let now = 1_000_000u64;
    for bad in [&b""[..], b"\xff", b"\x00\x00\x00", &[0xffu8; 64][..]] {
        assert!(
            matches!(
                swim.receive(2, bad, now),
                Err(GossipError::Undecodable(_) | GossipError::Refused(_))
            ),
            "{bad:?}"
        );
    }
    // A valid header with trailing garbage, and one too long.
    let mut other = Swim::new(id(2), 1);
    let e = other.announce(1, id(1).listen, now);
    let mut data = e.send[0].2.to_vec();
    data.extend_from_slice(b"xx");
    assert!(swim.receive(2, &data, now).is_err());
    data.resize(MAX_GOSSIP + 1, 0);
    assert!(swim.receive(2, &data, now).is_err());
    assert_eq!(swim.alive().count(), 0);
}

/// A datagram from `src` to `dst` carrying `updates`, encoded as foca
/// does: what a member with its own certificate can send on its link.
pub(in crate::members) fn forged(
    src: NodeId,
    dst: NodeId,
    updates: &[foca::Member<SwimId>],
) -> Vec<u8> {
    lies::gossip(&id(src), &id(dst), updates)
}

#[test]
fn one_member_cannot_declare_another_down_or_make_it_rejoin() {
    let mut net = joined();
    let since = Duration::from_micros(net.now - net.start);
    let unrefutable = SwimId {
        incarnation: u64::MAX,
        ..id(3)
    };
    let lies = [
        foca::Member::new(unrefutable, foca::Incarnation::MAX, foca::State::Down),
        foca::Member::new(id(3), foca::Incarnation::MAX, foca::State::Down),
        foca::Member::new(id(3), foca::Incarnation::MAX, foca::State::Suspect),
        // About the receiver: a suspicion it can never refute.
        foca::Member::new(id(1), foca::Incarnation::MAX, foca::State::Suspect),
        foca::Member::new(id(1), 0, foca::State::Down),
    ];
    for _ in 0..20 {
        let now = net.now;
        let e = net
            .nodes
            .get_mut(&1)
            .unwrap()
            .receive(2, &forged(2, 1, &lies), now)
            .unwrap();
        assert_eq!(e.dropped_updates, lies.len());
        net.apply(1, e);
        net.run(Duration::from_millis(500));
    }
    assert!(net.seen(1, &Change::Down { node: 3 }, since).is_none());
    assert_eq!(net.alive(1), BTreeSet::from([2, 3]));
    assert_eq!(net.nodes[&1].identity(), &id(1), "node 1 rejoined");
    for observer in [2, 3] {
        assert!(
            net.seen(observer, &Change::Down { node: 1 }, since)
                .is_none()
        );
    }
}

#[test]
fn a_member_one_has_not_met_is_a_hint_to_dial_not_a_member() {
    let mut swim = Swim::new(id(1), 1);
    let now = 1_000_000u64;
    let stranger = foca::Member::new(id(9), 0, foca::State::Alive);
    let e = swim.receive(2, &forged(2, 1, &[stranger]), now).unwrap();
    assert_eq!(e.hints, vec![(9, id(9).listen)]);
    assert_eq!(swim.alive().collect::<Vec<_>>(), vec![2]);
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..MAX_GOSSIP + 8), from in 0u32..4) {
        let mut swim = Swim::new(id(1), 1);
        let _ = swim.receive(from, &data, 1_000_000u64);
    }
}
