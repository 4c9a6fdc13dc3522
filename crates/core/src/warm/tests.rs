//! Warm-up placement between a few machines: where files are read, what
//! turns a file back into a read here, and what a member cannot make a
//! node do.

use super::*;

const IDS: [NodeId; 3] = [1, 2, 3];

fn machine(me: NodeId, cfg: WarmConfig) -> WarmPlacement {
    let mut m = WarmPlacement::new(me, cfg);
    m.set_members(&IDS);
    m
}

fn on() -> WarmConfig {
    WarmConfig::new(true, true)
}

fn drain(m: &mut WarmPlacement) -> Vec<WarmAction> {
    std::iter::from_fn(|| m.poll()).collect()
}

/// A path `me` does not manage, and its manager.
fn elsewhere(m: &WarmPlacement) -> (Arc<str>, NodeId) {
    (0..)
        .map(|i| Arc::<str>::from(format!("set/f{i}")))
        .find_map(|p| {
            let at = m.place_of(&p);
            (at != m.me).then_some((p, at))
        })
        .expect("some path is managed elsewhere")
}

/// A path `me` manages.
fn here(m: &WarmPlacement) -> Arc<str> {
    (0..)
        .map(|i| Arc::<str>::from(format!("set/f{i}")))
        .find(|p| m.place_of(p) == m.me)
        .expect("some path is managed here")
}

/// Delivers messages between `nodes` until none is left; every `Serve`
/// is read at once as `bytes`. Returns the actions that are not sends.
fn run(nodes: &mut [WarmPlacement], bytes: u64) -> Vec<(NodeId, WarmAction)> {
    let mut out = Vec::new();
    loop {
        let mut sent = Vec::new();
        for n in nodes.iter_mut() {
            let me = n.me;
            for a in drain(n) {
                match a {
                    WarmAction::Send { to, msg } => sent.push((me, to, msg)),
                    WarmAction::Serve { from, nonce, .. } => {
                        n.handle_served(from, nonce, Some(bytes));
                        out.push((me, a));
                    }
                    other => out.push((me, other)),
                }
            }
        }
        if sent.is_empty() && nodes.iter().all(|n| n.actions.is_empty()) {
            return out;
        }
        for (from, to, msg) in sent {
            let n = nodes.iter_mut().find(|n| n.me == to).expect("a member");
            n.handle_message(from, msg, 0);
        }
    }
}

