//! Nodes' lock machines over a simulated network: calls, waits, leases,
//! manager failure with reclaims, and what a liar's answers cannot do.

use super::*;
use std::collections::{BTreeMap, HashSet};

struct Net {
    nodes: BTreeMap<NodeId, LockProtocol>,
    now: u64,
    replies: Vec<(NodeId, u64, LockResult)>,
    violations: Vec<(NodeId, NodeId, LockViolation)>,
    lost: Vec<(NodeId, Arc<str>)>,
    /// Nodes whose messages, in and out, are dropped (crashed or cut off).
    down: HashSet<NodeId>,
    /// Links (from, to) whose messages are held back, in order, until
    /// [`Net::release`].
    slow: HashSet<(NodeId, NodeId)>,
    held_back: Vec<(NodeId, NodeId, LockMsg)>,
}

impl Net {
    fn new(ids: &[NodeId]) -> Net {
        let mut nodes = BTreeMap::new();
        for &id in ids {
            let mut p = LockProtocol::new(id, LockProtocolConfig::default());
            p.set_members(ids, 0);
            nodes.insert(id, p);
        }
        Net {
            nodes,
            now: 0,
            replies: Vec::new(),
            violations: Vec::new(),
            lost: Vec::new(),
            down: HashSet::new(),
            slow: HashSet::new(),
            held_back: Vec::new(),
        }
    }

    fn node(&mut self, id: NodeId) -> &mut LockProtocol {
        self.nodes.get_mut(&id).expect("a node")
    }

    /// Delivers every message until none is left.
    fn run(&mut self) {
        loop {
            let mut sent = Vec::new();
            for (&id, n) in &mut self.nodes {
                while let Some(a) = n.poll() {
                    match a {
                        LockAction::Send { to, msg } => sent.push((id, to, msg)),
                        LockAction::Reply { req, result } => self.replies.push((id, req, result)),
                        LockAction::Violation { from, why } => {
                            self.violations.push((id, from, why))
                        }
                        LockAction::Lost { path, .. } => self.lost.push((id, path)),
                    }
                }
            }
            if sent.is_empty() {
                return;
            }
            for (from, to, msg) in sent {
                if self.down.contains(&from) || self.down.contains(&to) {
                    continue;
                }
                if self.slow.contains(&(from, to)) {
                    self.held_back.push((from, to, msg));
                    continue;
                }
                let now = self.now;
                self.node(to).handle_message(from, msg, now);
            }
        }
    }

    /// Lets `us` pass, firing every timer on the way.
    fn advance(&mut self, us: u64) {
        let end = self.now + us;
        loop {
            let next = self
                .nodes
                .iter()
                .filter(|(id, _)| !self.down.contains(id))
                .filter_map(|(_, n)| n.poll_timeout())
                .filter(|&at| at <= end)
                .min();
            let Some(at) = next else { break };
            self.now = at.max(self.now);
            let now = self.now;
            for (id, n) in &mut self.nodes {
                if !self.down.contains(id) {
                    n.handle_timeout(now);
                }
            }
            self.run();
        }
        self.now = end;
    }

    /// Delivers what slow links held back, in order, and makes them fast.
    fn release(&mut self) {
        self.slow.clear();
        for (from, to, msg) in std::mem::take(&mut self.held_back) {
            let now = self.now;
            self.node(to).handle_message(from, msg, now);
            self.run();
        }
    }

    fn call(&mut self, id: NodeId, req: u64, call: LockCall) {
        let now = self.now;
        self.node(id).handle_call(req, call, now);
        self.run();
    }

    /// The answer `id` got for `req`, if it has one.
    fn reply(&self, id: NodeId, req: u64) -> Option<&LockResult> {
        self.replies
            .iter()
            .find(|(n, r, _)| *n == id && *r == req)
            .map(|(_, _, result)| result)
    }
}

fn lock(path: &str, owner: u64, kind: LockKind, wait: bool) -> LockCall {
    LockCall::Lock {
        path: path.into(),
        space: LockSpace::Posix,
        owner,
        kind,
        range: LockRange::WHOLE,
        wait,
        pid: 7,
    }
}

fn unlock(path: &str, owner: u64) -> LockCall {
    LockCall::Unlock {
        path: path.into(),
        space: LockSpace::Posix,
        owner,
        range: LockRange::WHOLE,
    }
}

