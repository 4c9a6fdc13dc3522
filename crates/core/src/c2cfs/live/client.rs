//! The client's side: this node's opens and commits, sent to the file's
//! manager in its view, their answers, timeouts and `Forget` broadcasts.

use super::{Action, CommitMsg, CommitProtocol, MAX_PATH, MAX_PENDING, path_key};
use crate::c2cfs::{Committed, Tcommit};
use crate::coop::NodeId;
use crate::protocol::manager_of;
use std::sync::Arc;

/// A message this node sent and awaits an answer to.
#[derive(Debug)]
pub(super) struct Ask {
    /// The member asked: the only one whose answer counts.
    to: NodeId,
    deadline: u64,
    what: Asked,
}

#[derive(Debug)]
enum Asked {
    Open {
        req: u64,
    },
    Commit {
        req: u64,
        path: Arc<str>,
    },
    /// One member's part of commit `req`'s `Forget` broadcast.
    Forget {
        req: u64,
    },
}

/// An answer, as it arrived.
pub(super) enum Answer<V> {
    Opened(Option<(Tcommit, V)>),
    Committed(Option<Committed>),
    Forgot,
}

impl<V: Clone + Eq> CommitProtocol<V> {
    fn nonce(&mut self) -> u64 {
        self.next_nonce += 1;
        self.next_nonce
    }

    /// Whether a new request is refused at once: too many in flight, or a
    /// path no member would accept.
    fn refused(&self, path: &str) -> bool {
        self.requests >= MAX_PENDING || path.len() > MAX_PATH
    }

    /// Sends `msg` (made with a fresh nonce) to `to` and awaits its answer.
    fn ask(&mut self, to: NodeId, what: Asked, msg: impl FnOnce(u64) -> CommitMsg<V>, now: u64) {
        let nonce = self.nonce();
        let deadline = now.saturating_add(self.cfg.timeout_us);
        self.deadlines.insert((deadline, nonce));
        self.asks.insert(nonce, Ask { to, deadline, what });
        self.send(to, msg(nonce));
    }

    fn manager(&self, path: &str) -> NodeId {
        manager_of(path_key(path), &self.live).unwrap_or(self.me)
    }

    pub(super) fn start_open(&mut self, req: u64, path: Arc<str>, now: u64) {
        if self.refused(&path) {
            return self.actions.push_back(Action::Opened { req, answer: None });
        }
        self.requests += 1;
        let to = self.manager(&path);
        self.ask(
            to,
            Asked::Open { req },
            |nonce| CommitMsg::Open { nonce, path },
            now,
        );
    }

    pub(super) fn start_commit(
        &mut self,
        req: u64,
        path: Arc<str>,
        topen: Option<Tcommit>,
        now: u64,
    ) {
        if self.refused(&path) {
            let answer = None;
            return self.actions.push_back(Action::Committed { req, answer });
        }
        self.requests += 1;
        let to = self.manager(&path);
        let what = Asked::Commit {
            req,
            path: path.clone(),
        };
        let msg = |nonce| CommitMsg::Commit { nonce, path, topen };
        self.ask(to, what, msg, now);
    }

    /// An answer from `from` to the message with `nonce`.
    pub(super) fn on_answer(&mut self, from: NodeId, nonce: u64, answer: Answer<V>, now: u64) {
        let Some(ask) = self.asks.get(&nonce) else {
            self.counters.late_answers += 1;
            return;
        };
        if ask.to != from {
            return self.violation(from, "an answer from a node that was not asked");
        }
        let kind_matches = matches!(
            (&ask.what, &answer),
            (Asked::Open { .. }, Answer::Opened(_))
                | (Asked::Commit { .. }, Answer::Committed(_))
                | (Asked::Forget { .. }, Answer::Forgot)
        );
        if !kind_matches {
            return self.violation(from, "an answer of another kind than the request");
        }
        let Some(ask) = self.take_ask(nonce) else {
            return;
        };
        match (ask.what, answer) {
            (Asked::Open { req }, Answer::Opened(answer)) => self.finish_open(req, answer),
            (Asked::Commit { req, .. }, Answer::Committed(Some(done))) => {
                self.finish_commit(req, Some(done));
            }
            (Asked::Commit { req, path }, _) => self.broadcast_forget(req, path, now),
            (Asked::Forget { req }, _) => self.forgot(req),
            (Asked::Open { req }, _) => self.finish_open(req, None),
        }
    }

    fn take_ask(&mut self, nonce: u64) -> Option<Ask> {
        let ask = self.asks.remove(&nonce)?;
        self.deadlines.remove(&(ask.deadline, nonce));
        Some(ask)
    }

    fn finish_open(&mut self, req: u64, answer: Option<(Tcommit, V)>) {
        self.requests -= 1;
        self.actions.push_back(Action::Opened { req, answer });
    }

    fn finish_commit(&mut self, req: u64, answer: Option<Committed>) {
        self.requests -= 1;
        self.actions.push_back(Action::Committed { req, answer });
    }

    /// Commit `req` was not recorded (or nobody said so in time): every
    /// live member, this node included, drops any entry for `path` before
    /// the close completes, so no manager answers an open from an entry
    /// that predates the write (see the module doc).
    fn broadcast_forget(&mut self, req: u64, path: Arc<str>, now: u64) {
        self.counters.forgets += 1;
        self.forgetting.insert(req, self.live.len());
        for to in self.live.clone() {
            let path = path.clone();
            let msg = |nonce| CommitMsg::Forget { nonce, path };
            self.ask(to, Asked::Forget { req }, msg, now);
        }
    }

    /// One member answered (or timed out on) commit `req`'s `Forget`.
    fn forgot(&mut self, req: u64) {
        let Some(left) = self.forgetting.get_mut(&req) else {
            return;
        };
        *left -= 1;
        if *left == 0 {
            self.forgetting.remove(&req);
            self.finish_commit(req, None);
        }
    }

    /// The ask `nonce` timed out or its member left: it completes as if
    /// answered `None`.
    pub(super) fn expire(&mut self, nonce: u64, now: u64) {
        let Some(ask) = self.take_ask(nonce) else {
            return;
        };
        match ask.what {
            Asked::Open { req } => self.finish_open(req, None),
            Asked::Commit { req, path } => self.broadcast_forget(req, path, now),
            Asked::Forget { req } => self.forgot(req),
        }
    }

    /// The members changed: asks to members that left will not be answered.
    pub(super) fn expire_asks_to_leavers(&mut self, now: u64) {
        let mut gone: Vec<u64> = (self.asks.iter())
            .filter(|(_, ask)| !self.is_member(ask.to))
            .map(|(&nonce, _)| nonce)
            .collect();
        gone.sort_unstable();
        for nonce in gone {
            self.expire(nonce, now);
        }
    }
}
