//! The manager's side: opens answered from the table or after a stat,
//! commits applied in arrival order with the origin's own version, and
//! forgets.

use super::{
    Action, CommitMsg, CommitProtocol, FirstBlock, MAX_PATH, MAX_STATS, MAX_WAITERS, Version,
    manager_key, path_key,
};
use crate::c2cfs::Tcommit;
use crate::coop::NodeId;
use crate::protocol::manager_of;
use std::sync::Arc;

/// What a member asks of a file's manager.
#[derive(Clone, Copy, Debug)]
pub(super) enum Request {
    /// An open, and whether to serve its first block (with the opener's
    /// `Tlocal`).
    Open(Option<FirstBlock>),
    /// A commit with the writer's `Topen` (`None`: a removal, or a file
    /// renamed over this one).
    Commit(Option<Tcommit>),
}

/// A request waiting on a file's stat.
#[derive(Clone, Copy, Debug)]
pub(super) struct Waiter {
    from: NodeId,
    nonce: u64,
    request: Request,
}

/// A file's stat in flight, and who waits on it.
#[derive(Debug)]
pub(super) struct Stat {
    path: Arc<str>,
    /// Requests that arrived before the stat in flight was issued: its
    /// answer is theirs, in arrival order.
    asked: Vec<Waiter>,
    /// Requests that arrived since: they take the next stat.
    next: Vec<Waiter>,
    /// A `Forget` or a membership change came while the stat was in
    /// flight: it may predate a commit recorded elsewhere, so its answer
    /// records nothing.
    tainted: bool,
}

impl<V: Version> CommitProtocol<V> {
    /// Whether this node answers requests for `path` now: it manages the
    /// file in its own view, and that view has been stable long enough.
    fn answers(&self, path: &str, now: u64) -> bool {
        now >= self.stable_at && manager_of(manager_key(path), &self.live) == Some(self.me)
    }

    /// An open or a commit from `from`.
    pub(super) fn on_request(
        &mut self,
        from: NodeId,
        nonce: u64,
        path: Arc<str>,
        request: Request,
        now: u64,
    ) {
        if !self.is_member(from) {
            return self.violation(from, "an open or commit from a non-member");
        }
        if path.len() > MAX_PATH {
            return self.violation(from, "a path longer than MAX_PATH bytes");
        }
        let key = path_key(&path);
        let waiter = Waiter {
            from,
            nonce,
            request,
        };
        if !self.answers(&path, now) {
            return self.answer_none(waiter);
        }
        if matches!(request, Request::Open(_)) && self.answer_from_table(waiter, key, &path) {
            return;
        }
        let full = self.stats.len() >= MAX_STATS;
        match self.stats.get_mut(&key) {
            Some(s) if *s.path != *path || s.asked.len() + s.next.len() >= MAX_WAITERS => {
                self.answer_none(waiter);
            }
            Some(s) => s.next.push(waiter),
            None if full => self.answer_none(waiter),
            None => {
                let stat = Stat {
                    path: path.clone(),
                    asked: vec![waiter],
                    next: Vec::new(),
                    tainted: false,
                };
                self.stats.insert(key, stat);
                self.issue_stat(path);
            }
        }
    }

    /// Answers an open from the table if it knows the file's version.
    fn answer_from_table(&mut self, w: Waiter, key: u64, path: &Arc<str>) -> bool {
        // Another path's entry under the same key: this open stats the
        // origin, whose answer then takes the entry over.
        let known = self.table.peek(key).and_then(|o| o.version);
        if !known.is_some_and(|v| v.is_of(path)) {
            return false;
        }
        let o = self.table.open(key);
        let Some(version) = o.version else {
            return false;
        };
        self.counters.opens_from_table += 1;
        self.answer_open(w, path, Some((o.tcommit, version)));
        true
    }

    /// Answers open `w` of `path`, and serves its first block with the
    /// answer unless the opener's copy is the latest (the module doc).
    fn answer_open(&mut self, w: Waiter, path: &Arc<str>, answer: Option<(Tcommit, V)>) {
        let Request::Open(first) = w.request else {
            return;
        };
        // An entry of another path under the same key lends nothing: the
        // opener goes to the origin, which is always safe.
        let answer = answer.filter(|(_, version)| version.is_of(path));
        let served = match (&answer, first) {
            (Some((tcommit, version)), Some(first)) => {
                self.cfg.serve_first
                    && w.from != self.me
                    && first.tlocal != Some(*tcommit)
                    && version.has_first_block()
            }
            _ => false,
        };
        let version = answer.as_ref().map(|(_, v)| v.clone());
        let nonce = w.nonce;
        self.send(
            w.from,
            CommitMsg::Opened {
                nonce,
                answer,
                served,
            },
        );
        if let (true, Some(version)) = (served, version) {
            self.counters.first_served += 1;
            let path = path.clone();
            let reader = w.from;
            self.actions.push_back(Action::ServeFirst {
                reader,
                path,
                version,
            });
        }
    }

