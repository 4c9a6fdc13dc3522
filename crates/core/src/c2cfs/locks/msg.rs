//! The lock messages between a node and a file's manager, and the
//! manager's judgement of who may send which (the roles of
//! docs/PROTOCOL.md). No message names its sender: `from` is the link's
//! authenticated identity, so a node holds, releases, tests, cancels and
//! renews only as itself.

use super::{
    LockConflict, LockError, LockKind, LockOutcome, LockRange, LockRequest, LockSpace, LockTable,
};
use crate::coop::NodeId;
use std::sync::Arc;
use thiserror::Error;

/// A lock message; none names its sender.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockMsg {
    /// Node to the file's manager: take a lock or wait for it.
    Lock(LockRequest),
    /// Node to the file's manager: unlock a range of what its owner holds.
    Unlock {
        /// The node's id for this request.
        nonce: u64,
        /// The file.
        path: Arc<str>,
        /// The namespace.
        space: LockSpace,
        /// The lock owner within the node.
        owner: u64,
        /// The range (the whole file for `flock`).
        range: LockRange,
    },
    /// Node to the file's manager: its owner closed the file (answered
    /// `Done(Ok(Granted))`, so the node knows it reached the manager).
    Release {
        /// The node's id for this request.
        nonce: u64,
        /// The file.
        path: Arc<str>,
        /// The namespace.
        space: LockSpace,
        /// The lock owner within the node.
        owner: u64,
    },
    /// Node to a file's new manager (membership moved the file, or its
    /// manager failed): a lock the node held at the old one, taken back.
    /// Accepted while the new manager settles, when new locks wait.
    Reclaim(LockRequest),
    /// Node to the file's manager: `F_GETLK`.
    Test {
        /// The node's id for this request.
        nonce: u64,
        /// The file.
        path: Arc<str>,
        /// The namespace.
        space: LockSpace,
        /// The lock owner within the node.
        owner: u64,
        /// The kind it would take.
        kind: LockKind,
        /// The range.
        range: LockRange,
    },
    /// Node to the manager it waits at: its waiter with this nonce was
    /// interrupted; no answer.
    Cancel {
        /// The waiting request's nonce.
        nonce: u64,
    },
    /// Node to every manager it holds locks at, each third of a lease.
    Renew,
    /// Manager to the node that asked.
    Answer {
        /// The request's nonce.
        nonce: u64,
        /// What it got.
        answer: LockAnswer,
    },
    /// Manager to a node whose request waited: granted, or why not.
    Granted {
        /// The waiting request's nonce.
        nonce: u64,
        /// Held now, or why not.
        result: Result<(), LockError>,
    },
}

/// A manager's answer to `Lock`, `Unlock` or `Test`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockAnswer {
    /// A `Lock`'s outcome or an `Unlock`'s (`Granted` for done).
    Done(Result<LockOutcome, LockError>),
    /// A `Test`'s: the first lock in the way, if any.
    Tested(Option<LockConflict>),
    /// This node does not manage the file in its view (membership moved
    /// it), or took it over so recently that its holders may not have
    /// reclaimed their locks yet: the asker asks again shortly.
    NotManager,
}

/// A message dropped and counted against its sender.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum LockViolation {
    /// From a node that is not a live member.
    #[error("lock message from a node that is not a live member")]
    NotLive,
    /// A manager's answer sent to a manager: only the node asked takes
    /// answers, matched to its own nonces.
    #[error("lock answer sent to a manager")]
    AnswerToManager,
    /// An answer or a grant for no request this node asked of the sender
    /// (or for one not in the phase it answers).
    #[error("lock answer for nothing asked of its sender")]
    Unasked,
    /// A malformed request (a path too long, a waiter's nonce reused).
    #[error("malformed lock request: {0}")]
    Malformed(LockError),
}

