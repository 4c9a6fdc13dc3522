use super::*;
use std::collections::HashMap;

const A: NodeId = 1;
const B: NodeId = 2;
const C: NodeId = 3;
const LEASE: u64 = 30_000_000;

fn table() -> LockTable {
    LockTable::new(LockConfig::default())
}

fn r(start: u64, end: u64) -> LockRange {
    LockRange::new(start, end).unwrap()
}

fn req(
    nonce: u64,
    space: LockSpace,
    owner: u64,
    kind: LockKind,
    range: LockRange,
    wait: bool,
) -> LockRequest {
    LockRequest {
        nonce,
        path: "f".into(),
        space,
        owner,
        kind,
        range,
        wait,
        pid: 100 + owner as u32,
    }
}

fn posix(
    t: &mut LockTable,
    from: NodeId,
    owner: u64,
    kind: LockKind,
    range: LockRange,
) -> LockOutcome {
    t.lock(from, req(0, LockSpace::Posix, owner, kind, range, false), 0)
        .unwrap()
}

fn posix_wait(
    t: &mut LockTable,
    from: NodeId,
    nonce: u64,
    owner: u64,
    kind: LockKind,
    range: LockRange,
) -> Result<LockOutcome, LockError> {
    t.lock(
        from,
        req(nonce, LockSpace::Posix, owner, kind, range, true),
        0,
    )
}

fn flock(
    t: &mut LockTable,
    from: NodeId,
    nonce: u64,
    owner: u64,
    kind: LockKind,
    wait: bool,
) -> LockOutcome {
    t.lock(
        from,
        req(nonce, LockSpace::Flock, owner, kind, LockRange::WHOLE, wait),
        0,
    )
    .unwrap()
}

/// What `(node, owner)` holds in the POSIX namespace of "f", sorted.
fn held(t: &LockTable, node: NodeId, owner: u64) -> Vec<(LockKind, u64, u64)> {
    let Some(file) = t.files.get(&(Arc::from("f"), LockSpace::Posix)) else {
        return Vec::new();
    };
    file.held
        .iter()
        .filter(|h| h.owner == LockOwner { node, owner })
        .map(|h| (h.kind, h.range.start, h.range.end))
        .collect()
}

fn grants(t: &mut LockTable) -> Vec<(NodeId, u64, Result<(), LockError>)> {
    std::iter::from_fn(|| t.poll())
        .map(|g| (g.node, g.nonce, g.result))
        .collect()
}

/// No two owners hold conflicting locks over a byte, an owner's locks
/// neither overlap nor touch with one kind, and the counts add up.
fn check(t: &LockTable) {
    let mut locks = 0;
    let mut waiters = 0;
    let mut per_node: HashMap<NodeId, (usize, usize)> = HashMap::new();
    for file in t.files.values() {
        assert!(
            !file.held.is_empty() || !file.waiting.is_empty(),
            "empty entries are dropped"
        );
        for (i, a) in file.held.iter().enumerate() {
            for b in &file.held[i + 1..] {
                if a.owner == b.owner {
                    assert!(!a.range.overlaps(b.range), "{a:?} overlaps {b:?}");
                    assert!(
                        a.kind != b.kind || !a.range.touches(b.range),
                        "{a:?} not merged with {b:?}"
                    );
                } else if a.range.overlaps(b.range) {
                    assert!(!a.kind.conflicts(b.kind), "{a:?} conflicts with {b:?}");
                }
            }
            per_node.entry(a.owner.node).or_default().0 += 1;
        }
        for w in &file.waiting {
            per_node.entry(w.held.owner.node).or_default().1 += 1;
        }
        locks += file.held.len();
        waiters += file.waiting.len();
    }
    assert_eq!((t.locks, t.waiters), (locks, waiters));
    let usage: HashMap<NodeId, (usize, usize)> = t
        .usage
        .iter()
        .map(|(&n, u)| (n, (u.locks, u.waiters)))
        .collect();
    assert_eq!(usage, per_node);
}

