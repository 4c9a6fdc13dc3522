//! C2Cfs `exclusive` mode in a seed's run: opens that read (the manager
//! answers the version, and serves its first block with the answer), writes
//! (an open for the writer's `Topen`, the origin rewritten, a commit at the
//! manager), and the origin stats managers ask for. Every request must be
//! answered within the mode's bound; the blocks an open reads are checked as
//! every read is.

use super::Msg;
use super::World;
use crate::faults::plan::Mode;
use crate::faults::report::Violation;
use crate::faults::version::{self, Listed, Version};
use coopcache_core::c2cfs::exclusive::CommitMsg;
use coopcache_core::c2cfs::{Committed, Tcommit};
use coopcache_core::coop::NodeId;
use coopcache_core::node;
use coopcache_core::protocol::BlockId;
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet};

/// What a request is for.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// An open to read the file's first block.
    Open,
    /// A writer's open, before it rewrites the file with `blocks` blocks.
    WriteOpen { blocks: u32 },
    /// A writer's commit.
    Commit,
    /// A listing of the directory.
    List,
    /// A writer's change of the directory, after its write reached the
    /// origin.
    Change,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Open => "open",
            Kind::WriteOpen { .. } => "write's open",
            Kind::Commit => "commit",
            Kind::List => "listing",
            Kind::Change => "directory change",
        }
    }
}

/// A request in flight.
#[derive(Clone, Copy, Debug)]
struct Request {
    node: NodeId,
    path: u32,
    kind: Kind,
    started: u64,
}

/// The requests in flight, by request id (unique in the run).
#[derive(Default)]
pub(super) struct Requests {
    by_id: BTreeMap<u64, Request>,
    next: u64,
    /// Whom each node's open went to: (node, incarnation, nonce) to the
    /// manager asked, as the opener's machine sent it.
    asked: BTreeMap<(NodeId, u32, u64), NodeId>,
    /// Versions (node, file id) a liar answered a node's open with, as the
    /// manager that node asked: the trust model lets a file's manager
    /// answer what it likes.
    vouched: BTreeSet<(NodeId, u64)>,
}

impl Requests {
    fn start(&mut self, node: NodeId, path: u32, kind: Kind, now: u64) -> u64 {
        self.next += 1;
        let request = Request {
            node,
            path,
            kind,
            started: now,
        };
        self.by_id.insert(self.next, request);
        self.next
    }

    /// Node `node`'s request `req`, answered: none if it never made it.
    fn take(&mut self, node: NodeId, req: u64) -> Option<Request> {
        match self.by_id.get(&req) {
            Some(r) if r.node == node => self.by_id.remove(&req),
            _ => None,
        }
    }

    /// Node `node` crashed: its requests are gone with it.
    pub(super) fn lost(&mut self, node: NodeId) {
        self.by_id.retain(|_, r| r.node != node);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Node `node` (incarnation `incarnation`) sends `msg` to `to`.
    pub(super) fn sent(&mut self, (node, incarnation): (NodeId, u32), to: NodeId, msg: &Msg) {
        if let node::Msg::Commit(CommitMsg::Open { nonce, .. }) = *msg {
            self.asked.insert((node, incarnation, nonce), to);
        }
    }

    /// Liar `from` delivers `msg` to node `to` (incarnation `incarnation`):
    /// an answer to an open `to` asked it is the manager's to give.
    pub(super) fn delivered_from_liar(
        &mut self,
        from: NodeId,
        (to, incarnation): (NodeId, u32),
        msg: &Msg,
    ) {
        if let node::Msg::Commit(CommitMsg::Opened {
            nonce,
            answer: Some((_, v)),
            ..
        }) = *msg
            && self.asked.get(&(to, incarnation, nonce)) == Some(&from)
        {
            self.vouched.insert((to, v.file));
        }
    }
}

impl World {
    /// Node `node` opens `path` to read it.
    pub(super) fn open(&mut self, node: NodeId, path: u32) {
        let req = self.requests.start(node, path, Kind::Open, self.now);
        let now = self.now;
        if let Some(p) = self.proto(node) {
            p.handle_open(req, version::name(path), true, now);
        }
        self.note(("open", node, node, None));
        self.collect(node);
    }

