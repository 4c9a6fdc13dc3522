//! A tiny cluster for the tests: machines stepped by hand, a message pump
//! (one FIFO wire), and a fake origin mapping paths to increasing versions.

use super::{Action, CommitConfig, CommitMsg, CommitProtocol, manager_key};
use crate::c2cfs::{Committed, Tcommit};
use crate::coop::NodeId;
use crate::protocol::manager_of;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

pub(super) type Node = CommitProtocol<u64>;

/// A stat a node asked for, not answered yet.
pub(super) struct PendingStat {
    pub node: NodeId,
    pub path: Arc<str>,
    /// The origin's version when it was issued.
    pub issued_at: Option<u64>,
}

pub(super) struct Cluster {
    pub nodes: BTreeMap<NodeId, Node>,
    pub origin: HashMap<Arc<str>, u64>,
    /// `(from, to, msg)` in sending order.
    pub wire: VecDeque<(NodeId, NodeId, CommitMsg<u64>)>,
    pub stats: VecDeque<PendingStat>,
    /// Whether [`Cluster::run`] answers stats from the origin.
    pub auto_stat: bool,
    pub opened: HashMap<u64, Option<(Tcommit, u64)>>,
    pub committed: HashMap<u64, Option<Committed>>,
    /// `(at, from, why)`.
    pub violations: Vec<(NodeId, NodeId, &'static str)>,
    /// First blocks managers served: `(manager, reader, path, version)`.
    pub served: Vec<(NodeId, NodeId, Arc<str>, u64)>,
    /// First-block reads openers started: `(opener, path, version,
    /// manager)`.
    pub reads_first: Vec<(NodeId, Arc<str>, u64, NodeId)>,
    pub now: u64,
    next_req: u64,
}

pub(super) const TIMEOUT: u64 = 1_000;
pub(super) const STABLE: u64 = 10_000;

pub(super) fn cfg() -> CommitConfig {
    CommitConfig {
        capacity: 64,
        timeout_us: TIMEOUT,
        stable_us: STABLE,
        serve_first: true,
    }
}

/// A path whose manager is `want` among `members`, for each pair given.
pub(super) fn path_managed_by(views: &[(&[NodeId], NodeId)]) -> Arc<str> {
    (0..100_000)
        .map(|i| format!("/data/f{i}"))
        .find(|p| {
            (views.iter()).all(|&(members, want)| manager_of(manager_key(p), members) == Some(want))
        })
        .expect("some path fits")
        .into()
}

impl Cluster {
    /// Nodes `ids`, each knowing all of them, past the stable period.
    pub(super) fn new(ids: &[NodeId]) -> Cluster {
        let mut nodes = BTreeMap::new();
        for &id in ids {
            let mut node = Node::new(id, u64::from(id), cfg()).unwrap();
            if ids.len() > 1 {
                node.set_members(ids, 0);
            }
            nodes.insert(id, node);
        }
        Cluster {
            nodes,
            origin: HashMap::new(),
            wire: VecDeque::new(),
            stats: VecDeque::new(),
            auto_stat: true,
            opened: HashMap::new(),
            committed: HashMap::new(),
            violations: Vec::new(),
            served: Vec::new(),
            reads_first: Vec::new(),
            now: STABLE,
            next_req: 0,
        }
    }

    pub(super) fn node(&mut self, id: NodeId) -> &mut Node {
        self.nodes.get_mut(&id).expect("a node of the cluster")
    }

