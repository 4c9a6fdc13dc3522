//! The client's side: this node's opens and commits, sent to the file's
//! manager in its view, their answers, timeouts and `Forget` broadcasts.

use super::{
    Action, CommitMsg, CommitProtocol, FirstBlock, MAX_PATH, MAX_PENDING, Version, manager_key,
    path_key,
};
use crate::c2cfs::{Committed, Tcommit};
use crate::coop::NodeId;
use crate::protocol::manager_of;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// This node's `Tlocal` per file (by path key): the `Tcommit` of the
/// version it last opened or took in, at most `capacity` files, the
/// oldest entry going first. A hint for the manager (whether to serve an
/// open's first block), never a claim another node relies on.
#[derive(Debug)]
pub(super) struct Tlocal {
    capacity: usize,
    files: HashMap<u64, Tcommit>,
    /// Keys in insertion order, with stale ones skipped when reached.
    order: VecDeque<u64>,
}

impl Tlocal {
    pub(super) fn new(capacity: usize) -> Tlocal {
        Tlocal {
            capacity: capacity.max(1),
            files: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    pub(super) fn get(&self, key: u64) -> Option<Tcommit> {
        self.files.get(&key).copied()
    }

    pub(super) fn set(&mut self, key: u64, tcommit: Tcommit) {
        if self.files.insert(key, tcommit).is_none() {
            self.order.push_back(key);
        }
        while self.files.len() > self.capacity {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            self.files.remove(&old);
        }
        if self.order.len() > 2 * self.capacity {
            let files = &self.files;
            self.order.retain(|k| files.contains_key(k));
        }
    }

    pub(super) fn remove(&mut self, key: u64) {
        self.files.remove(&key);
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.files.len()
    }
}

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
        path: Arc<str>,
        /// Whether the open reads the file (its answer is then this
        /// node's `Tlocal`).
        reads: bool,
        /// Whether the open asked for its first block to be served.
        first: bool,
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
    /// The answer, and whether the first block is served.
    Opened(Option<(Tcommit, V)>, bool),
    Committed(Option<Committed>),
    Forgot,
}

impl<V: Version> CommitProtocol<V> {
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
        manager_of(manager_key(path), &self.live).unwrap_or(self.me)
    }

    /// Opens `path`: asks its manager, and if the open `reads`, for the
    /// first block too, unless the manager is this node (no round trip to
    /// save) or an open of the file is in flight here already (its read of
    /// the block serves this one as well).
    pub(super) fn start_open(&mut self, req: u64, path: Arc<str>, reads: bool, now: u64) {
        if self.refused(&path) {
            return self.actions.push_back(Action::Opened { req, answer: None });
        }
        self.requests += 1;
        let to = self.manager(&path);
        let key = path_key(&path);
        let opening = self.opening.entry(key).or_default();
        *opening += 1;
        let ask = reads && self.cfg.serve_first && to != self.me && *opening == 1;
        let first = ask.then(|| FirstBlock {
            tlocal: self.tlocal.get(key),
        });
        if first.is_some() {
            let route = manager_key(&path);
            self.actions.push_back(Action::AwaitFirst { route });
        }
        let what = Asked::Open {
            req,
            path: path.clone(),
            reads,
            first: first.is_some(),
        };
        let msg = |nonce| CommitMsg::Open { nonce, path, first };
        self.ask(to, what, msg, now);
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
            (Asked::Open { .. }, Answer::Opened(..))
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
            (
                Asked::Open {
                    req,
                    path,
                    reads,
                    first,
                },
                Answer::Opened(answer, served),
            ) => {
                if answer.as_ref().is_some_and(|(_, v)| !v.is_of(&path)) {
                    // An honest manager never answers with another path's
                    // version (it filters its table): nothing is read.
                    self.violation(from, "an open answered with another path's version");
                    return self.finish_open(req, &path, None, false, None);
                }
                let served = (first && served).then_some(from);
                self.finish_open(req, &path, answer, reads, served);
            }
            (Asked::Commit { req, path }, Answer::Committed(Some(done))) => {
                self.took_in(&path, Some(done));
                self.finish_commit(req, Some(done));
            }
            (Asked::Commit { req, path }, _) => self.broadcast_forget(req, path, now),
            (Asked::Forget { req }, _) => self.forgot(req),
            (Asked::Open { req, path, .. }, _) => self.finish_open(req, &path, None, false, None),
        }
    }

    fn take_ask(&mut self, nonce: u64) -> Option<Ask> {
        let ask = self.asks.remove(&nonce)?;
        self.deadlines.remove(&(ask.deadline, nonce));
        Some(ask)
    }

    /// Open `req` of `path` is answered; if it `reads`, the answer is
    /// this node's `Tlocal`; `served` names the manager serving the first
    /// block, if it does (and was asked to).
    fn finish_open(
        &mut self,
        req: u64,
        path: &Arc<str>,
        answer: Option<(Tcommit, V)>,
        reads: bool,
        served: Option<NodeId>,
    ) {
        self.requests -= 1;
        let key = path_key(path);
        if let Some(n) = self.opening.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                self.opening.remove(&key);
            }
        }
        if let Some((tcommit, version)) = &answer {
            if reads {
                // The node reads this version now: its Tlocal.
                self.tlocal.set(key, *tcommit);
            }
            if let Some(manager) = served {
                self.actions.push_back(Action::ReadFirst {
                    path: path.clone(),
                    version: version.clone(),
                    manager,
                });
            }
        }
        self.actions.push_back(Action::Opened { req, answer });
    }

    /// A commit of `path` by this node is done: if its copy is the latest
    /// (the writer's node takes the version in), that is its `Tlocal`.
    fn took_in(&mut self, path: &str, done: Option<Committed>) {
        let key = path_key(path);
        match done {
            Some(c) if c.valid => self.tlocal.set(key, c.tcommit),
            _ => self.tlocal.remove(key),
        }
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
        self.took_in(&path, None);
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
            Asked::Open { req, path, .. } => self.finish_open(req, &path, None, false, None),
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