/// A path whose manager among `among` is `want`, and among `then` is not
/// `want`.
fn path_managed_by(want: NodeId, among: &[NodeId], then: &[NodeId]) -> String {
    (0..)
        .map(|i| format!("f{i}"))
        .find(|p| {
            manager_of(manager_key(p), among) == Some(want)
                && manager_of(manager_key(p), then) != Some(want)
        })
        .expect("some path")
}

use crate::c2cfs::exclusive::manager_key;
use crate::protocol::manager_of;

const X: LockKind = LockKind::Exclusive;

#[test]
fn a_lock_held_on_one_node_is_refused_on_another_and_a_waiter_is_granted_at_the_unlock() {
    let mut net = Net::new(&[1, 2, 3]);
    // A file managed by the third node: neither locker is its manager.
    let f = path_managed_by(3, &[1, 2, 3], &[1, 2]);
    net.call(1, 10, lock(&f, 5, X, false));
    assert_eq!(net.reply(1, 10), Some(&Ok(None)));
    net.call(2, 20, lock(&f, 5, X, false));
    let Some(Ok(Some(conflict))) = net.reply(2, 20) else {
        panic!("no conflict: {:?}", net.reply(2, 20));
    };
    assert_eq!((conflict.owner.node, conflict.pid), (1, 7));
    net.call(2, 21, lock(&f, 5, X, true));
    assert_eq!(net.reply(2, 21), None, "a waiter waits");
    net.call(1, 11, unlock(&f, 5));
    assert_eq!(net.reply(1, 11), Some(&Ok(None)));
    assert_eq!(net.reply(2, 21), Some(&Ok(None)), "the waiter is granted");
    assert_eq!((net.node(1).held(), net.node(2).held()), (0, 1));
    assert!(net.violations.is_empty(), "{:?}", net.violations);
}

#[test]
fn a_file_managed_here_is_locked_through_the_same_path_as_a_peers() {
    let mut net = Net::new(&[1, 2]);
    let f = path_managed_by(1, &[1, 2], &[2]);
    net.call(1, 1, lock(&f, 5, X, false));
    net.call(2, 2, lock(&f, 5, X, true));
    assert_eq!(net.reply(1, 1), Some(&Ok(None)));
    assert_eq!(net.reply(2, 2), None);
    let release = LockCall::Release {
        path: f.as_str().into(),
        space: LockSpace::Posix,
        owner: 5,
    };
    net.call(1, 3, release);
    assert_eq!(net.reply(2, 2), Some(&Ok(None)));
    assert_eq!(net.node(1).table().locks(), 1);
}

#[test]
fn locks_outlive_a_lease_while_their_node_renews_and_lapse_when_it_stops() {
    let mut net = Net::new(&[1, 2, 3]);
    let f = path_managed_by(3, &[1, 2, 3], &[1, 2]);
    net.call(1, 1, lock(&f, 5, X, false));
    net.advance(3 * LockConfig::default().lease_us);
    net.call(2, 2, lock(&f, 5, X, false));
    assert!(matches!(net.reply(2, 2), Some(Ok(Some(_)))), "renewed");
    // Node 1 is cut off (membership has not noticed): one lease later its
    // lock is gone.
    net.down.insert(1);
    net.advance(LockConfig::default().lease_us + 1);
    net.call(2, 3, lock(&f, 5, X, false));
    assert_eq!(net.reply(2, 3), Some(&Ok(None)));
}

#[test]
fn a_new_manager_takes_reclaims_before_new_locks_and_a_dead_nodes_locks_go() {
    let mut net = Net::new(&[1, 2, 3]);
    // Managed by 3, and by someone else once 3 is gone.
    let f = path_managed_by(3, &[1, 2, 3], &[1, 2]);
    net.call(1, 1, lock(&f, 5, X, false));
    assert_eq!(net.reply(1, 1), Some(&Ok(None)));
    // Node 3 holds a lock on a file node 1 manages; it dies.
    let h = path_managed_by(1, &[1, 2, 3], &[2, 3]);
    net.call(3, 30, lock(&h, 9, X, false));
    assert_eq!(net.reply(3, 30), Some(&Ok(None)));
    net.down.insert(3);
    // Node 2 sees the change first and asks at once: it is told to wait
    // out the grace, and then meets node 1's reclaimed lock.
    let now = net.now;
    net.node(2).set_members(&[1, 2], now);
    net.call(2, 20, lock(&f, 5, X, true));
    net.advance(1_000);
    let now = net.now;
    net.node(1).set_members(&[1, 2], now);
    net.run();
    net.advance(LockProtocolConfig::default().grace_us + 1_000_000);
    assert_eq!(
        net.reply(2, 20),
        None,
        "node 1's reclaim holds it: {:?}",
        net.replies
    );
    net.call(1, 2, unlock(&f, 5));
    assert_eq!(net.reply(2, 20), Some(&Ok(None)));
    assert!(net.lost.is_empty(), "{:?}", net.lost);
    // The dead node's lock on h went with it.
    net.call(2, 21, lock(&h, 5, X, false));
    assert_eq!(net.reply(2, 21), Some(&Ok(None)));
}

