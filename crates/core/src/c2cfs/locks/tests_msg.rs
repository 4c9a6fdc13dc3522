//! The manager's judgement of lock messages (roles).

use super::*;

const A: NodeId = 1;
const B: NodeId = 2;

fn lock(nonce: u64, kind: LockKind, wait: bool) -> LockMsg {
    LockMsg::Lock(LockRequest {
        nonce,
        path: "f".into(),
        space: LockSpace::Posix,
        owner: 1,
        kind,
        range: LockRange::WHOLE,
        wait,
        pid: 0,
    })
}

fn mine(_: &str) -> Managed {
    Managed::Yes
}

fn answer(t: &mut LockTable, from: NodeId, msg: LockMsg) -> LockAnswer {
    match t.handle_message(from, msg, true, mine, 0) {
        Ok(Some(LockMsg::Answer { answer, .. })) => answer,
        other => panic!("no answer: {other:?}"),
    }
}

#[test]
fn a_node_cannot_unlock_release_or_cancel_another_nodes_lock_or_wait() {
    let mut t = LockTable::new(LockConfig::default());
    assert_eq!(
        answer(&mut t, A, lock(1, LockKind::Exclusive, false)),
        LockAnswer::Done(Ok(LockOutcome::Granted))
    );
    assert_eq!(
        answer(&mut t, B, lock(2, LockKind::Exclusive, true)),
        LockAnswer::Done(Ok(LockOutcome::Waiting))
    );
    // B names A's lock owner id and A's nonce: it only ever acts as B.
    let unlock = LockMsg::Unlock {
        nonce: 3,
        path: "f".into(),
        space: LockSpace::Posix,
        owner: 1,
        range: LockRange::WHOLE,
    };
    assert_eq!(
        answer(&mut t, B, unlock),
        LockAnswer::Done(Ok(LockOutcome::Granted))
    );
    let release = LockMsg::Release {
        nonce: 6,
        path: "f".into(),
        space: LockSpace::Posix,
        owner: 1,
    };
    assert_eq!(
        answer(&mut t, B, release),
        LockAnswer::Done(Ok(LockOutcome::Granted))
    );
    assert_eq!(t.locks_of(A), 1);
    // B's own release cancelled B's own wait.
    assert_eq!(t.waiters(), 0);
    assert_eq!(
        answer(&mut t, B, lock(4, LockKind::Exclusive, true)),
        LockAnswer::Done(Ok(LockOutcome::Waiting))
    );
    assert_eq!(
        t.handle_message(A, LockMsg::Cancel { nonce: 4 }, true, mine, 0),
        Ok(None)
    );
    assert_eq!(t.waiters(), 1);
    // Only A's own unlock grants B, as a Granted to B.
    let unlock = LockMsg::Unlock {
        nonce: 5,
        path: "f".into(),
        space: LockSpace::Posix,
        owner: 1,
        range: LockRange::WHOLE,
    };
    answer(&mut t, A, unlock);
    let granted: Vec<_> = std::iter::from_fn(|| t.poll_message()).collect();
    assert!(granted.iter().any(|(to, m)| *to == B
        && *m
            == LockMsg::Granted {
                nonce: 4,
                result: Ok(())
            }));
}

#[test]
fn messages_from_non_members_answers_to_a_manager_and_malformed_requests_are_violations() {
    let mut t = LockTable::new(LockConfig::default());
    assert_eq!(
        t.handle_message(A, lock(1, LockKind::Shared, false), false, mine, 0),
        Err(LockViolation::NotLive)
    );
    assert_eq!(t.locks(), 0);
    let forged = LockMsg::Granted {
        nonce: 1,
        result: Ok(()),
    };
    assert_eq!(
        t.handle_message(A, forged, true, mine, 0),
        Err(LockViolation::AnswerToManager)
    );
    answer(&mut t, A, lock(1, LockKind::Exclusive, false));
    answer(&mut t, B, lock(2, LockKind::Exclusive, true));
    assert_eq!(
        t.handle_message(B, lock(2, LockKind::Exclusive, true), true, mine, 0),
        Err(LockViolation::Malformed(LockError::DuplicateNonce))
    );
}

#[test]
fn a_node_that_does_not_manage_the_file_holds_nothing_for_it() {
    let mut t = LockTable::new(LockConfig::default());
    let not_mine = |_: &str| Managed::No;
    for msg in [
        lock(1, LockKind::Exclusive, true),
        LockMsg::Test {
            nonce: 1,
            path: "f".into(),
            space: LockSpace::Flock,
            owner: 1,
            kind: LockKind::Shared,
            range: LockRange::WHOLE,
        },
    ] {
        assert_eq!(
            t.handle_message(A, msg, true, not_mine, 0),
            Ok(Some(LockMsg::Answer {
                nonce: 1,
                answer: LockAnswer::NotManager
            }))
        );
    }
    assert_eq!((t.locks(), t.waiters()), (0, 0));
}

#[test]
fn while_a_new_manager_settles_only_reclaims_and_releases_are_carried_out() {
    let mut t = LockTable::new(LockConfig::default());
    let settling = |_: &str| Managed::Settling;
    // B's new lock waits for the holders to reclaim theirs.
    assert_eq!(
        answer_with(&mut t, B, lock(1, LockKind::Exclusive, false), settling),
        LockAnswer::NotManager
    );
    let LockMsg::Lock(req) = lock(2, LockKind::Exclusive, true) else {
        unreachable!()
    };
    // A takes back what it held, without waiting even if it asked to.
    assert_eq!(
        answer_with(&mut t, A, LockMsg::Reclaim(req.clone()), settling),
        LockAnswer::Done(Ok(LockOutcome::Granted))
    );
    assert_eq!(t.waiters(), 0);
    // Once settled, B's lock meets A's.
    assert!(matches!(
        answer(&mut t, B, lock(3, LockKind::Exclusive, false)),
        LockAnswer::Done(Ok(LockOutcome::Conflict(_)))
    ));
    // A reclaim at a node that does not manage the file takes nothing.
    assert_eq!(
        answer_with(&mut t, B, LockMsg::Reclaim(req), |_| Managed::No),
        LockAnswer::NotManager
    );
    assert_eq!(t.locks(), 1);
}

fn answer_with(
    t: &mut LockTable,
    from: NodeId,
    msg: LockMsg,
    manages: impl Fn(&str) -> Managed,
) -> LockAnswer {
    match t.handle_message(from, msg, true, manages, 0) {
        Ok(Some(LockMsg::Answer { answer, .. })) => answer,
        other => panic!("no answer: {other:?}"),
    }
}