    /// Takes every node's actions into the wire and the records.
    pub(super) fn collect(&mut self) {
        for (&id, node) in &mut self.nodes {
            while let Some(action) = node.poll() {
                match action {
                    Action::Send { to, msg } => {
                        assert_ne!(to, id, "a node never sends to itself");
                        self.wire.push_back((id, to, msg));
                    }
                    Action::Stat { path } => {
                        let issued_at = self.origin.get(&path).copied();
                        self.stats.push_back(PendingStat {
                            node: id,
                            path,
                            issued_at,
                        });
                    }
                    Action::Opened { req, answer } => {
                        assert!(self.opened.insert(req, answer).is_none(), "twice");
                    }
                    Action::Committed { req, answer } => {
                        assert!(self.committed.insert(req, answer).is_none(), "twice");
                    }
                    Action::Violation { from, why } => self.violations.push((id, from, why)),
                    Action::ServeFirst {
                        reader,
                        path,
                        version,
                    } => self.served.push((id, reader, path, version)),
                    Action::AwaitFirst { .. } => {}
                    Action::ReadFirst {
                        path,
                        version,
                        manager,
                    } => {
                        self.reads_first.push((id, path, version, manager));
                    }
                }
            }
        }
    }

    /// Delivers the oldest message on the wire (to a node still running).
    pub(super) fn deliver_one(&mut self) -> bool {
        let Some((from, to, msg)) = self.wire.pop_front() else {
            return false;
        };
        let now = self.now;
        if let Some(node) = self.nodes.get_mut(&to) {
            node.handle_message(from, msg, now);
        }
        self.collect();
        true
    }

    /// Answers the `at`th pending stat with `result`.
    pub(super) fn answer_stat(&mut self, at: usize, result: Result<u64, ()>) {
        let s = self.stats.remove(at).expect("a pending stat");
        let now = self.now;
        self.node(s.node).handle_stat(&s.path, result, now);
        self.collect();
    }

    /// Delivers every message and (with `auto_stat`) answers every stat
    /// from the origin, until nothing moves.
    pub(super) fn run(&mut self) {
        self.collect();
        loop {
            if self.deliver_one() {
                continue;
            }
            if !self.auto_stat || self.stats.is_empty() {
                return;
            }
            let path = self.stats[0].path.clone();
            let version = self.origin.get(&path).copied().ok_or(());
            self.answer_stat(0, version);
        }
    }

    fn req(&mut self) -> u64 {
        self.next_req += 1;
        self.next_req
    }

    /// Node `id` opens `path`; runs the cluster; returns the request id.
    pub(super) fn open(&mut self, id: NodeId, path: &Arc<str>) -> u64 {
        let (req, now) = (self.req(), self.now);
        self.node(id).handle_open(req, path.clone(), now);
        self.run();
        req
    }

    /// [`Cluster::open`], answered.
    pub(super) fn opened(&mut self, id: NodeId, path: &Arc<str>) -> Option<(Tcommit, u64)> {
        let req = self.open(id, path);
        self.opened.remove(&req).expect("the open completed")
    }

    /// Node `id` commits `path`; runs the cluster; returns the request id.
    pub(super) fn commit(&mut self, id: NodeId, path: &Arc<str>, topen: Option<Tcommit>) -> u64 {
        let (req, now) = (self.req(), self.now);
        self.node(id).handle_commit(req, path.clone(), topen, now);
        self.run();
        req
    }

    /// [`Cluster::commit`], answered.
    pub(super) fn committed(
        &mut self,
        id: NodeId,
        path: &Arc<str>,
        topen: Option<Tcommit>,
    ) -> Option<Committed> {
        let req = self.commit(id, path, topen);
        self.committed.remove(&req).expect("the commit completed")
    }

    /// A writer wrote `path` through to the origin: its new version.
    pub(super) fn write(&mut self, path: &Arc<str>) -> u64 {
        let v = self.origin.entry(path.clone()).or_insert(0);
        *v += 1;
        *v
    }

    /// Stats node `id` issued so far.
    pub(super) fn stats_by(&mut self, id: NodeId) -> u64 {
        self.node(id).counters().stats
    }

    /// Moves the clock to `now` and fires every node's due timers.
    pub(super) fn advance(&mut self, now: u64) {
        self.now = now;
        for node in self.nodes.values_mut() {
            node.handle_timeout(now);
        }
        self.collect();
    }
}
