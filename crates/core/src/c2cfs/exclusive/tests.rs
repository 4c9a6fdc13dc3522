//! The machine driven by hand: one to four nodes, a fake origin.

use super::harness::{Cluster, STABLE, TIMEOUT, path_managed_by};
use super::{Action, CommitMsg, MAX_PATH, MAX_PENDING, MAX_WAITERS};
use crate::c2cfs::Tcommit;
use std::sync::Arc;

#[test]
fn a_single_node_stats_once_then_answers_opens_from_its_table() {
    let mut c = Cluster::new(&[1]);
    let f: Arc<str> = "/a".into();
    c.write(&f);
    let (topen, v) = c.opened(1, &f).unwrap();
    assert_eq!((v, c.stats_by(1)), (1, 1));
    assert_eq!(c.opened(1, &f), Some((topen, 1)));
    assert_eq!(c.stats_by(1), 1, "the second open used the table");
    assert_eq!(c.node(1).counters().opens_from_table, 1);
    c.write(&f);
    let done = c.committed(1, &f, Some(topen)).unwrap();
    assert!(done.valid);
    assert_eq!(c.stats_by(1), 2, "the commit asked the origin");
    assert_eq!(c.opened(1, &f), Some((done.tcommit, 2)));
    assert_eq!(c.stats_by(1), 2);
    assert!(c.wire.is_empty() && c.violations.is_empty());
    assert_eq!(c.opened(1, &"".into()), None, "no such file at the origin");
}

#[test]
fn a_reader_sees_a_remote_writers_commit_through_the_manager() {
    let mut c = Cluster::new(&[1, 2, 3]);
    let f = path_managed_by(&[(&[1, 2, 3], 3)]);
    c.write(&f);
    let (topen, _) = c.opened(1, &f).unwrap();
    let v = c.write(&f);
    let done = c.committed(1, &f, Some(topen)).unwrap();
    assert!(done.valid, "no other close came between");
    assert_eq!(c.opened(2, &f), Some((done.tcommit, v)));
    assert_eq!((c.stats_by(1), c.stats_by(2), c.stats_by(3)), (0, 0, 2));
    assert_eq!(c.node(3).counters().opens_from_table, 1);
    // Two writers whose opens both precede both closes.
    let (t1, _) = c.opened(1, &f).unwrap();
    let (t2, _) = c.opened(2, &f).unwrap();
    c.write(&f);
    assert!(c.committed(1, &f, Some(t1)).unwrap().valid);
    let last = c.write(&f);
    assert!(!c.committed(2, &f, Some(t2)).unwrap().valid);
    assert_eq!(
        c.opened(2, &f).unwrap().1,
        last,
        "the racing commit's own stat is recorded"
    );
}

#[test]
fn a_commit_arriving_during_a_stat_waits_for_the_next_one() {
    let mut c = Cluster::new(&[1]);
    c.auto_stat = false;
    let f: Arc<str> = "/s".into();
    c.write(&f);
    // The first open stats (S1); before S1's answer the writer writes
    // version 2 and commits.
    let open = c.open(1, &f);
    let v2 = c.write(&f);
    let commit = c.commit(1, &f, None);
    assert_eq!(c.stats.len(), 1, "one stat in flight per file");
    c.answer_stat(0, Ok(1));
    assert_eq!(c.opened[&open].map(|(_, v)| v), Some(1));
    assert!(!c.committed.contains_key(&commit), "S1 predates the commit");
    c.answer_stat(0, Ok(v2));
    let done = c.committed[&commit].unwrap();
    assert!(!done.valid, "a commit with no Topen counts as racing");
    assert_eq!(c.opened(1, &f), Some((done.tcommit, v2)));
    assert!(c.stats.is_empty(), "answered from the table");
}