    /// An honest node rewrites `path` with `blocks` blocks: it opens it
    /// for its `Topen`, writes the origin when answered, then commits.
    pub(super) fn write(&mut self, path: u32, blocks: u32) {
        let writers: Vec<NodeId> = (0..self.plan.nodes)
            .filter(|&n| {
                !self.plan.is_byzantine(n)
                    && !self.plan.is_private(n)
                    && self.incarnation(n).is_some()
            })
            .collect();
        if writers.is_empty() {
            return self.origin.change(path, blocks);
        }
        let node = writers[self.rng.random_range(0..writers.len())];
        let req = (self.requests).start(node, path, Kind::WriteOpen { blocks }, self.now);
        let now = self.now;
        if let Some(p) = self.proto(node) {
            p.handle_open(req, version::name(path), false, now);
        }
        self.note(("write", node, node, None));
        self.collect(node);
    }

    /// Node `id`'s open `req` is answered: its caller reads the first
    /// block of the version answered, or of the origin's current one if
    /// none ([`World::caller_reads`], once the node's other outputs are
    /// carried out); a writer rewrites the file and commits it.
    pub(super) fn opened(&mut self, id: NodeId, req: u64, answer: Option<(Tcommit, Version)>) {
        let Some(r) = self.requests.take(id, req) else {
            return self.fail(Violation::Internal {
                node: id,
                what: "answers to opens it never made",
                count: 1,
            });
        };
        match answer {
            Some((_, v)) => {
                self.counts.opens_answered += 1;
                self.check_version(id, r.path, v);
            }
            None => self.counts.opens_unanswered += 1,
        }
        let now = self.now;
        let name = version::name(r.path);
        match r.kind {
            Kind::Open => {
                let block = match answer {
                    Some((_, v)) => version::first_block(&name, &v),
                    None => BlockId {
                        file: self.origin.open(r.path).0,
                        index: 0,
                        route: version::route(r.path),
                    },
                };
                self.callers.push_back(block);
            }
            Kind::WriteOpen { blocks } => {
                self.origin.change(r.path, blocks);
                let topen = answer.map(|(t, _)| t);
                let commit = self.requests.start(id, r.path, Kind::Commit, now);
                // The directory's listing changed too: its manager is
                // told at the same time, as the daemon's commit does.
                let change = self.requests.start(id, r.path, Kind::Change, now);
                if let Some(p) = self.proto(id) {
                    p.handle_commit(commit, name, topen, now);
                    p.handle_dir_changed(change, version::DIR.into(), false, now);
                }
            }
            Kind::Commit | Kind::List | Kind::Change => self.fail(Violation::Internal {
                node: id,
                what: "open answers to other requests",
                count: 1,
            }),
        }
    }

    /// An honest node's open of `path` answered `v`: a version the file
    /// has had, unless a liar the node asked answered it (the trust model
    /// lets a file's manager answer what it likes: its bytes then fail at
    /// the origin). Judged by whom the opener's machine asked, not by its
    /// view now, which may have moved the file since.
    fn check_version(&mut self, id: NodeId, path: u32, v: Version) {
        if self.plan.is_byzantine(id)
            || self.origin.had(path, v.file)
            || self.requests.vouched.contains(&(id, v.file))
        {
            return;
        }
        self.fail(Violation::ForgedVersion {
            node: id,
            path: version::name(path).to_string(),
            file: v.file,
        });
    }

    /// The caller of an answered open of node `id` reads `block` (joining
    /// the read its manager serves, if still in flight).
    pub(super) fn caller_reads(&mut self, id: NodeId, block: BlockId) {
        let now = self.now;
        if !self.plan.is_byzantine(id) {
            self.check.started(id, block, now);
        }
        if let Some(p) = self.proto(id) {
            p.handle_read(block, now);
        }
        self.note(("read", id, id, Some(block)));
    }

    /// Node `id`'s commit `req` is done.
    pub(super) fn committed(&mut self, id: NodeId, req: u64, answer: Option<Committed>) {
        if self.requests.take(id, req).is_none() {
            return self.fail(Violation::Internal {
                node: id,
                what: "answers to commits it never made",
                count: 1,
            });
        }
        if answer.is_some() {
            self.counts.commits += 1;
        }
    }

