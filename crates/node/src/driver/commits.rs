//! The driver's side of C2Cfs `exclusive` mode: it feeds the core's
//! [`CommitProtocol`] with this node's opens and commits, the peers'
//! commit messages, membership and the clock, and carries out what it
//! asks for: frames to peers, origin stats (each on a task of its own, its
//! answer back as an event), answers to the callers waiting, and the
//! first block of an open handed between the two machines: a manager's
//! `ServeFirst` becomes the block protocol's `handle_read_for`, an
//! opener's `ReadFirst` its `handle_read_asked`. Which version an open
//! reads, whom to ask, whether to serve and whom to believe is the core's;
//! the driver only names the block (`first_block`).

use super::*;
use crate::block::first_block;
use crate::origin::PathVersion;
use coopcache_core::c2cfs::live::{Action as CommitAction, CommitMsg};
use coopcache_core::c2cfs::{Committed, Tcommit};

/// What an exclusive open learns: the file's `Tcommit` (the open's
/// `Topen`) and the version to read; `None` when the manager could not say
/// (the caller asks the origin itself).
pub type OpenAnswer = Option<(Tcommit, PathVersion)>;

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
                match reads {
                    true => self.commits.handle_open(req, path, now),
                    false => self.commits.handle_ask(req, path, now),
                }
            }
            CommitEvent::Commit { path, topen, reply } => {
                let req = self.commit_waiter(CommitWaiter::Commit(reply));
                self.commits.handle_commit(req, path, topen, now);
            }
            CommitEvent::Stat { path, result } => self.commits.handle_stat(&path, result, now),
        }
    }

    /// A peer's commit message.
    pub(super) fn on_commit_msg(&mut self, from: NodeId, msg: CommitMsg<PathVersion>) {
        *self.received.entry(from).or_default() += 1;
        let now = self.clock.micros();
        self.commits.handle_message(from, msg, now);
    }

    /// Files `waiter` under a fresh request id. The machine answers every
    /// request (at once when over its own bound), so the table holds at
    /// most its requests in flight.
    fn commit_waiter(&mut self, waiter: CommitWaiter) -> u64 {
        self.next_commit_req += 1;
        self.commit_waiters.insert(self.next_commit_req, waiter);
        self.next_commit_req
    }

    /// Carries out what the commit machine decided; true if that gave the
    /// block protocol something to do (a first block served or read).
    pub(super) fn apply_commits(&mut self) -> bool {
        let mut fed = false;
        while let Some(action) = self.commits.poll() {
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
                        // forgotten the file (core: c2cfs::live). Every
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
                CommitAction::AwaitFirst { route } => {
                    let now = self.clock.micros();
                    self.protocol.expect_carried(route, now);
                }
                CommitAction::ServeFirst {
                    reader,
                    path,
                    version,
                } => {
                    self.serve_first(reader, &path, &version);
                    fed = true;
                }
                CommitAction::ReadFirst {
                    path,
                    version,
                    manager,
                } => {
                    self.read_first(path, version, manager);
                    fed = true;
                }
            }
        }
        fed
    }

    /// As the file's manager: `reader`'s open carried its read of the
    /// first block of `version` (of `path`: the core serves no other
    /// path's version).
    fn serve_first(&mut self, reader: NodeId, path: &str, version: &PathVersion) {
        let block = first_block(path, &version.version.version);
        let now = self.clock.micros();
        self.protocol.handle_read_for(reader, block, now);
    }

    /// This node's open of `path` is served the first block of `version`
    /// by `manager`: its read starts now, before the open's caller hears
    /// the answer, so the block's answers (on the manager's link, behind
    /// the `Opened`) find it, and the caller's read of the block joins it.
    fn read_first(&mut self, path: Arc<str>, version: PathVersion, manager: NodeId) {
        let block = first_block(&path, &version.version.version);
        self.waiting.entry(block).or_insert_with(|| Waiting {
            path,
            version: Arc::new(version.version),
            replies: Vec::new(),
            error: None,
        });
        let now = self.clock.micros();
        self.protocol.handle_read_asked(block, manager, now);
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