use LockKind::{Exclusive, Shared};

#[test]
fn an_exclusive_range_on_one_node_refuses_an_overlapping_lock_on_another() {
    let mut t = table();
    assert_eq!(
        posix(&mut t, A, 7, Exclusive, r(0, 99)),
        LockOutcome::Granted
    );
    // The same lock owner id on another node is another owner.
    let LockOutcome::Conflict(c) = posix(&mut t, B, 7, Shared, r(50, 60)) else {
        panic!("granted across nodes");
    };
    assert_eq!(c.owner, LockOwner { node: A, owner: 7 });
    assert_eq!((c.kind, c.range, c.pid), (Exclusive, r(0, 99), 107));
    // Outside the range, and shared with shared, are fine.
    assert_eq!(
        posix(&mut t, B, 7, Exclusive, r(100, u64::MAX)),
        LockOutcome::Granted
    );
    assert_eq!(
        posix(&mut t, C, 1, Shared, r(200, 300)),
        LockOutcome::Conflict(LockConflict {
            owner: LockOwner { node: B, owner: 7 },
            kind: Exclusive,
            range: r(100, u64::MAX),
            pid: 107,
        })
    );
    check(&t);
}

#[test]
fn shared_locks_coexist_and_keep_exclusive_out() {
    let mut t = table();
    assert_eq!(posix(&mut t, A, 1, Shared, r(0, 9)), LockOutcome::Granted);
    assert_eq!(posix(&mut t, B, 1, Shared, r(5, 20)), LockOutcome::Granted);
    assert!(matches!(
        posix(&mut t, C, 1, Exclusive, r(9, 9)),
        LockOutcome::Conflict(_)
    ));
    assert_eq!(
        posix(&mut t, C, 1, Exclusive, r(21, 30)),
        LockOutcome::Granted
    );
    check(&t);
}

#[test]
fn getlk_reports_the_lowest_lock_in_the_way_and_never_the_owners_own() {
    let mut t = table();
    posix(&mut t, A, 1, Exclusive, r(50, 59));
    posix(&mut t, B, 2, Shared, r(10, 19));
    let c = t
        .test(C, "f", LockSpace::Posix, 3, Exclusive, LockRange::WHOLE)
        .unwrap();
    assert_eq!((c.owner.node, c.range), (B, r(10, 19)));
    // A read lock only meets the write lock.
    let c = t
        .test(C, "f", LockSpace::Posix, 3, Shared, LockRange::WHOLE)
        .unwrap();
    assert_eq!((c.owner.node, c.kind, c.range), (A, Exclusive, r(50, 59)));
    assert_eq!(
        t.test(A, "f", LockSpace::Posix, 1, Exclusive, r(50, 59)),
        None
    );
    assert_eq!(
        t.test(C, "f", LockSpace::Posix, 3, Exclusive, r(20, 49)),
        None
    );
    assert_eq!(
        t.test(C, "other", LockSpace::Posix, 3, Exclusive, LockRange::WHOLE),
        None
    );
    // Testing holds nothing.
    assert_eq!(t.locks(), 2);
}

