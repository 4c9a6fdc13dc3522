//! Warm-ups placed across the cluster: `coopcache warm` on one node reads
//! each file on the file's manager (its C2Cfs manager, [`manager_key`]
//! over the live members), so a dataset warmed from one node lands in every
//! node's memory rather than in the one that asked, and the reading
//! itself is spread. Under Greedy a warm-up larger than one node's memory
//! would otherwise keep only what that node holds; under N-Chance it would
//! push the rest to random peers, a block at a time, through its chances.
//!
//! One sans-IO machine per node, both sides:
//!
//! - **Asking.** [`WarmPlacement::handle_call`] for each file of a
//!   warm-up: read here ([`WarmAction::ReadHere`]) when this node is the
//!   file's manager, when the algorithm does not share blocks between
//!   nodes (Base, Direct: a block read elsewhere would never serve this
//!   node), when the origin is private (a peer would read its own), or when
//!   too many files are out already; otherwise a [`WarmMsg::Warm`] to the
//!   manager. Anything but its `Read` answer (busy, not the manager in its
//!   view, could not read the file, no answer within the deadline, the
//!   manager gone) turns into `ReadHere`: a warm-up never loses a file, at
//!   worst it reads it twice.
//! - **Serving.** A `Warm` is accepted from a live member only, for a path
//!   this node manages (else `NotManager`, as views can differ for a
//!   moment), at most [`MAX_SERVING_PER_PEER`] files per member and
//!   [`MAX_SERVING`] in all at once (else `Busy`): a member can make this
//!   node read the origin, at the rate of its own warm-ups, never
//!   unboundedly. [`WarmAction::Serve`] asks the driver to read the file
//!   through this node's cache; [`WarmPlacement::handle_served`] answers.
//! - **Whom to believe.** A `Warmed` counts only from the member its nonce
//!   was sent to; one with a nonce no longer awaited (answered after its
//!   deadline) is dropped.

use crate::c2cfs::exclusive::{live_with, manager_key};
use crate::coop::NodeId;
use crate::protocol::manager_of;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

#[cfg(test)]
mod tests;

/// Files of this node's warm-ups out at other nodes at once; more are read
/// here.
pub const MAX_ASKS: usize = 1024;

/// Files this node reads for its peers at once.
pub const MAX_SERVING: usize = 16;

/// Files one member may have this node read at once (a warm-up reads four
/// files at a time).
pub const MAX_SERVING_PER_PEER: usize = 4;

/// A warm-up message between a node and a file's manager; neither names
/// its sender.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WarmMsg {
    /// Node to the file's manager: read `path` through your cache.
    Warm {
        /// The asker's id for this request.
        nonce: u64,
        /// The file, relative to the origin's root.
        path: Arc<str>,
    },
    /// The manager's answer.
    Warmed {
        /// The request's nonce.
        nonce: u64,
        /// What came of it.
        answer: WarmAnswer,
    },
}

/// What a manager answers a `Warm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarmAnswer {
    /// The file was read whole through its cache: `bytes` bytes.
    Read {
        /// The file's size as read.
        bytes: u64,
    },
    /// The file could not be read there (an origin error, a private
    /// origin): the asker reads it itself and reports what it gets.
    NotRead,
    /// It reads too many files at once.
    Busy,
    /// It does not manage the path in its view.
    NotManager,
}

/// What the node must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WarmAction {
    /// Send `msg` to `to`.
    Send {
        /// The member.
        to: NodeId,
        /// The message.
        msg: WarmMsg,
    },
    /// Read request `req`'s file here.
    ReadHere {
        /// The driver's request id.
        req: u64,
    },
    /// Request `req`'s file was read into `at`'s cache.
    Placed {
        /// The driver's request id.
        req: u64,
        /// The member that read it.
        at: NodeId,
        /// Bytes it read.
        bytes: u64,
    },
    /// Read `path` through this node's cache for `from`, then call
    /// [`WarmPlacement::handle_served`].
    Serve {
        /// The member that asked.
        from: NodeId,
        /// Its nonce.
        nonce: u64,
        /// The file.
        path: Arc<str>,
    },
    /// `from` sent a message its role does not allow: dropped.
    Violation {
        /// The member, as its link authenticated it.
        from: NodeId,
        /// Why.
        why: &'static str,
    },
}