    fn issue_stat(&mut self, path: Arc<str>) {
        self.counters.stats += 1;
        self.actions.push_back(Action::Stat { path });
    }

    fn answer_none(&mut self, w: Waiter) {
        self.counters.answered_none += 1;
        let msg = match w.request {
            Request::Open(_) => CommitMsg::Opened {
                nonce: w.nonce,
                answer: None,
                served: false,
            },
            Request::Commit(_) => CommitMsg::Committed {
                nonce: w.nonce,
                answer: None,
            },
        };
        self.send(w.from, msg);
    }

    /// The origin answered the stat of `path`: its waiters get the answer,
    /// and those that came since take a new stat.
    pub(super) fn stat_done(&mut self, path: &str, result: Result<V, ()>) {
        let key = path_key(path);
        let Some(s) = self.stats.get_mut(&key) else {
            return;
        };
        if *s.path != *path {
            return;
        }
        let asked = std::mem::take(&mut s.asked);
        let tainted = std::mem::replace(&mut s.tainted, false);
        let path = s.path.clone();
        if s.next.is_empty() {
            self.stats.remove(&key);
        } else {
            s.asked = std::mem::take(&mut s.next);
            self.issue_stat(path.clone());
        }
        match result {
            _ if tainted => {
                self.table.forget(key);
                asked.into_iter().for_each(|w| self.answer_none(w));
            }
            Err(()) => self.stat_failed(key, asked),
            Ok(version) => {
                for w in asked {
                    self.apply(key, &path, w, &version);
                }
            }
        }
    }

    /// One waiter of a stat of `path` that found `version`, in arrival
    /// order.
    fn apply(&mut self, key: u64, path: &Arc<str>, w: Waiter, version: &V) {
        let msg = match w.request {
            Request::Open(_) => {
                // No commit was applied since the stat was issued (they
                // wait for their own stats), so the origin's version is
                // at least as new as anything the entry stands for. An
                // entry of another path under the same key is that
                // file's, not this one's: it goes, and this path takes a
                // fresh one.
                let other = self.table.peek(key).and_then(|o| o.version);
                if other.is_some_and(|v| !v.is_of(path)) {
                    self.table.forget(key);
                }
                self.table.open(key);
                let o = self.table.record(key, version.clone());
                let answer = o.map(|o| (o.tcommit, o.version.unwrap_or_else(|| version.clone())));
                return self.answer_open(w, path, answer);
            }
            Request::Commit(topen) => {
                self.counters.commits += 1;
                let done = match topen {
                    Some(topen) => self.table.commit(key, w.from, topen, version.clone()),
                    None => self.table.commit_without_open(key),
                };
                // A racing commit leaves no valid copy and, in the table,
                // no version: commits that raced may have reached the
                // origin in another order than here. This version is the
                // origin's own, asked after every commit of the batch
                // arrived, so it is at least as new as all of them: the
                // next open need not ask again.
                self.table.record(key, version.clone());
                CommitMsg::Committed {
                    nonce: w.nonce,
                    answer: Some(done),
                }
            }
        };
        self.send(w.from, msg);
    }

    /// The stat failed (the file is gone, or the origin is down): the entry
    /// goes, opens go to the origin themselves. A commit is recorded as
    /// the entry's removal (the next open stats the origin), which is what
    /// a removal's commit asks for; its writer's copy is not valid.
    fn stat_failed(&mut self, key: u64, asked: Vec<super::manager::Waiter>) {
        for w in asked {
            match w.request {
                Request::Open(_) => self.answer_none(w),
                Request::Commit(_) => {
                    self.counters.commits += 1;
                    let done = self.table.commit_without_open(key);
                    let answer = Some(done);
                    self.send(
                        w.from,
                        CommitMsg::Committed {
                            nonce: w.nonce,
                            answer,
                        },
                    );
                }
            }
        }
        self.table.forget(key);
    }

    /// A writer's `Forget`: drop any entry for the path, and keep a stat in
    /// flight from recording (it may predate the write).
    pub(super) fn on_forget(&mut self, from: NodeId, nonce: u64, path: Arc<str>) {
        if !self.is_member(from) {
            return self.violation(from, "a forget from a non-member");
        }
        if path.len() > MAX_PATH {
            return self.violation(from, "a path longer than MAX_PATH bytes");
        }
        let key = path_key(&path);
        self.table.forget(key);
        if let Some(s) = self.stats.get_mut(&key) {
            s.tainted = true;
        }
        self.send(from, CommitMsg::Forgot { nonce });
    }

    /// A membership change: every waiter is answered `None`, and stats in
    /// flight record nothing.
    pub(super) fn drop_stat_waiters(&mut self) {
        let mut dropped = Vec::new();
        for s in self.stats.values_mut() {
            s.tainted = true;
            dropped.append(&mut s.asked);
            dropped.append(&mut s.next);
        }
        dropped.into_iter().for_each(|w| self.answer_none(w));
    }
}