#[test]
fn an_owners_locks_split_and_merge_as_posix_says() {
    let mut t = table();
    posix(&mut t, A, 1, Shared, r(0, 99));
    // A write lock in the middle of a read lock splits it in three.
    posix(&mut t, A, 1, Exclusive, r(40, 59));
    assert_eq!(
        held(&t, A, 1),
        vec![(Shared, 0, 39), (Exclusive, 40, 59), (Shared, 60, 99)]
    );
    // Adjacent locks of one kind merge; of another kind they stay apart.
    posix(&mut t, A, 1, Exclusive, r(60, 69));
    assert_eq!(
        held(&t, A, 1),
        vec![(Shared, 0, 39), (Exclusive, 40, 69), (Shared, 70, 99)]
    );
    posix(&mut t, A, 1, Shared, r(30, 45));
    assert_eq!(
        held(&t, A, 1),
        vec![(Shared, 0, 45), (Exclusive, 46, 69), (Shared, 70, 99)]
    );
    // Unlocking cuts the range out of whatever kind is there.
    t.unlock(A, "f", LockSpace::Posix, 1, r(10, 79), 0).unwrap();
    assert_eq!(held(&t, A, 1), vec![(Shared, 0, 9), (Shared, 80, 99)]);
    // One lock over both and beyond merges everything.
    posix(&mut t, A, 1, Shared, r(5, 200));
    assert_eq!(held(&t, A, 1), vec![(Shared, 0, 200)]);
    // To the end of the file, then an unlock to the end.
    posix(&mut t, A, 1, Shared, r(201, u64::MAX));
    assert_eq!(held(&t, A, 1), vec![(Shared, 0, u64::MAX)]);
    t.unlock(A, "f", LockSpace::Posix, 1, r(100, u64::MAX), 0)
        .unwrap();
    assert_eq!(held(&t, A, 1), vec![(Shared, 0, 99)]);
    check(&t);
    // Unlocking what is not held is no error and changes nothing.
    t.unlock(A, "f", LockSpace::Posix, 1, r(500, 600), 0)
        .unwrap();
    t.unlock(B, "f", LockSpace::Posix, 1, r(0, 99), 0).unwrap();
    assert_eq!(held(&t, A, 1), vec![(Shared, 0, 99)]);
    t.unlock(A, "f", LockSpace::Posix, 1, LockRange::WHOLE, 0)
        .unwrap();
    assert_eq!(t.locks(), 0);
    check(&t);
}

#[test]
fn an_upgrade_waits_for_other_readers_and_keeps_the_read_lock_meanwhile() {
    let mut t = table();
    posix(&mut t, A, 1, Shared, r(0, 9));
    posix(&mut t, B, 1, Shared, r(0, 9));
    assert_eq!(
        posix_wait(&mut t, A, 5, 1, Exclusive, r(0, 9)),
        Ok(LockOutcome::Waiting)
    );
    // A still holds its read lock while it waits.
    assert_eq!(held(&t, A, 1), vec![(Shared, 0, 9)]);
    assert!(matches!(
        posix(&mut t, C, 1, Exclusive, r(0, 0)),
        LockOutcome::Conflict(_)
    ));
    t.unlock(B, "f", LockSpace::Posix, 1, r(0, 9), 0).unwrap();
    assert_eq!(grants(&mut t), vec![(A, 5, Ok(()))]);
    assert_eq!(held(&t, A, 1), vec![(Exclusive, 0, 9)]);
    check(&t);
}

#[test]
fn the_two_namespaces_never_conflict() {
    let mut t = table();
    assert_eq!(
        flock(&mut t, A, 0, 1, Exclusive, false),
        LockOutcome::Granted
    );
    assert_eq!(
        posix(&mut t, B, 1, Exclusive, LockRange::WHOLE),
        LockOutcome::Granted
    );
    assert!(matches!(
        flock(&mut t, B, 0, 1, Shared, false),
        LockOutcome::Conflict(_)
    ));
    assert!(matches!(
        posix(&mut t, A, 1, Shared, r(3, 3)),
        LockOutcome::Conflict(_)
    ));
    check(&t);
}