#[test]
fn requests_from_a_non_member_are_refused_and_change_nothing() {
    let mut c = Cluster::new(&[1, 2]);
    let f = path_managed_by(&[(&[1, 2], 2)]);
    c.write(&f);
    let (t, v) = c.opened(1, &f).unwrap();
    let stats = c.stats_by(2);
    // A Commit names no version: the manager's own stat decides it. From
    // an outsider it does nothing at all.
    let (commit, path) = (Some(t), f.clone());
    for msg in [
        CommitMsg::Commit {
            nonce: 1,
            path,
            topen: commit,
        },
        CommitMsg::Open {
            nonce: 2,
            path: f.clone(),
            first: None,
        },
        CommitMsg::Forget {
            nonce: 3,
            path: f.clone(),
        },
    ] {
        c.node(2).handle_message(9, msg, STABLE);
    }
    c.collect();
    assert_eq!(c.violations.len(), 3);
    assert!(
        c.violations
            .iter()
            .all(|&(at, from, _)| (at, from) == (2, 9))
    );
    assert!(c.wire.is_empty() && c.stats.is_empty());
    assert_eq!(c.opened(1, &f), Some((t, v)), "the entry is unchanged");
    assert_eq!(c.stats_by(2), stats);
}

#[test]
fn answers_count_only_from_the_node_asked_and_late_ones_are_dropped() {
    let mut c = Cluster::new(&[1, 2, 3]);
    let f = path_managed_by(&[(&[1, 2, 3], 3)]);
    c.write(&f);
    let req = c.open(1, &f);
    assert!(c.opened.contains_key(&req));
    // Hold the next open's message to its manager.
    let req = {
        let r = 100;
        c.node(1).handle_open(r, f.clone(), STABLE);
        c.collect();
        r
    };
    let (_, to, msg) = c.wire.pop_front().unwrap();
    let CommitMsg::Open { nonce, .. } = msg else {
        panic!("an open")
    };
    assert_eq!(to, 3);
    let forged = CommitMsg::Opened {
        nonce,
        answer: Some((
            Tcommit {
                epoch: 2,
                serial: 1,
            },
            99,
        )),
        served: false,
    };
    c.node(1).handle_message(2, forged, STABLE);
    c.collect();
    assert_eq!(
        c.violations,
        [(1, 2, "an answer from a node that was not asked")]
    );
    assert!(!c.opened.contains_key(&req));
    c.advance(STABLE + TIMEOUT);
    assert_eq!(c.opened[&req], None, "timed out");
    assert_eq!(c.node(1).counters().timeouts, 1);
    // The manager's answer comes after the timeout: dropped, counted.
    c.node(3).handle_message(
        1,
        CommitMsg::Open {
            nonce,
            path: f,
            first: None,
        },
        STABLE + TIMEOUT,
    );
    c.collect();
    c.run();
    assert_eq!(c.node(1).counters().late_answers, 1);
    assert_eq!((c.opened.len(), c.violations.len()), (2, 1));
}

#[test]
fn a_membership_change_clears_the_table_and_answers_none_until_stable() {
    let mut c = Cluster::new(&[1, 2, 3]);
    let f = path_managed_by(&[(&[1, 2, 3], 3), (&[1, 3], 3)]);
    c.write(&f);
    c.opened(1, &f).unwrap();
    c.opened(1, &f).unwrap();
    assert_eq!((c.stats_by(3), c.node(3).table_len()), (1, 1));
    let at = c.now;
    for n in [1, 3] {
        c.node(n).set_members(&[1, 3], at);
    }
    assert_eq!(c.node(3).table_len(), 0);
    assert_eq!(c.opened(1, &f), None);
    c.write(&f);
    assert_eq!(c.committed(1, &f, None), None, "not recorded");
    assert_eq!(c.node(3).counters().answered_none, 2);
    c.advance(at + STABLE);
    let v = c.origin[&f];
    assert_eq!(c.opened(1, &f).unwrap().1, v);
    assert_eq!(c.stats_by(3), 2, "a fresh stat");
}

#[test]
fn a_timed_out_open_completes_none() {
    let mut c = Cluster::new(&[1, 2]);
    let f = path_managed_by(&[(&[1, 2], 2)]);
    c.auto_stat = false;
    let req = c.open(1, &f);
    assert!(!c.opened.contains_key(&req), "the stat is not answered");
    assert_eq!(c.node(1).poll_timeout(), Some(STABLE + TIMEOUT));
    c.advance(STABLE + TIMEOUT - 1);
    assert!(!c.opened.contains_key(&req));
    c.advance(STABLE + TIMEOUT);
    assert_eq!(c.opened[&req], None);
}