/// The machine's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarmConfig {
    /// Whether this node's warm-ups are placed on managers at all (an
    /// algorithm that shares blocks, an origin that is not private).
    pub places: bool,
    /// Whether it reads files for its peers (its origin is not private).
    pub serves: bool,
    /// How long any answer may take.
    pub timeout_us: u64,
    /// And how much longer per MiB of the file.
    pub per_mib_us: u64,
}

impl WarmConfig {
    /// Placing and serving as `places` and `serves` say; an answer within
    /// 30 s plus 1 s per MiB (an origin slower than 1 MiB/s turns the
    /// file into a read here, which costs one more read of it).
    pub fn new(places: bool, serves: bool) -> WarmConfig {
        WarmConfig {
            places,
            serves,
            timeout_us: 30_000_000,
            per_mib_us: 1_000_000,
        }
    }
}

/// A file out at a manager.
#[derive(Clone, Copy, Debug)]
struct Ask {
    req: u64,
    to: NodeId,
    deadline: u64,
}

/// Counters, for metrics and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WarmCounters {
    /// Files this node's warm-ups had read elsewhere.
    pub placed: u64,
    /// Files asked of a manager and then read here after all.
    pub fell_back: u64,
    /// Files this node read for its peers.
    pub served: u64,
    /// Messages dropped as violations.
    pub violations: u64,
}

/// One node's warm-up placement, asking and serving.
#[derive(Debug)]
pub struct WarmPlacement {
    me: NodeId,
    cfg: WarmConfig,
    live: Vec<NodeId>,
    next_nonce: u64,
    asks: BTreeMap<u64, Ask>,
    /// Files read for peers: (member, nonce).
    serving: BTreeSet<(NodeId, u64)>,
    actions: VecDeque<WarmAction>,
    counters: WarmCounters,
}

impl WarmPlacement {
    /// The machine of node `me`.
    pub fn new(me: NodeId, cfg: WarmConfig) -> WarmPlacement {
        WarmPlacement {
            me,
            cfg,
            live: vec![me],
            next_nonce: 0,
            asks: BTreeMap::new(),
            serving: BTreeSet::new(),
            actions: VecDeque::new(),
            counters: WarmCounters::default(),
        }
    }

    /// Its counters.
    pub fn counters(&self) -> WarmCounters {
        self.counters
    }

    /// Files out at managers, and files read for peers.
    pub fn in_flight(&self) -> (usize, usize) {
        (self.asks.len(), self.serving.len())
    }

    /// The member that reads `path` when this node warms it.
    pub fn place_of(&self, path: &str) -> NodeId {
        manager_of(manager_key(path), &self.live).unwrap_or(self.me)
    }

    /// The next action.
    pub fn poll(&mut self) -> Option<WarmAction> {
        self.actions.pop_front()
    }