#[test]
fn flock_is_one_whole_file_lock_per_owner() {
    let mut t = table();
    // A range given with a flock is the whole file.
    t.lock(A, req(0, LockSpace::Flock, 1, Shared, r(10, 20), false), 0)
        .unwrap();
    let c = t
        .test(B, "f", LockSpace::Flock, 1, Exclusive, r(0, 0))
        .unwrap();
    assert_eq!(c.range, LockRange::WHOLE);
    // Converting in place when nobody else holds it.
    assert_eq!(
        flock(&mut t, A, 0, 1, Exclusive, false),
        LockOutcome::Granted
    );
    assert_eq!(t.locks(), 1);
    assert_eq!(flock(&mut t, A, 0, 1, Shared, false), LockOutcome::Granted);
    assert_eq!(flock(&mut t, B, 0, 1, Shared, false), LockOutcome::Granted);
    // A refused non-blocking upgrade keeps the shared lock.
    assert!(matches!(
        flock(&mut t, A, 0, 1, Exclusive, false),
        LockOutcome::Conflict(_)
    ));
    assert!(
        t.test(C, "f", LockSpace::Flock, 1, Exclusive, LockRange::WHOLE)
            .is_some()
    );
    assert_eq!(t.locks(), 2);
    t.unlock(A, "f", LockSpace::Flock, 1, r(0, 0), 0).unwrap();
    assert_eq!(t.locks(), 1);
    check(&t);
}

#[test]
fn two_flock_readers_upgrading_together_do_not_wait_for_ever() {
    let mut t = table();
    flock(&mut t, A, 0, 1, Shared, false);
    flock(&mut t, B, 0, 1, Shared, false);
    // A waiting upgrade drops the old lock first (as Linux does)...
    assert_eq!(
        flock(&mut t, A, 10, 1, Exclusive, true),
        LockOutcome::Waiting
    );
    assert_eq!(t.locks(), 1);
    // ...so B's upgrade is granted at once, and A's when B lets go.
    assert_eq!(
        flock(&mut t, B, 20, 1, Exclusive, true),
        LockOutcome::Granted
    );
    assert_eq!(grants(&mut t), vec![]);
    t.unlock(B, "f", LockSpace::Flock, 1, LockRange::WHOLE, 0)
        .unwrap();
    assert_eq!(grants(&mut t), vec![(A, 10, Ok(()))]);
    check(&t);
}

#[test]
fn waiters_are_granted_in_arrival_order_when_the_lock_goes_away() {
    let mut t = table();
    posix(&mut t, A, 1, Exclusive, r(0, 99));
    assert_eq!(
        posix_wait(&mut t, B, 1, 1, Exclusive, r(0, 9)),
        Ok(LockOutcome::Waiting)
    );
    assert_eq!(
        posix_wait(&mut t, C, 2, 1, Exclusive, r(5, 5)),
        Ok(LockOutcome::Waiting)
    );
    assert_eq!(
        posix_wait(&mut t, C, 3, 2, Shared, r(50, 50)),
        Ok(LockOutcome::Waiting)
    );
    assert_eq!(t.waiters(), 3);
    assert_eq!(grants(&mut t), vec![]);
    // Unlocking part of A's lock grants only the waiter it was in the way of.
    t.unlock(A, "f", LockSpace::Posix, 1, r(40, 99), 0).unwrap();
    assert_eq!(grants(&mut t), vec![(C, 3, Ok(()))]);
    // B came before C's owner 1 and both want byte 5: B wins, C waits on.
    t.unlock(A, "f", LockSpace::Posix, 1, LockRange::WHOLE, 0)
        .unwrap();
    assert_eq!(grants(&mut t), vec![(B, 1, Ok(()))]);
    assert_eq!(held(&t, B, 1), vec![(Exclusive, 0, 9)]);
    t.unlock(B, "f", LockSpace::Posix, 1, LockRange::WHOLE, 0)
        .unwrap();
    assert_eq!(grants(&mut t), vec![(C, 2, Ok(()))]);
    assert_eq!(t.waiters(), 0);
    check(&t);
}

#[test]
fn every_reader_waiting_behind_a_writer_is_granted_at_once() {
    let mut t = table();
    flock(&mut t, A, 0, 1, Exclusive, false);
    for (n, node) in [B, C, 4, 5].into_iter().enumerate() {
        assert_eq!(
            flock(&mut t, node, n as u64, 1, Shared, true),
            LockOutcome::Waiting
        );
    }
    t.release(A, "f", LockSpace::Flock, 1, 0);
    let got: Vec<NodeId> = grants(&mut t)
        .into_iter()
        .map(|(n, _, r)| {
            assert_eq!(r, Ok(()));
            n
        })
        .collect();
    assert_eq!(got, vec![B, C, 4, 5]);
    assert_eq!(t.locks(), 4);
    check(&t);
}