    /// Node `node` lists the directory every file is in.
    pub(super) fn list(&mut self, node: NodeId) {
        let req = self.requests.start(node, 0, Kind::List, self.now);
        let now = self.now;
        if let Some(p) = self.proto(node) {
            p.handle_list(req, version::DIR.into(), now);
        }
        self.note(("list", node, node, None));
        self.collect(node);
    }

    /// Node `id`'s listing `req` is answered: from the directory's
    /// manager (a listing of the directory asked, whatever liars forge),
    /// or `None` (its caller lists the origin).
    pub(super) fn listed(&mut self, id: NodeId, req: u64, listing: Option<Listed>) {
        match self.requests.take(id, req) {
            Some(r) if matches!(r.kind, Kind::List) => {}
            _ => {
                return self.fail(Violation::Internal {
                    node: id,
                    what: "answers to listings it never made",
                    count: 1,
                });
            }
        }
        let Some(l) = listing else {
            self.counts.listings_unanswered += 1;
            return;
        };
        self.counts.listings_answered += 1;
        if *l.dir != *version::DIR {
            self.fail(Violation::Internal {
                node: id,
                what: "listings of another directory",
                count: 1,
            });
        }
    }

    /// Node `id`'s change `req` of the directory is noted.
    pub(super) fn noted(&mut self, id: NodeId, req: u64, _assured: bool) {
        match self.requests.take(id, req) {
            Some(r) if matches!(r.kind, Kind::Change) => {}
            _ => self.fail(Violation::Internal {
                node: id,
                what: "answers to directory changes it never made",
                count: 1,
            }),
        }
    }

    /// The origin listing node `node`'s listing machine asked for
    /// finished: `/data` holds every file; another directory (a liar's)
    /// is empty.
    pub(super) fn origin_listed(
        &mut self,
        node: NodeId,
        incarnation: u32,
        dir: std::sync::Arc<str>,
    ) {
        if self.incarnation(node) != Some(incarnation) {
            return;
        }
        let failed = !self.calm && self.rng.random_bool(self.plan.origin_error);
        let files = match *dir == *version::DIR {
            true => self.origin.len(),
            false => 0,
        };
        let listing = (!failed).then(|| Listed {
            dir: dir.clone(),
            files,
        });
        let now = self.now;
        if let Some(p) = self.proto(node) {
            p.handle_listed(&dir, listing, now);
        }
        self.note(("listed", node, node, None));
        self.collect(node);
    }

    /// The origin stat node `node`'s commit machine asked for finished.
    pub(super) fn stat_done(&mut self, node: NodeId, incarnation: u32, path: u32) {
        if self.incarnation(node) != Some(incarnation) {
            return;
        }
        let failed = !self.calm && self.rng.random_bool(self.plan.origin_error);
        // A path no file has (a liar asked for it) is an error too.
        let result = match failed || path >= self.origin.len() {
            true => Err(()),
            false => Ok(Version {
                path,
                file: self.origin.open(path).0,
            }),
        };
        let now = self.now;
        if let Some(p) = self.proto(node) {
            p.handle_stat(&version::name(path), result, now);
        }
        self.note(("stat", node, node, None));
        self.collect(node);
    }

    /// Node `id` starts reading `block`, the first block of a version its
    /// open's manager is serving: checked from now, as any read.
    pub(super) fn first_read(&mut self, id: NodeId, block: BlockId) {
        self.counts.first_served += 1;
        if !self.plan.is_byzantine(id) {
            self.check.started(id, block, self.now);
        }
        self.note(("first-read", id, id, Some(block)));
    }

    /// The oldest request in flight, if it has waited too long.
    pub(super) fn overdue_request(&self) -> Result<(), Violation> {
        let bound_us = match self.plan.mode {
            Mode::Liveness => self.plan.read_bound_us(),
            Mode::Safety => self.plan.hang_bound_us(),
        };
        let oldest = self.requests.by_id.values().min_by_key(|r| r.started);
        match oldest {
            Some(r) if self.now - r.started > bound_us => Err(Violation::SlowRequest {
                node: r.node,
                what: r.kind.name(),
                path: version::name(r.path).to_string(),
                waited_us: self.now - r.started,
                bound_us,
            }),
            _ => Ok(()),
        }
    }
}