    /// When [`WarmPlacement::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.asks.values().map(|a| a.deadline).min()
    }

    /// A warm-up of this node reaches `path`, of `size` bytes: answered as
    /// request `req` by `ReadHere` or `Placed`.
    pub fn handle_call(&mut self, req: u64, path: Arc<str>, size: u64, now: u64) {
        let to = self.place_of(&path);
        if !self.cfg.places || to == self.me || self.asks.len() >= MAX_ASKS {
            return self.actions.push_back(WarmAction::ReadHere { req });
        }
        self.next_nonce += 1;
        let nonce = self.next_nonce;
        let mib = size.div_ceil(1 << 20);
        let deadline = now
            .saturating_add(self.cfg.timeout_us)
            .saturating_add(mib.saturating_mul(self.cfg.per_mib_us));
        self.asks.insert(nonce, Ask { req, to, deadline });
        let msg = WarmMsg::Warm { nonce, path };
        self.actions.push_back(WarmAction::Send { to, msg });
    }

    /// A warm-up message from `from`, the link's authenticated identity.
    pub fn handle_message(&mut self, from: NodeId, msg: WarmMsg, _now: u64) {
        match msg {
            WarmMsg::Warm { nonce, path } => self.on_warm(from, nonce, path),
            WarmMsg::Warmed { nonce, answer } => self.on_warmed(from, nonce, answer),
        }
    }

    fn on_warm(&mut self, from: NodeId, nonce: u64, path: Arc<str>) {
        if from == self.me || !self.live.contains(&from) {
            return self.violation(from, "a warm-up asked by a node that is not a live member");
        }
        if self.serving.contains(&(from, nonce)) {
            return self.violation(from, "a warm-up asked again while its file is read");
        }
        let answer = if !self.cfg.serves {
            WarmAnswer::NotRead
        } else if self.place_of(&path) != self.me {
            WarmAnswer::NotManager
        } else if self.serving.len() >= MAX_SERVING
            || self.serving.range((from, 0)..=(from, u64::MAX)).count() >= MAX_SERVING_PER_PEER
        {
            WarmAnswer::Busy
        } else {
            self.serving.insert((from, nonce));
            self.actions
                .push_back(WarmAction::Serve { from, nonce, path });
            return;
        };
        self.send(from, WarmMsg::Warmed { nonce, answer });
    }

    fn on_warmed(&mut self, from: NodeId, nonce: u64, answer: WarmAnswer) {
        let Some(ask) = self.asks.get(&nonce) else {
            // Answered after its deadline (the file was read here), or
            // never asked: nothing waits on it either way.
            return;
        };
        if ask.to != from {
            return self.violation(from, "a warm-up answered by a member it was not asked of");
        }
        let Ask { req, to, .. } = self.asks.remove(&nonce).expect("looked up above");
        match answer {
            WarmAnswer::Read { bytes } => {
                self.counters.placed += 1;
                let at = to;
                self.actions
                    .push_back(WarmAction::Placed { req, at, bytes });
            }
            WarmAnswer::NotRead | WarmAnswer::Busy | WarmAnswer::NotManager => self.fall_back(req),
        }
    }

    /// The driver read (`Some(bytes)`) or failed to read (`None`) the file
    /// `from` asked for as `nonce`.
    pub fn handle_served(&mut self, from: NodeId, nonce: u64, bytes: Option<u64>) {
        if !self.serving.remove(&(from, nonce)) {
            // The member left meanwhile: nobody waits for the answer.
            return;
        }
        self.counters.served += 1;
        let answer = match bytes {
            Some(bytes) => WarmAnswer::Read { bytes },
            None => WarmAnswer::NotRead,
        };
        self.send(from, WarmMsg::Warmed { nonce, answer });
    }

    /// The live members are now `members` (this node is added if absent):
    /// files out at a member that left are read here, and what a member
    /// that left asked is not answered.
    pub fn set_members(&mut self, members: &[NodeId]) {
        let live = live_with(self.me, members);
        self.fall_back_where(|a| !live.contains(&a.to));
        self.serving.retain(|(from, _)| live.contains(from));
        self.live = live;
    }

    /// Files whose manager has not answered by now are read here.
    pub fn handle_timeout(&mut self, now: u64) {
        self.fall_back_where(|a| a.deadline <= now);
    }

    /// The files out at managers that `gone` says will not answer are read
    /// here, in the order they were asked.
    fn fall_back_where(&mut self, gone: impl Fn(&Ask) -> bool) {
        let mut reqs = Vec::new();
        self.asks.retain(|_, a| {
            let keep = !gone(a);
            if !keep {
                reqs.push(a.req);
            }
            keep
        });
        for req in reqs {
            self.fall_back(req);
        }
    }

    fn fall_back(&mut self, req: u64) {
        self.counters.fell_back += 1;
        self.actions.push_back(WarmAction::ReadHere { req });
    }

    fn send(&mut self, to: NodeId, msg: WarmMsg) {
        self.actions.push_back(WarmAction::Send { to, msg });
    }

    fn violation(&mut self, from: NodeId, why: &'static str) {
        self.counters.violations += 1;
        self.actions.push_back(WarmAction::Violation { from, why });
    }
}