#[test]
fn a_wait_that_would_close_a_cycle_across_nodes_is_a_deadlock() {
    let mut t = table();
    posix(&mut t, A, 1, Exclusive, r(0, 0));
    posix(&mut t, B, 1, Exclusive, r(1, 1));
    // A waits on B: fine.
    assert_eq!(
        posix_wait(&mut t, A, 10, 1, Exclusive, r(1, 1)),
        Ok(LockOutcome::Waiting)
    );
    // B waiting on A would close the cycle.
    assert_eq!(
        posix_wait(&mut t, B, 20, 1, Exclusive, r(0, 0)),
        Err(LockError::Deadlock)
    );
    // Through a third owner, on another file, too.
    posix(&mut t, C, 1, Exclusive, r(2, 2));
    assert_eq!(
        posix_wait(&mut t, B, 21, 1, Exclusive, r(2, 2)),
        Ok(LockOutcome::Waiting)
    );
    let mut other = req(30, LockSpace::Posix, 1, Exclusive, r(0, 0), true);
    other.path = "g".into();
    assert_eq!(t.lock(A, other.clone(), 0), Ok(LockOutcome::Granted));
    other.nonce = 31;
    assert_eq!(t.lock(C, other, 0), Err(LockError::Deadlock));
    // Another owner on node A waiting on B is no cycle.
    assert_eq!(
        posix_wait(&mut t, A, 40, 2, Exclusive, r(1, 1)),
        Ok(LockOutcome::Waiting)
    );
    // Nothing was queued for the refused ones.
    assert_eq!(t.waiters(), 3);
    check(&t);
}

#[test]
fn a_node_that_stops_renewing_loses_its_locks_after_the_lease() {
    let mut t = table();
    t.lock(
        A,
        req(0, LockSpace::Posix, 1, Exclusive, r(0, 9), false),
        1_000,
    )
    .unwrap();
    t.lock(
        B,
        req(0, LockSpace::Flock, 1, Exclusive, LockRange::WHOLE, false),
        1_000,
    )
    .unwrap();
    t.lock(C, req(7, LockSpace::Posix, 1, Shared, r(5, 5), true), 2_000)
        .unwrap();
    assert_eq!(t.poll_timeout(), Some(1_000 + LEASE));
    // B renews, A does not.
    t.renew(B, LEASE);
    t.renew(C, LEASE);
    t.handle_timeout(1_000 + LEASE - 1);
    assert_eq!(t.locks_of(A), 1);
    t.handle_timeout(1_000 + LEASE);
    assert_eq!(t.locks_of(A), 0);
    assert_eq!(t.locks_of(B), 1);
    // A's lapse grants C's wait.
    assert_eq!(grants(&mut t), vec![(C, 7, Ok(()))]);
    assert_eq!(t.poll_timeout(), Some(2 * LEASE));
    check(&t);
    // A renewal from a node with nothing held creates nothing.
    t.renew(A, LEASE * 3);
    assert_eq!(t.locks_of(A), 0);
    assert_eq!(t.usage.len(), 2);
}

#[test]
fn a_node_gone_from_membership_loses_its_locks_and_waits_at_once() {
    let mut t = table();
    posix(&mut t, A, 1, Exclusive, r(0, 9));
    posix(&mut t, B, 1, Exclusive, r(10, 19));
    assert_eq!(
        posix_wait(&mut t, B, 3, 1, Exclusive, r(0, 0)),
        Ok(LockOutcome::Waiting)
    );
    assert_eq!(
        posix_wait(&mut t, C, 4, 1, Exclusive, r(5, 15)),
        Ok(LockOutcome::Waiting)
    );
    t.node_gone(B, 5);
    // B's wait is dropped silently (nobody to tell); C still waits on A.
    assert_eq!(grants(&mut t), vec![]);
    assert_eq!(t.waiters(), 1);
    t.node_gone(A, 6);
    assert_eq!(grants(&mut t), vec![(C, 4, Ok(()))]);
    assert_eq!(t.locks(), 1);
    // A grant does not renew: C's lease runs from its request.
    assert_eq!(t.poll_timeout(), Some(LEASE));
    t.node_gone(A, 7);
    check(&t);
}