#[test]
fn a_commit_answered_none_makes_every_member_forget_the_file() {
    // Node 4 joined; in its view and the writer's it manages the file,
    // which node 3 holds an entry for.
    let mut c = Cluster::new(&[1, 2, 3, 4]);
    let f = path_managed_by(&[(&[1, 2, 3], 3), (&[1, 2, 3, 4], 4)]);
    for n in [2, 3] {
        c.node(n).set_members(&[1, 2, 3], 0);
    }
    c.advance(STABLE);
    c.write(&f);
    let (t, _) = c.opened(2, &f).unwrap();
    assert_eq!(c.stats_by(3), 1);
    let now = c.now;
    c.node(4).set_members(&[1, 4], now);
    c.node(4).set_members(&[1, 2, 3, 4], now);
    c.write(&f);
    assert_eq!(c.committed(1, &f, Some(t)), None, "4 is not yet stable");
    assert_eq!(c.node(1).counters().forgets, 1);
    // Node 3 dropped its entry: its next open asks the origin.
    let v = c.origin[&f];
    assert_eq!(c.opened(2, &f).unwrap().1, v);
    assert_eq!(c.stats_by(3), 2);
}

#[test]
fn a_timed_out_commit_broadcasts_forget_and_completes_none() {
    let mut c = Cluster::new(&[1, 2, 3]);
    let f = path_managed_by(&[(&[1, 2, 3], 3)]);
    c.write(&f);
    let (t, _) = c.opened(2, &f).unwrap();
    let req = 7;
    c.node(1).handle_commit(req, f.clone(), Some(t), STABLE);
    c.collect();
    c.wire.clear(); // the commit is lost
    c.advance(STABLE + TIMEOUT);
    let forgets = c
        .wire
        .iter()
        .filter(|m| matches!(m.2, CommitMsg::Forget { .. }));
    assert_eq!(forgets.count(), 2, "to each other member");
    c.run();
    assert_eq!(c.committed[&req], None);
    assert_eq!(c.node(3).table_len(), 0);
}

#[test]
fn bounds_refuse_at_once() {
    let mut c = Cluster::new(&[1, 2]);
    let f = path_managed_by(&[(&[1, 2], 2)]);
    for req in 0..=MAX_PENDING as u64 {
        c.node(1).handle_open(req, f.clone(), STABLE);
    }
    c.collect();
    assert_eq!(c.opened.len(), 1);
    assert_eq!(c.opened[&(MAX_PENDING as u64)], None);
    // A manager keeps at most MAX_WAITERS requests on one file's stats.
    c.wire.clear();
    c.auto_stat = false;
    for nonce in 0..=MAX_WAITERS as u64 {
        let msg = CommitMsg::Open {
            nonce,
            path: f.clone(),
            first: None,
        };
        c.node(2).handle_message(1, msg, STABLE);
    }
    c.collect();
    assert_eq!(c.stats.len(), 1);
    let none = CommitMsg::Opened {
        nonce: MAX_WAITERS as u64,
        answer: None,
        served: false,
    };
    assert_eq!(c.wire.iter().map(|m| &m.2).collect::<Vec<_>>(), [&none]);
    // A path over MAX_PATH bytes: a violation from a peer, refused at
    // once for this node's own user.
    let long: Arc<str> = "x".repeat(MAX_PATH + 1).into();
    c.node(2).handle_message(
        1,
        CommitMsg::Open {
            nonce: 0,
            path: long.clone(),
            first: None,
        },
        STABLE,
    );
    c.node(2).handle_commit(5, long, None, STABLE);
    let actions: Vec<_> = std::iter::from_fn(|| c.node(2).poll()).collect();
    assert_eq!(actions.len(), 2, "{actions:?}");
    assert!(matches!(actions[0], Action::Violation { from: 1, .. }));
    assert_eq!(
        actions[1],
        Action::Committed {
            req: 5,
            answer: None
        }
    );
}

