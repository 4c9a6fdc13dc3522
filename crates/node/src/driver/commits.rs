//! The driver's side of C2Cfs `exclusive` mode: it feeds the core's node
//! with this node's opens and commits and the peers' commit messages, and
//! carries out what it asks for: frames to peers, origin stats (each on a
//! task of its own, its answer back as an event) and answers to the
//! callers waiting. Which version an open reads, whom to ask, whether to
//! serve, whom to believe, and how an open's first block passes from the
//! commit machine to the read machine are the core's
//! (`coopcache_core::node`); the driver only gives it the function that
//! names a first block ([`first_block`](crate::block::first_block)).

use super::*;
use crate::origin::PathVersion;
use coopcache_core::c2cfs::exclusive::{Action as CommitAction, CommitMsg};
use coopcache_core::c2cfs::{Committed, Tcommit};

/// What an exclusive open learns: the file's `Tcommit` (the open's
/// `Topen`) and the version to read; `None` when the manager could not say
/// (the caller asks the origin itself).
pub type OpenAnswer = Option<(Tcommit, PathVersion)>;

/// The first block of `version` of `path`: the core's node names an
/// open's first block with this.
pub fn first_block_of(path: &str, version: &PathVersion) -> BlockId {
    crate::block::first_block(path, &version.version.version)
}

/// A caller of the commit machine, waiting for its answer.
pub(super) enum CommitWaiter {
    /// An open.
    Open(oneshot::Sender<OpenAnswer>),
    /// A commit (a close after writes, a removal, a rename).
    Commit(oneshot::Sender<Option<Committed>>),
}

/// What the driver hears about C2Cfs `exclusive` mode.
pub enum CommitEvent {
    /// This node opens `path`.
    Open {
        /// The file.
        path: Arc<str>,
        /// Whether the open reads (else it only wants its `Topen`, to
        /// write).
        reads: bool,
        /// Where the answer goes.
        reply: oneshot::Sender<OpenAnswer>,
    },
    /// This node wrote `path` through to the origin (or removed it, or
    /// renamed a file over it, with `topen: None`).
    Commit {
        /// The file.
        path: Arc<str>,
        /// The `Tcommit` its open found.
        topen: Option<Tcommit>,
        /// Where the answer goes.
        reply: oneshot::Sender<Option<Committed>>,
    },
    /// The origin answered a stat the machine asked for.
    Stat {
        /// The file.
        path: Arc<str>,
        /// Its version, or `Err` if it is gone or the origin failed.
        result: Result<PathVersion, ()>,
    },
}

impl Driver {
    pub(super) fn on_commit_event(&mut self, ev: CommitEvent) {
        let now = self.clock.micros();
        match ev {
            CommitEvent::Open { path, reads, reply } => {
                let req = self.commit_waiter(CommitWaiter::Open(reply));
                self.node.handle_open(req, path, reads, now);
            }
            CommitEvent::Commit { path, topen, reply } => {
                let req = self.commit_waiter(CommitWaiter::Commit(reply));
                self.node.handle_commit(req, path, topen, now);
            }
            CommitEvent::Stat { path, result } => self.node.handle_stat(&path, result, now),
        }
    }

    /// A peer's commit message.
    pub(super) fn on_commit_msg(&mut self, from: NodeId, msg: CommitMsg<PathVersion>) {
        *self.received.entry(from).or_default() += 1;
        let now = self.clock.micros();
        self.node.handle_message(from, Msg::Commit(msg), now);
    }

    /// Files `waiter` under a fresh request id. The machine answers every
    /// request (at once when over its own bound), so the table holds at
    /// most its requests in flight.
    fn commit_waiter(&mut self, waiter: CommitWaiter) -> u64 {
        self.next_commit_req += 1;
        self.commit_waiters.insert(self.next_commit_req, waiter);
        self.next_commit_req
    }

    /// Carries out what the commit machine decided (an open's first block
    /// the core passes to its read machine itself).
    pub(super) fn apply_commit(&mut self, action: CommitAction<PathVersion>) {
        match action {
            CommitAction::Send { to, msg } => {
                if self.send(to, Wire::Commit(msg)) {
                    *self.sent.entry(to).or_default() += 1;
                }
            }
            CommitAction::Stat { path } => self.stat_origin(path),
            CommitAction::Opened { req, answer } => {
                if let Some(CommitWaiter::Open(reply)) = self.commit_waiters.remove(&req) {
                    let _ = reply.send(answer);
                }
            }
            CommitAction::Committed { req, answer } => {
                if answer.is_none() {
                    // Close-to-open then rests on every member having
                    // forgotten the file (core: c2cfs::exclusive). Every
                    // close does this for a while after a membership
                    // change: counted, logged at debug only.
                    self.metrics.unrecorded_commits.inc();
                    tracing::debug!("a commit was not recorded by the file's manager");
                }
                if let Some(CommitWaiter::Commit(reply)) = self.commit_waiters.remove(&req) {
                    let _ = reply.send(answer);
                }
            }
            CommitAction::Violation { from, why } => {
                let name = self.member_name(from);
                tracing::warn!(peer = %name, id = from, "refused a peer's commit message: {why}");
                self.metrics.violation(name, 1);
            }
            // The node joins these to its read machine and never passes
            // them on; should one come, there is nothing to carry.
            CommitAction::ServeFirst { .. }
            | CommitAction::AwaitFirst { .. }
            | CommitAction::ReadFirst { .. } => {}
        }
    }

    /// Asks the origin for `path`'s version on a task of its own; the
    /// answer comes back as [`CommitEvent::Stat`]. The machine keeps at
    /// most one stat per file and a bounded number of files in flight.
    fn stat_origin(&mut self, path: Arc<str>) {
        self.metrics.origin_stats.inc();
        let origin = self.origin.clone();
        let events = self.events.clone();
        tokio::spawn(async move {
            let result = match origin.stat(&path).await {
                Ok(version) => Ok(PathVersion {
                    path: path.clone(),
                    version,
                }),
                Err(e) => {
                    tracing::debug!(%path, error = %e, "a manager's stat failed");
                    Err(())
                }
            };
            let _ = events
                .send(Event::Commits(CommitEvent::Stat { path, result }))
                .await;
        });
    }
}