#[test]
fn a_release_drops_only_that_owners_locks_and_cancels_its_waits() {
    let mut t = table();
    posix(&mut t, A, 1, Exclusive, r(0, 9));
    posix(&mut t, A, 2, Shared, r(20, 29));
    posix(&mut t, B, 1, Shared, r(20, 29));
    posix(&mut t, C, 9, Exclusive, r(40, 49));
    assert_eq!(
        posix_wait(&mut t, A, 8, 1, Exclusive, r(40, 40)),
        Ok(LockOutcome::Waiting)
    );
    assert_eq!(
        posix_wait(&mut t, C, 9, 3, Exclusive, r(5, 5)),
        Ok(LockOutcome::Waiting)
    );
    // Node B cannot release A's owner 1: it names its own owner 1.
    t.release(B, "f", LockSpace::Posix, 1, 0);
    assert_eq!(held(&t, A, 1), vec![(Exclusive, 0, 9)]);
    assert!(held(&t, B, 1).is_empty());
    assert_eq!(grants(&mut t), vec![]);
    t.release(A, "f", LockSpace::Posix, 1, 0);
    assert_eq!(
        grants(&mut t),
        vec![(A, 8, Err(LockError::Cancelled)), (C, 9, Ok(()))]
    );
    assert_eq!(held(&t, A, 2), vec![(Shared, 20, 29)]);
    // Releasing the other namespace touches nothing here.
    t.release(A, "f", LockSpace::Flock, 2, 0);
    assert_eq!(held(&t, A, 2), vec![(Shared, 20, 29)]);
    check(&t);
}

#[test]
fn an_interrupted_waiter_is_cancelled_and_never_granted() {
    let mut t = table();
    posix(&mut t, A, 1, Exclusive, r(0, 9));
    assert_eq!(
        posix_wait(&mut t, B, 5, 1, Exclusive, r(0, 9)),
        Ok(LockOutcome::Waiting)
    );
    assert!(!t.cancel(A, 5), "only the waiter's own node cancels it");
    assert!(t.cancel(B, 5));
    assert!(!t.cancel(B, 5));
    t.unlock(A, "f", LockSpace::Posix, 1, LockRange::WHOLE, 0)
        .unwrap();
    assert_eq!(grants(&mut t), vec![]);
    assert_eq!(t.locks(), 0);
    assert!(t.files.is_empty() && t.usage.is_empty());
}