#[test]
fn a_stat_in_flight_during_a_forget_or_a_membership_change_records_nothing() {
    // As in the test above: node 4 is unstable and answers the writer's
    // commit None; meanwhile node 3 has a stat in flight for the file.
    let mut c = Cluster::new(&[1, 2, 3, 4]);
    let f = path_managed_by(&[(&[1, 2, 3], 3), (&[1, 2, 3, 4], 4)]);
    for n in [2, 3] {
        c.node(n).set_members(&[1, 2, 3], 0);
    }
    c.advance(STABLE);
    c.auto_stat = false;
    let old = c.write(&f);
    let first = c.open(2, &f);
    let now = c.now;
    c.node(4).set_members(&[1, 4], now);
    c.node(4).set_members(&[1, 2, 3, 4], now);
    let new = c.write(&f);
    let commit = c.commit(1, &f, None);
    assert_eq!(c.committed[&commit], None, "forgotten everywhere");
    // The stat was issued before the write: its answer must not stay.
    c.answer_stat(0, Ok(old));
    c.run();
    assert_eq!(c.opened[&first], None);
    let second = c.open(2, &f);
    c.answer_stat(0, Ok(new));
    c.run();
    assert_eq!(c.opened[&second].unwrap().1, new);
    // A membership change answers a stat's waiters at once.
    c.node(3).forget_for_test(&f);
    let third = c.open(2, &f);
    let now = c.now;
    c.node(3).set_members(&[1, 2, 3, 4], now);
    c.run();
    assert_eq!(c.opened[&third], None);
    c.answer_stat(0, Ok(new));
    assert_eq!(c.node(3).table_len(), 0, "the late stat recorded nothing");
}

/// The first block in the same round trip (module doc): served to an
/// opener whose copy is not the latest, never to one whose `Tlocal` is
/// `Tcommit`, nor to the manager's own opens.
#[test]
fn an_open_is_served_its_first_block_unless_its_copy_is_the_latest() {
    let mut c = Cluster::new(&[1, 2, 3]);
    let f = path_managed_by(&[(&[1, 2, 3], 3)]);
    let v1 = c.write(&f);
    let (t1, _) = c.opened(1, &f).unwrap();
    assert_eq!(c.served, [(3, 1, f.clone(), v1)]);
    assert_eq!(c.reads_first, [(1, f.clone(), v1, 3)]);
    // The same version again: node 1's Tlocal is Tcommit.
    assert_eq!(c.opened(1, &f), Some((t1, v1)));
    assert_eq!(c.served.len(), 1, "nothing served to a latest copy");
    // Node 2 writes: its own copy is the latest, node 1's is not.
    let v2 = c.write(&f);
    let done = c.committed(2, &f, Some(t1)).unwrap();
    assert!(done.valid);
    assert_eq!(c.opened(2, &f), Some((done.tcommit, v2)));
    assert_eq!(c.served.len(), 1, "the writer took its version in");
    assert_eq!(c.opened(1, &f), Some((done.tcommit, v2)));
    assert_eq!(c.served[1], (3, 1, f.clone(), v2));
    assert_eq!(c.reads_first[1], (1, f.clone(), v2, 3));
    // The manager's own opens cost no round trip: nothing to serve.
    c.opened(3, &f).unwrap();
    assert_eq!(c.served.len(), 2);
    assert_eq!(c.node(3).counters().first_served, 2);
    assert!(c.violations.is_empty());
}

/// The manager's `Opened` says it serves, and goes out before the read it
/// serves (so the block's answers follow it on the link); the opener
/// starts its read before its open completes (so its caller's read of the
/// block joins it).
#[test]
fn the_answer_precedes_the_served_read_on_both_sides() {
    let mut c = Cluster::new(&[1, 2]);
    let f = path_managed_by(&[(&[1, 2], 2)]);
    let v = c.write(&f);
    c.node(1).handle_open(7, f.clone(), STABLE);
    let route = super::manager_key(&f);
    assert_eq!(
        c.node(1).poll(),
        Some(Action::AwaitFirst { route }),
        "the block protocol hears first that the block may come"
    );
    let Some(Action::Send { to: 2, msg }) = c.node(1).poll() else {
        panic!("an open to the manager");
    };
    let CommitMsg::Open { first, .. } = msg.clone() else {
        panic!("an open");
    };
    assert_eq!(first, Some(super::FirstBlock { tlocal: None }));
    c.node(2).handle_message(1, msg, STABLE);
    let Some(Action::Stat { .. }) = c.node(2).poll() else {
        panic!("the manager asks the origin first");
    };
    c.node(2).handle_stat(&f, Ok(v), STABLE);
    let manager: Vec<_> = std::iter::from_fn(|| c.node(2).poll()).collect();
    let [
        Action::Send {
            to: 1,
            msg: answer @ CommitMsg::Opened { served: true, .. },
        },
        Action::ServeFirst { reader: 1, .. },
    ] = &manager[..]
    else {
        panic!("{manager:?}");
    };
    c.node(1).handle_message(2, answer.clone(), STABLE);
    let opener: Vec<_> = std::iter::from_fn(|| c.node(1).poll()).collect();
    let [
        Action::ReadFirst {
            version,
            manager: 2,
            ..
        },
        Action::Opened { req: 7, answer },
    ] = &opener[..]
    else {
        panic!("{opener:?}");
    };
    assert_eq!((*version, answer.map(|(_, v)| v)), (v, Some(v)));
}

