//! The driver's membership section: SWIM's verdicts change the live set
//! (rendezvous hashing, N-Chance's peers) and the manager's directory,
//! whatever the link says.

use super::*;
use crate::tls::{Identity, init_cluster};
use coopcache_core::coop::{AlgorithmKind, Holders, LiveShape};
use coopcache_core::members::swim::{Change, Effects, SwimId};
use coopcache_core::policy::PolicyKind;
use coopcache_core::protocol::{NodeProtocol, ProtocolConfig, manager_of};

pub(super) const PEER: NodeId = 7;
const PEER_ADDR: &str = "127.0.0.1:9";

pub(super) fn driver(dir: &std::path::Path) -> Driver {
    init_cluster(&dir.join("keys"), &["n0".to_string()], 30).unwrap();
    let identity = Identity::load(&dir.join("keys"), "n0").unwrap();
    let metrics = Arc::new(Metrics::default());
    // Nobody reads the events: the test drives the driver by hand.
    let (events, _) = mpsc::channel(1);
    let ctx = Arc::new(LinkCtx::new(
        Arc::new(identity),
        "127.0.0.1:7000".into(),
        64 << 10,
        events.clone(),
        metrics.clone(),
    ));
    let shape = LiveShape {
        capacity: 64,
        policy: PolicyKind::Lru,
        chances: 2,
        seed: 1,
        classes: Default::default(),
    };
    let machines = AlgorithmKind::NChance.build_live(0, &shape).unwrap();
    let clock = Clock::start();
    let cfg = ProtocolConfig::for_node(64, 64 << 10);
    let protocol = NodeProtocol::new(0, AlgorithmKind::NChance, machines, cfg, clock.micros());
    let origin = Arc::new(Origin::open(dir.to_str().unwrap()).unwrap());
    let cfg = DriverConfig {
        id: 0,
        name: "n0".into(),
        policy: PolicyKind::Lru,
        block_size: 64 << 10,
        budget: 64 << 20,
        max_pinned: 0,
    };
    let commits =
        coopcache_core::c2cfs::exclusive::CommitProtocol::new(0, 1, Default::default()).unwrap();
    let locks = coopcache_core::c2cfs::locks::LockProtocol::new(cfg.id, Default::default());
    let listings =
        coopcache_core::c2cfs::listings::ListProtocol::new(cfg.id, Default::default()).unwrap();
    let node = Node::new(protocol, commits, locks, listings, first_block_of);
    Driver::new(cfg, node, clock, origin, metrics, ctx, events)
}

/// Dials the peer and reports its link up, as `run_link` would.
pub(super) fn link(d: &mut Driver) {
    d.dial(PEER_ADDR.into());
    let greeting = crate::link::Greeting {
        id: PEER,
        listen: PEER_ADDR.into(),
        version: crate::frame::PROTOCOL_VERSION,
        release: crate::frame::RELEASE.into(),
    };
    d.link_up(PEER_ADDR.into(), "n7".into(), greeting);
}

fn verdict(d: &mut Driver, change: Change) {
    d.members.handle_verdicts(Effects {
        changes: vec![change],
        ..Effects::default()
    });
    d.apply_members();
}

/// SWIM sees the peer alive.
fn peer_up(d: &mut Driver) {
    verdict(
        d,
        Change::Up {
            node: PEER,
            listen: PEER_ADDR.into(),
        },
    );
}

fn listed(d: &mut Driver) -> Vec<NodeId> {
    d.status().members.iter().map(|m| m.id).collect()
}