#[test]
fn locks_and_waiters_are_bounded_per_node_and_in_all() {
    let cfg = LockConfig {
        lease_us: LEASE,
        max_locks_per_node: 3,
        max_waiters_per_node: 1,
        max_locks: 5,
        max_waiters: 2,
        ..LockConfig::default()
    };
    let mut t = LockTable::new(cfg);
    for i in 0..3 {
        assert_eq!(
            posix(&mut t, A, 1, Exclusive, r(i * 10, i * 10)),
            LockOutcome::Granted
        );
    }
    assert_eq!(
        t.lock(
            A,
            req(0, LockSpace::Posix, 2, Shared, r(100, 100), false),
            0
        ),
        Err(LockError::TooManyLocks)
    );
    // Replacing or merging within the bound is fine.
    assert_eq!(
        posix(&mut t, A, 1, Exclusive, r(0, 10)),
        LockOutcome::Granted
    );
    assert_eq!(t.locks_of(A), 2);
    // An unlock that splits past the bound is refused, and changes nothing.
    posix(&mut t, A, 1, Shared, r(50, 59));
    assert_eq!(
        t.unlock(A, "f", LockSpace::Posix, 1, r(55, 55), 0),
        Err(LockError::TooManyLocks)
    );
    assert_eq!(
        held(&t, A, 1),
        vec![(Exclusive, 0, 10), (Exclusive, 20, 20), (Shared, 50, 59)]
    );
    // The table's own bound.
    posix(&mut t, B, 1, Shared, r(100, 100));
    posix(&mut t, B, 1, Shared, r(102, 102));
    assert_eq!(
        t.lock(
            C,
            req(0, LockSpace::Posix, 1, Shared, r(200, 200), false),
            0
        ),
        Err(LockError::TooManyLocks)
    );
    // Waiters.
    assert_eq!(
        posix_wait(&mut t, B, 1, 1, Exclusive, r(0, 0)),
        Ok(LockOutcome::Waiting)
    );
    assert_eq!(
        posix_wait(&mut t, B, 2, 1, Exclusive, r(20, 20)),
        Err(LockError::TooManyWaiters)
    );
    assert_eq!(
        posix_wait(&mut t, C, 3, 1, Exclusive, r(0, 0)),
        Ok(LockOutcome::Waiting)
    );
    assert_eq!(
        posix_wait(&mut t, 4, 4, 1, Exclusive, r(0, 0)),
        Err(LockError::TooManyWaiters)
    );
    // A release never fails, whatever the bounds.
    t.release(A, "f", LockSpace::Posix, 1, 0);
    assert_eq!(t.locks_of(A), 0);
    // B got byte 0 (its third lock, merged with nothing); C waits on B.
    assert_eq!(grants(&mut t), vec![(B, 1, Ok(()))]);
    check(&t);
}

#[test]
fn a_granted_waiter_past_its_nodes_bound_is_told_so() {
    let cfg = LockConfig {
        max_locks_per_node: 1,
        ..LockConfig::default()
    };
    let mut t = LockTable::new(cfg);
    posix(&mut t, A, 1, Exclusive, r(0, 0));
    let mut g = req(9, LockSpace::Posix, 1, Exclusive, r(0, 0), true);
    g.path = "g".into();
    assert_eq!(t.lock(B, g, 0), Ok(LockOutcome::Granted));
    assert_eq!(
        posix_wait(&mut t, B, 10, 1, Exclusive, r(0, 0)),
        Ok(LockOutcome::Waiting)
    );
    t.unlock(A, "f", LockSpace::Posix, 1, LockRange::WHOLE, 0)
        .unwrap();
    assert_eq!(grants(&mut t), vec![(B, 10, Err(LockError::TooManyLocks))]);
    check(&t);
}

#[test]
fn malformed_requests_are_refused() {
    let mut t = table();
    assert_eq!(LockRange::new(5, 4), None);
    assert_eq!(
        posix(&mut t, A, 1, Exclusive, r(0, 0)),
        LockOutcome::Granted
    );
    assert_eq!(
        posix_wait(&mut t, B, 1, 1, Exclusive, r(0, 0)),
        Ok(LockOutcome::Waiting)
    );
    assert_eq!(
        posix_wait(&mut t, B, 1, 2, Exclusive, r(0, 0)),
        Err(LockError::DuplicateNonce)
    );
    let mut long = req(2, LockSpace::Posix, 1, Shared, r(0, 0), false);
    long.path = "x".repeat(MAX_PATH + 1).into();
    assert_eq!(t.lock(A, long, 0), Err(LockError::PathTooLong));
    assert_eq!(
        t.unlock(
            A,
            &"x".repeat(MAX_PATH + 1),
            LockSpace::Posix,
            1,
            LockRange::WHOLE,
            0
        ),
        Err(LockError::PathTooLong)
    );
    check(&t);
}