/// Whether this node manages a file, as [`LockTable::handle_message`]
/// asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Managed {
    /// It does: every message is carried out.
    Yes,
    /// It took the file over within the grace period: only reclaims and
    /// releases are carried out, so that no new lock takes a range its
    /// holder has not reclaimed yet.
    Settling,
    /// Another member does.
    No,
}

impl LockTable {
    /// Judge and carry out `msg` from `from` (the link's identity), as a
    /// manager: `live` says whether `from` is a live member, `manages`
    /// whether this node manages a path in its current view. Returns the
    /// answer to send back to `from`, if any; grants to waiters come
    /// through [`LockTable::poll`].
    pub fn handle_message(
        &mut self,
        from: NodeId,
        msg: LockMsg,
        live: bool,
        manages: impl Fn(&str) -> Managed,
        now: u64,
    ) -> Result<Option<LockMsg>, LockViolation> {
        if !live {
            return Err(LockViolation::NotLive);
        }
        let answer = |nonce, answer| Ok(Some(LockMsg::Answer { nonce, answer }));
        let settled = |path: &str| manages(path) == Managed::Yes;
        match msg {
            LockMsg::Lock(req) => {
                if !settled(&req.path) {
                    return answer(req.nonce, LockAnswer::NotManager);
                }
                self.take(from, req, now)
            }
            LockMsg::Reclaim(req) => {
                if manages(&req.path) == Managed::No {
                    return answer(req.nonce, LockAnswer::NotManager);
                }
                // A reclaim takes back what was held: it never waits.
                let req = LockRequest { wait: false, ..req };
                self.take(from, req, now)
            }
            LockMsg::Unlock {
                nonce,
                path,
                space,
                owner,
                range,
            } => {
                if !settled(&path) {
                    return answer(nonce, LockAnswer::NotManager);
                }
                let done = match self.unlock(from, &path, space, owner, range, now) {
                    Err(e @ LockError::PathTooLong) => return Err(LockViolation::Malformed(e)),
                    other => other.map(|()| LockOutcome::Granted),
                };
                answer(nonce, LockAnswer::Done(done))
            }
            LockMsg::Release {
                nonce,
                path,
                space,
                owner,
            } => {
                // Dropping is always safe, also while settling; at a node
                // that does not manage the file it would find nothing.
                if manages(&path) == Managed::No {
                    return answer(nonce, LockAnswer::NotManager);
                }
                self.release(from, &path, space, owner, now);
                answer(nonce, LockAnswer::Done(Ok(LockOutcome::Granted)))
            }
            LockMsg::Test {
                nonce,
                path,
                space,
                owner,
                kind,
                range,
            } => {
                if !settled(&path) {
                    return answer(nonce, LockAnswer::NotManager);
                }
                let tested = self.test(from, &path, space, owner, kind, range);
                answer(nonce, LockAnswer::Tested(tested))
            }
            LockMsg::Cancel { nonce } => {
                self.cancel(from, nonce);
                Ok(None)
            }
            LockMsg::Renew => {
                self.renew(from, now);
                Ok(None)
            }
            LockMsg::Answer { .. } | LockMsg::Granted { .. } => Err(LockViolation::AnswerToManager),
        }
    }

    /// A lock or reclaim, answered; a malformed one is a violation.
    fn take(
        &mut self,
        from: NodeId,
        req: LockRequest,
        now: u64,
    ) -> Result<Option<LockMsg>, LockViolation> {
        let nonce = req.nonce;
        let done = match self.lock(from, req, now) {
            Err(e @ (LockError::PathTooLong | LockError::DuplicateNonce)) => {
                return Err(LockViolation::Malformed(e));
            }
            other => other,
        };
        Ok(Some(LockMsg::Answer {
            nonce,
            answer: LockAnswer::Done(done),
        }))
    }

    /// The next grant to send, as the message and the node to send it to.
    pub fn poll_message(&mut self) -> Option<(NodeId, LockMsg)> {
        let g = self.poll()?;
        Some((
            g.node,
            LockMsg::Granted {
                nonce: g.nonce,
                result: g.result,
            },
        ))
    }
}