#[test]
fn answers_and_grants_nobody_asked_for_are_violations_and_change_nothing() {
    let mut net = Net::new(&[1, 2, 3]);
    let f = path_managed_by(3, &[1, 2, 3], &[1, 2]);
    net.call(1, 1, lock(&f, 5, X, true));
    net.call(2, 2, lock(&f, 5, X, true));
    assert_eq!(net.reply(2, 2), None);
    // Node 1 claims to be the manager granting node 2's wait, and answers
    // a nonce node 2 never sent to it.
    for msg in [
        LockMsg::Granted {
            nonce: 1,
            result: Ok(()),
        },
        LockMsg::Answer {
            nonce: 1,
            answer: LockAnswer::Done(Ok(LockOutcome::Granted)),
        },
    ] {
        let now = net.now;
        net.node(2).handle_message(1, msg, now);
        net.run();
    }
    assert_eq!(net.reply(2, 2), None, "still waiting");
    assert_eq!(net.node(2).held(), 0);
    assert_eq!(
        net.violations
            .iter()
            .filter(|(at, from, _)| (*at, *from) == (2, 1))
            .count(),
        2
    );
}

#[test]
fn a_call_no_manager_answers_fails_with_unanswered_and_a_cancelled_wait_with_cancelled() {
    let mut net = Net::new(&[1, 2]);
    let f = path_managed_by(2, &[1, 2], &[1]);
    net.down.insert(2);
    net.call(1, 1, lock(&f, 5, X, false));
    net.advance(LockProtocolConfig::default().give_up_us + 5_000_000);
    assert_eq!(net.reply(1, 1), Some(&Err(LockError::Unanswered)));
    assert!(net.node(1).counters().timeouts > 0);
    net.down.clear();
    net.call(2, 2, lock(&f, 5, X, false));
    net.call(1, 3, lock(&f, 5, X, true));
    let now = net.now;
    net.node(1).handle_cancel(3, now);
    net.run();
    assert_eq!(net.reply(1, 3), Some(&Err(LockError::Cancelled)));
    assert_eq!(net.node(2).table().waiters(), 0);
    assert!(net.node(1).is_quiet());
}

#[test]
fn an_answer_from_a_member_not_asked_is_refused_while_the_asked_one_is_silent() {
    let mut net = Net::new(&[1, 2, 3]);
    let f = path_managed_by(3, &[1, 2, 3], &[1, 2]);
    // The manager is cut off: node 2's call waits for its answer.
    net.down.insert(3);
    net.call(2, 1, lock(&f, 5, X, false));
    for nonce in 0..8 {
        let answer = LockMsg::Answer {
            nonce,
            answer: LockAnswer::Done(Ok(LockOutcome::Granted)),
        };
        let now = net.now;
        net.node(2).handle_message(1, answer, now);
        net.run();
    }
    assert_eq!(net.reply(2, 1), None);
    assert_eq!(net.node(2).held(), 0);
    assert!(net.violations.iter().any(|v| (v.0, v.1) == (2, 1)));
}

#[test]
fn a_grant_late_past_a_calls_timeout_is_not_given_back_over_the_lock_asked_again() {
    let mut net = Net::new(&[1, 2, 3]);
    let f = path_managed_by(3, &[1, 2, 3], &[1, 2]);
    net.call(2, 1, lock(&f, 5, X, false));
    // The manager's answers to node 1 are slow: node 1's wait is queued,
    // then granted at node 2's unlock, and node 1 hears neither in time.
    net.slow.insert((3, 1));
    net.call(1, 10, lock(&f, 5, X, true));
    net.call(2, 2, unlock(&f, 5));
    net.advance(LockProtocolConfig::default().timeout_us + 1);
    net.release();
    assert_eq!(net.reply(1, 10), Some(&Ok(None)));
    // What node 1 holds is what its manager says it holds.
    assert_eq!(net.node(1).held(), 1);
    assert_eq!(net.node(3).table().locks_of(1), 1);
    net.call(2, 3, lock(&f, 5, X, false));
    assert!(matches!(net.reply(2, 3), Some(Ok(Some(_)))));
}