/// An open of a file already being opened on this node asks for no first
/// block (one read of it is served at a time), and a node configured not
/// to serve neither asks nor serves; an answer saying `served` to an open
/// that did not ask starts nothing.
#[test]
fn first_blocks_are_asked_once_and_only_where_served() {
    let mut c = Cluster::new(&[1, 2]);
    let f = path_managed_by(&[(&[1, 2], 2)]);
    c.write(&f);
    c.node(1).handle_open(1, f.clone(), STABLE);
    c.node(1).handle_open(2, f.clone(), STABLE);
    c.collect();
    let firsts: Vec<bool> = (c.wire.iter())
        .map(|(_, _, m)| matches!(m, CommitMsg::Open { first: Some(_), .. }))
        .collect();
    assert_eq!(firsts, [true, false]);
    c.run();
    assert_eq!((c.served.len(), c.reads_first.len()), (1, 1));
    assert_eq!(c.opened.len(), 2);
    // An open to write wants its Topen only.
    c.node(1).handle_ask(5, f.clone(), STABLE);
    c.collect();
    let (_, _, open) = c.wire.back().unwrap();
    assert!(matches!(open, CommitMsg::Open { first: None, .. }));
    c.run();
    assert_eq!(c.served.len(), 1);

    // Serving off on the opener: it asks for nothing.
    let g = path_managed_by(&[(&[1, 2], 2)]);
    let mut off = Cluster::new(&[1, 2]);
    let mut cfg = super::CommitConfig {
        serve_first: false,
        ..super::harness::cfg()
    };
    *off.node(1) = super::CommitProtocol::new(1, 1, cfg).unwrap();
    off.node(1).set_members(&[1, 2], 0);
    off.write(&g);
    off.opened(1, &g).unwrap();
    assert!(off.served.is_empty() && off.reads_first.is_empty());
    // Serving off on the manager: asked, it serves nothing.
    cfg.serve_first = false;
    *off.node(2) = super::CommitProtocol::new(2, 2, cfg).unwrap();
    off.node(2).set_members(&[1, 2], 0);
    *off.node(1) = super::CommitProtocol::new(1, 3, super::harness::cfg()).unwrap();
    off.node(1).set_members(&[1, 2], 0);
    off.opened(1, &g).unwrap();
    assert!(off.served.is_empty() && off.reads_first.is_empty());

    // A forged `served` to an open that did not ask: nothing starts.
    c.node(1).handle_open(3, f.clone(), STABLE);
    c.node(1).handle_open(4, f.clone(), STABLE);
    c.collect();
    let (_, _, second) = c.wire.pop_back().unwrap();
    let CommitMsg::Open {
        nonce, first: None, ..
    } = second
    else {
        panic!("the second open asks for nothing");
    };
    let reads = c.reads_first.len();
    let forged = CommitMsg::Opened {
        nonce,
        answer: Some((
            Tcommit {
                epoch: 2,
                serial: 9,
            },
            1,
        )),
        served: true,
    };
    c.node(1).handle_message(2, forged, STABLE);
    c.collect();
    assert_eq!(c.reads_first.len(), reads);
    assert!(c.opened.contains_key(&4));
}

/// The opener's `Tlocal` hints are bounded, the oldest going first.
#[test]
fn tlocal_hints_are_bounded() {
    let mut t = super::client::Tlocal::new(4);
    let at = |serial| Tcommit { epoch: 1, serial };
    for k in 0..100 {
        t.set(k, at(k));
    }
    assert_eq!(t.len(), 4);
    assert_eq!((t.get(99), t.get(95)), (Some(at(99)), None));
    t.set(99, at(100));
    t.remove(98);
    assert_eq!((t.get(99), t.get(98), t.len()), (Some(at(100)), None, 3));
}