#[test]
fn every_file_is_read_on_its_manager_and_spread_over_the_members() {
    let mut nodes: Vec<_> = IDS.iter().map(|&id| machine(id, on())).collect();
    // Four files at a time, as a warm-up reads them.
    let mut out = Vec::new();
    for first in (0..300u64).step_by(MAX_SERVING_PER_PEER) {
        for req in first..first + MAX_SERVING_PER_PEER as u64 {
            let path = Arc::from(format!("set/f{req}"));
            nodes[0].handle_call(req, path, 1 << 20, 0);
        }
        out.extend(run(&mut nodes, 1 << 20));
    }
    let mut per_node = BTreeMap::<NodeId, u64>::new();
    for (me, a) in &out {
        match a {
            WarmAction::ReadHere { .. } => *per_node.entry(*me).or_default() += 1,
            WarmAction::Placed { at, bytes, .. } => {
                assert_eq!(*bytes, 1 << 20);
                *per_node.entry(*at).or_default() += 1;
            }
            WarmAction::Serve { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(per_node.values().sum::<u64>(), 300, "{per_node:?}");
    for id in IDS {
        // Rendezvous hashing: about a third each.
        assert!(per_node[&id] > 60, "{per_node:?}");
    }
    assert_eq!(nodes[0].in_flight(), (0, 0));
    assert_eq!(nodes[0].counters().fell_back, 0);
}

#[test]
fn no_placement_reads_everything_here() {
    for cfg in [WarmConfig::new(false, true), WarmConfig::new(false, false)] {
        let mut m = machine(1, cfg);
        let (path, _) = elsewhere(&m);
        m.handle_call(7, path, 10, 0);
        assert_eq!(drain(&mut m), [WarmAction::ReadHere { req: 7 }]);
    }
}

#[test]
fn a_file_this_node_manages_is_read_here() {
    let mut m = machine(1, on());
    let path = here(&m);
    m.handle_call(3, path, 10, 0);
    assert_eq!(drain(&mut m), [WarmAction::ReadHere { req: 3 }]);
}

#[test]
fn a_manager_that_cannot_read_says_so_and_the_asker_reads_it() {
    let mut asker = machine(1, on());
    let (path, at) = elsewhere(&asker);
    // A private origin reads nothing for its peers.
    let mut manager = machine(at, WarmConfig::new(false, false));
    let mut nodes = [asker, manager];
    nodes[0].handle_call(1, path, 10, 0);
    let out = run(&mut nodes, 10);
    assert_eq!(out, [(1, WarmAction::ReadHere { req: 1 })]);
    [asker, manager] = nodes;
    assert_eq!(asker.counters().fell_back, 1);
    assert_eq!(manager.counters().served, 0);
}

#[test]
fn a_read_that_failed_at_the_manager_is_read_here() {
    let mut asker = machine(1, on());
    let (path, at) = elsewhere(&asker);
    let mut manager = machine(at, on());
    asker.handle_call(1, path, 10, 0);
    let [WarmAction::Send { msg, .. }] = &drain(&mut asker)[..] else {
        panic!("one Warm")
    };
    manager.handle_message(1, msg.clone(), 0);
    let [WarmAction::Serve { nonce, .. }] = drain(&mut manager)[..] else {
        panic!("one Serve")
    };
    manager.handle_served(1, nonce, None);
    let [WarmAction::Send { msg, .. }] = &drain(&mut manager)[..] else {
        panic!("one Warmed")
    };
    let answer = WarmAnswer::NotRead;
    assert_eq!(*msg, WarmMsg::Warmed { nonce, answer });
    asker.handle_message(at, msg.clone(), 0);
    assert_eq!(drain(&mut asker), [WarmAction::ReadHere { req: 1 }]);
}

#[test]
fn an_unanswered_file_is_read_here_after_its_deadline_and_a_late_answer_is_dropped() {
    let mut m = machine(1, on());
    let (path, at) = elsewhere(&m);
    m.handle_call(5, path, 10 << 20, 0);
    let [WarmAction::Send { msg, .. }] = &drain(&mut m)[..] else {
        panic!("one Warm")
    };
    let WarmMsg::Warm { nonce, .. } = *msg else {
        panic!("a Warm")
    };
    // 30 s, and 1 s per MiB of the file's 10.
    assert_eq!(m.poll_timeout(), Some(40_000_000));
    m.handle_timeout(39_999_999);
    assert!(drain(&mut m).is_empty());
    m.handle_timeout(40_000_000);
    assert_eq!(drain(&mut m), [WarmAction::ReadHere { req: 5 }]);
    let answer = WarmAnswer::Read { bytes: 10 };
    m.handle_message(at, WarmMsg::Warmed { nonce, answer }, 40_000_001);
    assert!(drain(&mut m).is_empty(), "a late answer is nobody's");
    assert_eq!(m.counters().violations, 0);
}

#[test]
fn a_file_out_at_a_member_that_leaves_is_read_here() {
    let mut m = machine(1, on());
    let (path, at) = elsewhere(&m);
    m.handle_call(9, path, 10, 0);
    drain(&mut m);
    let rest: Vec<NodeId> = IDS.iter().copied().filter(|&id| id != at).collect();
    m.set_members(&rest);
    assert_eq!(drain(&mut m), [WarmAction::ReadHere { req: 9 }]);
    assert_eq!(m.poll_timeout(), None);
}

#[test]
fn an_answer_counts_only_from_the_member_asked() {
    let mut m = machine(1, on());
    let (path, at) = elsewhere(&m);
    m.handle_call(2, path, 10, 0);
    drain(&mut m);
    let other = IDS.iter().copied().find(|&id| id != 1 && id != at).unwrap();
    let answer = WarmAnswer::Read { bytes: 10 };
    m.handle_message(other, WarmMsg::Warmed { nonce: 1, answer }, 0);
    let out = drain(&mut m);
    assert!(
        matches!(out[..], [WarmAction::Violation { from, .. }] if from == other),
        "{out:?}"
    );
    // The member asked still answers for it.
    m.handle_message(at, WarmMsg::Warmed { nonce: 1, answer }, 0);
    let placed = WarmAction::Placed {
        req: 2,
        at,
        bytes: 10,
    };
    assert_eq!(drain(&mut m), [placed]);
}

#[test]
fn a_warm_up_is_served_only_for_a_live_member_and_a_path_this_node_manages() {
    let mut m = machine(1, on());
    let path = here(&m);
    let warm = |nonce| WarmMsg::Warm {
        nonce,
        path: path.clone(),
    };
    // Not a member.
    m.handle_message(9, warm(1), 0);
    assert!(matches!(
        drain(&mut m)[..],
        [WarmAction::Violation { from: 9, .. }]
    ));
    // A member, for a path another manages: told so, not served.
    let (other, _) = elsewhere(&m);
    m.handle_message(
        2,
        WarmMsg::Warm {
            nonce: 2,
            path: other,
        },
        0,
    );
    let answer = WarmAnswer::NotManager;
    let to = 2;
    let msg = WarmMsg::Warmed { nonce: 2, answer };
    assert_eq!(drain(&mut m), [WarmAction::Send { to, msg }]);
    // The same nonce twice while served.
    m.handle_message(2, warm(3), 0);
    assert!(matches!(
        drain(&mut m)[..],
        [WarmAction::Serve {
            from: 2,
            nonce: 3,
            ..
        }]
    ));
    m.handle_message(2, warm(3), 0);
    assert!(matches!(
        drain(&mut m)[..],
        [WarmAction::Violation { from: 2, .. }]
    ));
    assert_eq!(m.counters().violations, 2);
}

#[test]
fn a_member_can_have_at_most_its_share_of_files_read_at_once() {
    let ids: Vec<NodeId> = (1..=10).collect();
    let mut m = WarmPlacement::new(1, on());
    m.set_members(&ids);
    let path = here(&m);
    let mut serving = 0;
    for from in 2..=10 {
        for nonce in 0..6 {
            let path = path.clone();
            m.handle_message(from, WarmMsg::Warm { nonce, path }, 0);
            for a in drain(&mut m) {
                match a {
                    WarmAction::Serve { .. } => serving += 1,
                    WarmAction::Send {
                        msg:
                            WarmMsg::Warmed {
                                answer: WarmAnswer::Busy,
                                ..
                            },
                        ..
                    } => {}
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
    }
    assert_eq!(serving, MAX_SERVING);
    assert_eq!(m.in_flight().1, MAX_SERVING);
    // A member that leaves frees its share, and is not answered.
    m.set_members(&ids[..3]);
    assert_eq!(m.in_flight().1, 2 * MAX_SERVING_PER_PEER);
    m.handle_served(7, 0, Some(1));
    assert!(drain(&mut m).is_empty());
}