/// A seeded walk through every operation keeps the invariants of
/// [`check`] and never leaves a waiter that could be granted.
#[test]
fn random_operations_keep_the_table_consistent() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let cfg = LockConfig {
        lease_us: 1_000,
        max_locks_per_node: 12,
        max_waiters_per_node: 3,
        max_locks: 30,
        max_waiters: 8,
        ..LockConfig::default()
    };
    let mut t = LockTable::new(cfg);
    let paths = ["a", "b"];
    for step in 0..20_000u64 {
        let now = step * 10;
        let node = next(4) as NodeId;
        let owner = next(2);
        let path: Arc<str> = paths[next(2) as usize].into();
        let space = if next(3) == 0 {
            LockSpace::Flock
        } else {
            LockSpace::Posix
        };
        let start = next(20);
        let range = r(
            start,
            if next(5) == 0 {
                u64::MAX
            } else {
                start + next(8)
            },
        );
        match next(10) {
            0..=4 => {
                let kind = if next(2) == 0 { Shared } else { Exclusive };
                let r = LockRequest {
                    nonce: step,
                    path,
                    space,
                    owner,
                    kind,
                    range,
                    wait: next(2) == 0,
                    pid: 0,
                };
                let _ = t.lock(node, r, now);
            }
            5 | 6 => {
                let _ = t.unlock(node, &path, space, owner, range, now);
            }
            7 => t.release(node, &path, space, owner, now),
            8 => t.renew(node, now),
            _ => {
                if next(4) == 0 {
                    t.node_gone(node, now);
                } else {
                    t.handle_timeout(now);
                }
            }
        }
        check(&t);
        while t.poll().is_some() {}
        for file in t.files.values() {
            for w in &file.waiting {
                assert!(
                    file.first_conflict(w.held.owner, w.held.kind, w.held.range)
                        .is_some(),
                    "step {step}: a grantable waiter is left waiting"
                );
            }
        }
    }
}

#[test]
fn a_downgrade_lets_waiting_readers_in() {
    let mut t = table();
    posix(&mut t, A, 1, Exclusive, r(0, 99));
    assert_eq!(
        posix_wait(&mut t, B, 4, 1, Shared, r(10, 10)),
        Ok(LockOutcome::Waiting)
    );
    flock(&mut t, A, 0, 1, Exclusive, false);
    assert_eq!(flock(&mut t, B, 5, 1, Shared, true), LockOutcome::Waiting);
    // Exclusive to shared over the waiter's byte, in each namespace.
    assert_eq!(posix(&mut t, A, 1, Shared, r(0, 49)), LockOutcome::Granted);
    assert_eq!(flock(&mut t, A, 0, 1, Shared, false), LockOutcome::Granted);
    assert_eq!(grants(&mut t), vec![(B, 4, Ok(())), (B, 5, Ok(()))]);
    assert_eq!(held(&t, A, 1), vec![(Shared, 0, 49), (Exclusive, 50, 99)]);
    check(&t);
}

#[test]
fn the_paths_a_table_keeps_are_bounded_in_bytes() {
    let cfg = LockConfig {
        max_path_bytes: 10,
        ..LockConfig::default()
    };
    let mut t = LockTable::new(cfg);
    let take = |t: &mut LockTable, path: &str| {
        let req = LockRequest {
            nonce: 1,
            path: path.into(),
            space: LockSpace::Posix,
            owner: 1,
            kind: Exclusive,
            range: LockRange::WHOLE,
            wait: false,
            pid: 0,
        };
        t.lock(A, req, 0)
    };
    assert_eq!(take(&mut t, "12345"), Ok(LockOutcome::Granted));
    assert_eq!(take(&mut t, "abcde"), Ok(LockOutcome::Granted));
    assert_eq!(take(&mut t, "x"), Err(LockError::TooManyLocks));
    // A file already kept costs nothing more; one let go frees its bytes.
    assert_eq!(take(&mut t, "12345"), Ok(LockOutcome::Granted));
    t.release(A, "12345", LockSpace::Posix, 1, 0);
    assert_eq!(take(&mut t, "x"), Ok(LockOutcome::Granted));
}