#[tokio::test]
async fn a_swim_verdict_of_down_forgets_a_linked_member_until_it_is_up_again() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d = driver(tmp.path());
    link(&mut d);
    assert_eq!(d.node.reads().members(), [0, PEER]);
    // A block this node manages, read by the peer: the peer holds it.
    let block = (0..)
        .map(|f| BlockId::new(f << 32, 0))
        .find(|b| manager_of(u64::from(b.route), &[0, PEER]) == Some(0))
        .unwrap();
    d.on_event(Event::Peer {
        from: PEER,
        msg: PeerMsg::Read { block },
        held: None,
    });
    assert_eq!(
        *d.node.reads().directory().holders(block),
        Holders::One(PEER)
    );

    // The link still looks up, but SWIM says down.
    verdict(&mut d, Change::Down { node: PEER });
    assert_eq!(d.node.reads().members(), [0]);
    assert_eq!(listed(&mut d), vec![0]);
    assert_eq!(*d.node.reads().directory().holders(block), Holders::None);
    assert!(d.members.view().sizes().0 == 0, "the hung link is dropped");

    // A new link to it does not make it live while SWIM holds it down...
    link(&mut d);
    assert!(d.members.view().member(PEER).is_some());
    assert_eq!(d.node.reads().members(), [0]);
    assert_eq!(listed(&mut d), vec![0]);

    // ...SWIM seeing it alive does.
    peer_up(&mut d);
    assert_eq!(d.node.reads().members(), [0, PEER]);
    assert_eq!(listed(&mut d), vec![0, PEER]);
}

#[tokio::test]
async fn swim_up_for_an_unlinked_member_dials_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d = driver(tmp.path());
    peer_up(&mut d);
    assert!(d.members.view().is_dialled(PEER_ADDR));
    // Live only once the link is up (TLS decides membership).
    assert_eq!(d.node.reads().members(), [0]);
}

#[tokio::test]
async fn bad_gossip_frames_are_counted_and_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d = driver(tmp.path());
    link(&mut d);
    let before = d.metrics.peer_errors.get();
    d.on_frame(PEER, Wire::Gossip(Bytes::from_static(b"\xff\xff\xff junk")));
    assert_eq!(d.metrics.peer_errors.get(), before + 1);
    // A real datagram from another member, replayed by this peer.
    let mut other = Swim::new(
        SwimId {
            node: 8,
            listen: "127.0.0.1:8".into(),
            incarnation: 1,
        },
        1,
    );
    let e = other.announce(0, "127.0.0.1:7000".into(), d.clock.micros());
    d.on_frame(PEER, Wire::Gossip(e.send[0].2.clone()));
    assert_eq!(d.metrics.peer_errors.get(), before + 2);
    assert_eq!(d.node.reads().members(), [0, PEER]);
}

#[tokio::test]
async fn a_member_that_says_it_is_leaving_is_dropped_and_not_dialled_again() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d = driver(tmp.path());
    link(&mut d);
    assert_eq!(d.node.reads().members(), [0, PEER]);
    d.on_frame(PEER, Wire::Leaving);
    assert_eq!(d.node.reads().members(), [0]);
    assert!(d.members.view().sizes().0 == 0, "its link is closed");
    // Neither another member's list nor SWIM (which has not noticed yet)
    // dials it again...
    d.on_frame(8, Wire::Members(vec![(PEER, PEER_ADDR.into())]));
    d.members.handle_verdicts(Effects {
        send: vec![(PEER, PEER_ADDR.into(), Bytes::from_static(b"ping"))],
        ..Effects::default()
    });
    d.apply_members();
    assert!(
        d.members.view().sizes().0 == 0,
        "dialled a member that left"
    );
    // ...until SWIM sees it back (it restarted).
    peer_up(&mut d);
    assert!(d.members.view().is_dialled(PEER_ADDR));
}

#[tokio::test]
async fn a_leaving_node_drops_its_links_and_dials_no_one() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d = driver(tmp.path());
    link(&mut d);
    d.leave();
    assert!(d.members.view().linked().next().is_none() && d.members.view().sizes().0 == 0);
    d.dial(PEER_ADDR.into());
    peer_up(&mut d);
    assert!(d.members.view().sizes().0 == 0, "a leaving node dialled");
}
