//! An open's first block served in the open's own round trip (C2Cfs
//! section 3, `coopcache_core::c2cfs::exclusive`): the file's manager serves a
//! read the opener carried in its open, and the opener starts that read
//! without sending its `Read`. The read must end as a read the opener had
//! asked for itself would, with one message fewer and nothing refused.

use coopcache_core::coop::{AlgorithmKind, Level, LiveShape, NodeId};
use coopcache_core::policy::PolicyKind;
use coopcache_core::protocol::{PeerMsg, manager_of};
use coopcache_sim::protocol::{LiveCluster, content_of};
use std::cell::RefCell;
use std::rc::Rc;

const BLOCK_SIZE: u32 = 4096;
const MEMBERS: [NodeId; 3] = [0, 1, 2];

fn shape() -> LiveShape {
    LiveShape {
        capacity: 64,
        policy: PolicyKind::Lru,
        chances: 2,
        seed: 1,
        classes: Default::default(),
    }
}

/// A block node 2 manages.
fn managed_by_2(skip: u64) -> u64 {
    (skip..)
        .find(|&b| manager_of(b, &MEMBERS) == Some(2))
        .expect("some block")
}

/// Every message delivered: (from, to, name).
type Log = Rc<RefCell<Vec<(NodeId, NodeId, &'static str)>>>;

fn logged(kind: AlgorithmKind) -> (LiveCluster<u64>, Log) {
    let mut c = LiveCluster::new(kind, 3, &shape(), BLOCK_SIZE).unwrap();
    let log: Log = Rc::default();
    let seen = log.clone();
    c.set_tamper(Box::new(move |from, to, msg: &mut PeerMsg<u64, _>| {
        seen.borrow_mut().push((from, to, msg.name()));
    }));
    (c, log)
}

#[test]
fn a_served_read_ends_as_an_asked_one_with_one_message_fewer() {
    for kind in [
        AlgorithmKind::Base,
        AlgorithmKind::Greedy,
        AlgorithmKind::NChance,
        AlgorithmKind::Hash,
    ] {
        // Node 0 holds the block; node 1 reads it, asking its manager (node
        // 2) in one cluster, served by it in the other.
        let (mut asked, asked_log) = logged(kind);
        let (mut served, served_log) = logged(kind);
        let block = managed_by_2(0);
        for c in [&mut asked, &mut served] {
            c.read(0, block).unwrap().expect("done").unwrap();
        }
        asked_log.borrow_mut().clear();
        served_log.borrow_mut().clear();
        let a = asked.read(1, block).unwrap().expect("done").unwrap();
        let s = served
            .read_served(1, 2, block)
            .unwrap()
            .expect("done")
            .unwrap();
        assert_eq!(s.data, content_of(&block, BLOCK_SIZE), "{kind:?}");
        assert_eq!(s.level, a.level, "{kind:?}");
        let (a_log, s_log) = (asked_log.borrow(), served_log.borrow());
        let reads =
            |log: &[(NodeId, NodeId, &str)]| log.iter().filter(|m| *m == &(1, 2, "Read")).count();
        assert_eq!(reads(&a_log), 1, "{kind:?}: {a_log:?}");
        assert_eq!(
            reads(&s_log),
            0,
            "{kind:?}: the Read is not sent: {s_log:?}"
        );
        assert_eq!(
            s_log.len() + 1,
            a_log.len(),
            "{kind:?}: {s_log:?} / {a_log:?}"
        );
        for c in [&asked, &served] {
            assert_eq!(c.stats().violations, 0, "{kind:?}");
        }
        assert_eq!(served.stats().origin_reads, asked.stats().origin_reads);
    }
    // Greedy: the block came from node 0's memory.
    let (mut c, _) = logged(AlgorithmKind::Greedy);
    let block = managed_by_2(0);
    c.read(0, block).unwrap().unwrap().unwrap();
    let s = c.read_served(1, 2, block).unwrap().unwrap().unwrap();
    assert_eq!(s.level, Level::RemoteNode);
    assert_eq!(c.stats().origin_reads, 1);
}

#[test]
fn a_served_read_of_a_block_nobody_holds_is_fetched_and_recorded_by_the_opener() {
    let (mut c, log) = logged(AlgorithmKind::Greedy);
    let block = managed_by_2(0);
    let s = c.read_served(1, 2, block).unwrap().unwrap().unwrap();
    assert_eq!(s.level, Level::Origin);
    {
        let log = log.borrow();
        assert!(log.contains(&(2, 1, "FetchOrigin")), "{log:?}");
        assert!(log.contains(&(1, 2, "Record")), "{log:?}");
    }
    // The record stands: the next reader is forwarded to node 1.
    let next = c.read(0, block).unwrap().unwrap().unwrap();
    assert_eq!(next.level, Level::RemoteNode);
    assert_eq!((c.stats().origin_reads, c.stats().violations), (1, 0));
}

#[test]
fn a_read_said_served_by_a_node_that_is_not_its_manager_asks_as_usual() {
    let (mut c, log) = logged(AlgorithmKind::Greedy);
    let block = managed_by_2(0);
    c.read(0, block).unwrap().unwrap().unwrap();
    log.borrow_mut().clear();
    // Node 1 believes node 0 serves it; node 0 manages nothing of it.
    let done = c.read_served(1, 0, block);
    // Node 0 handled a Read "from" node 1 (its manager slice records and
    // serves as any member's), and node 1 asked its real manager too:
    // the read completes, every byte checked.
    let s = done.unwrap().unwrap().unwrap();
    assert_eq!(s.data, content_of(&block, BLOCK_SIZE));
    assert!(log.borrow().contains(&(1, 2, "Read")), "{:?}", log.borrow());
}

/// The holder's contents overtake the manager's answer (module
/// `coopcache_core::protocol::carried`): they reach the opener before its
/// read exists. Expected (the open asked for its first block), they are
/// kept and checked once the read starts: the block comes from the
/// holder, with no timeout. Not expected, they are a late reply and the
/// read waits for its timeout, then reads the origin.
#[test]
fn contents_that_overtake_the_answer_are_kept_for_the_read() {
    for expected in [true, false] {
        let (mut c, _) = logged(AlgorithmKind::Greedy);
        let block = managed_by_2(0);
        c.read(0, block).unwrap().unwrap().unwrap();
        let now = c.now() + 1;
        if expected {
            c.node_mut(1).expect_carried(block, now);
        }
        c.node_mut(2).handle_read_for(1, block, now);
        c.collect_node(2);
        // The forward reaches the holder, whose contents reach node 1
        // before the manager's Expect (behind its Opened) does.
        assert!(c.deliver_first(|_, to, m| to == 0 && matches!(m, PeerMsg::Forward { .. })));
        assert!(c.deliver_first(|_, to, m| to == 1 && matches!(m, PeerMsg::Data { .. })));
        c.node_mut(1).handle_read_asked(block, 2, now);
        c.collect_node(1);
        c.run_until_quiet().unwrap();
        let s = c.take_done(1, block).expect("done").unwrap();
        assert_eq!(s.data, content_of(&block, BLOCK_SIZE));
        let timeouts = c.nodes()[1].stats().timeouts;
        if expected {
            assert_eq!((s.level, timeouts), (Level::RemoteNode, 0));
        } else {
            assert_eq!((s.level, timeouts), (Level::Origin, 1));
        }
        assert_eq!(c.stats().violations, 0);
    }
}
