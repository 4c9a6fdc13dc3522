//! Directory listings cached by each directory's manager, in C2Cfs's
//! `exclusive` mode (every write goes through the cluster). One machine per
//! node plays the manager for the directories rendezvous hashing gives it
//! ([`manager_of`] over the live members, by [`manager_key`] of the
//! directory's path, as a file's) and the client for its own users'
//! listings and changes. Pure state: inputs through `handle_*(.., now)`,
//! outputs through [`ListProtocol::poll`], timers through
//! [`ListProtocol::poll_timeout`] and [`ListProtocol::handle_timeout`].
//!
//! A listing asks the directory's manager, which answers from its table
//! or lists the origin once for every lister waiting ([`ListAction::List`]).
//! The point: one origin listing (an S3 `LIST`, an HTTP index, a
//! `readdir` with a stat per entry) per directory per change, not one per
//! reader per directory, and a peer's round trip instead of the origin's.
//!
//! **Freshness.** A writer, after its change reached the origin and before
//! its close (or remove, rename, `mkdir`) returns, sends
//! [`ListMsg::Changed`] for the directory and waits for the answer. The
//! manager drops its listing and marks a listing of the directory in
//! flight *stale*: a stale listing still answers the listers that asked
//! before the change arrived (their listing ran concurrently with the
//! writer's close, either answer is correct), answers later ones `None`
//! (they list the origin themselves), and is not kept. A listing in flight
//! that no change reached answers every lister, even one that asked after
//! it was issued: any close that completed before that lister asked had
//! its `Changed` answered first, so its change either reached the manager
//! (and the listing would be stale) or reached the origin before the
//! listing was issued (and the listing shows it). This needs an origin
//! whose listing shows every write completed before it (a directory, S3
//! since 2020, MinIO).
//!
//! **Membership.** As the commit machine (`c2cfs::exclusive`): on every
//! change of its view a node drops its table and every listing in flight,
//! and answers `None` for [`ListConfig::stable_us`]. A writer whose
//! manager answers that it does not manage the directory, or does not
//! answer in time, tells every live member ([`ListAction::Noted`] is
//! `assured` only if every one answered). The residual risk is the commit
//! machine's: a node whose view lags longer than `stable_us` may keep a
//! listing older than a write until its entry is dropped.
//!
//! **Keys.** A directory is named by [`path_key`] of its path; a listing
//! carries its directory ([`Listing::is_of`]), so a colliding path is
//! never answered another's listing.
//!
//! **Bounds.** The table holds at most [`ListConfig::capacity`] bytes
//! over all its listings (least recently used dropped first); a listing of
//! more than [`ListConfig::max_listing`] bytes is neither kept nor sent
//! (its listers list the origin; the manager remembers, up to
//! [`MAX_LARGE`] directories, not to list it again for them).
//!
//! [`manager_of`]: crate::protocol::manager_of

mod msg;
#[cfg(test)]
mod tests;

pub use msg::{ListAction, ListCounters, ListMsg};

use super::exclusive::{MAX_PATH, live_with, manager_key, path_key};
use crate::coop::NodeId;
use crate::error::CapacityError;
use crate::policy::{Capacity, Lru, Policy, access};
use crate::protocol::manager_of;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;

/// Listers waiting on one directory's origin listing at a manager; more
/// are answered `None` at once.
pub const MAX_WAITERS: usize = 64;
/// Directories with an origin listing in flight at a manager; a listing
/// needing another is answered `None` at once.
pub const MAX_LISTS: usize = 1024;
/// This node's own listings and changes in flight (a change told to every
/// member counts once per member); more complete at once (`None`, not
/// assured).
pub const MAX_PENDING: usize = 4096;
/// Directories a manager remembers as too large to keep.
pub const MAX_LARGE: usize = 4096;

/// What the machine needs to know of a listing.
pub trait Listing: Clone {
    /// Its size, what the table's bounds count: the bytes of its entries
    /// as the driver sends them (every listing sent is one frame).
    fn bytes(&self) -> usize;

    /// The directory it lists (directories are keyed by a hash of their
    /// path: a listing is answered only for its own).
    fn dir(&self) -> &str;

    /// Whether this is a listing of `dir`.
    fn is_of(&self, dir: &str) -> bool {
        self.dir() == dir
    }
}

/// Whether directory `dir` is `root` or below it (`""` is the origin's
/// root, above everything).
pub fn is_under(dir: &str, root: &str) -> bool {
    root.is_empty()
        || dir
            .strip_prefix(root)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The machine's bounds and timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListConfig {
    /// Bytes the manager's table keeps over all its listings (at least
    /// 2; a listing counts [`Listing::bytes`] and one byte more).
    pub capacity: usize,
    /// Bytes of the largest listing kept or sent (at most `capacity - 1`):
    /// what one frame can carry.
    pub max_listing: usize,
    /// How long a request waits for its answer, in microseconds.
    pub timeout_us: u64,
    /// How long after a membership change the manager answers `None`, in
    /// microseconds.
    pub stable_us: u64,
}

impl Default for ListConfig {
    /// 8 MiB of listings, each of up to 64 KiB, 2 s timeout, 5 s to
    /// stabilise (the commit machine's).
    fn default() -> Self {
        ListConfig {
            capacity: 8 << 20,
            max_listing: 64 << 10,
            timeout_us: 2_000_000,
            stable_us: 5_000_000,
        }
    }
}

/// An origin listing in flight at the manager.
#[derive(Debug)]
struct Lister {
    dir: Arc<str>,
    /// Who asked, and their nonces.
    waiters: Vec<(NodeId, u64)>,
    /// A change arrived after it was issued.
    stale: bool,
}

/// A request of this node's awaiting an answer.
#[derive(Debug)]
struct Ask {
    /// The member asked: the only one whose answer counts.
    to: NodeId,
    deadline: u64,
    what: Asked,
}

#[derive(Debug)]
enum Asked {
    List {
        req: u64,
        dir: Arc<str>,
    },
    Change {
        req: u64,
        dir: Arc<str>,
    },
    /// One member's part of change `req` told to every member.
    Spread {
        req: u64,
    },
}

/// One node's listing machine (see the module doc).
pub struct ListProtocol<L> {
    me: NodeId,
    cfg: ListConfig,
    /// Live members, this node included, sorted.
    live: Vec<NodeId>,
    /// The manager answers again from this time on.
    stable_at: u64,
    table: HashMap<u64, L>,
    order: Lru<u64, u32>,
    large: HashSet<u64>,
    // Ordered maps: a membership change walks them, and the fault harness
    // replays a seed event for event only if outputs come in one order.
    lists: BTreeMap<u64, Lister>,
    asks: BTreeMap<u64, Ask>,
    /// `(deadline, nonce)` of every ask.
    deadlines: BTreeSet<(u64, u64)>,
    /// Changes told to every member: answers awaited, and whether every
    /// one so far answered.
    spreading: BTreeMap<u64, (usize, bool)>,
    next_nonce: u64,
    /// Messages from this node to itself, handled before the next input.
    local: VecDeque<ListMsg<L>>,
    actions: VecDeque<ListAction<L>>,
    counters: ListCounters,
}

impl<L> std::fmt::Debug for ListProtocol<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListProtocol")
            .field("me", &self.me)
            .field("live", &self.live)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

/// An answer to one of this node's requests.
enum Answer<L> {
    Listed(Option<L>),
    Noted(bool),
}

impl<L: Listing> ListProtocol<L> {
    /// Node `me`, alone until told its members.
    pub fn new(me: NodeId, cfg: ListConfig) -> Result<Self, CapacityError> {
        let cfg = ListConfig {
            capacity: cfg.capacity.max(2),
            max_listing: cfg.max_listing.min(cfg.capacity.max(2) - 1),
            ..cfg
        };
        Ok(ListProtocol {
            me,
            cfg,
            live: vec![me],
            stable_at: 0,
            table: HashMap::new(),
            // Weighed in bytes: room up front for a guess of listings. A
            // block count of `capacity` reserved one entry per byte (8 M
            // for the default, 2 M for the daemon's LISTING_BYTES).
            order: Lru::with_weights(Capacity::Bytes(cfg.capacity as u64))?,
            large: HashSet::new(),
            lists: BTreeMap::new(),
            asks: BTreeMap::new(),
            deadlines: BTreeSet::new(),
            spreading: BTreeMap::new(),
            next_nonce: 0,
            local: VecDeque::new(),
            actions: VecDeque::new(),
            counters: ListCounters::default(),
        })
    }

    /// The counters.
    pub fn counters(&self) -> &ListCounters {
        &self.counters
    }

    /// Directories in the manager's table.
    pub fn table_len(&self) -> usize {
        self.table.len()
    }

    /// Whether the node waits on nothing: no request of its own, no origin
    /// listing in flight.
    pub fn is_quiet(&self) -> bool {
        self.asks.is_empty() && self.lists.is_empty() && self.local.is_empty()
    }

    /// The next thing the node must do, if any.
    pub fn poll(&mut self) -> Option<ListAction<L>> {
        self.actions.pop_front()
    }

    /// When [`ListProtocol::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.deadlines.first().map(|&(at, _)| at)
    }

    /// This node's user lists `dir`; completes with [`ListAction::Listed`].
    pub fn handle_list(&mut self, req: u64, dir: Arc<str>, now: u64) {
        if self.asks.len() >= MAX_PENDING {
            self.actions
                .push_back(ListAction::Listed { req, listing: None });
            return;
        }
        let to = self.manager(&dir);
        let what = Asked::List {
            req,
            dir: dir.clone(),
        };
        self.ask(to, what, |nonce| ListMsg::List { nonce, dir }, now);
        self.settle(now);
    }

    /// An entry of `dir` changed at the origin through this node's user
    /// (with `subtree`: `dir` itself was made, removed or moved, and every
    /// listing at or below it is to go); completes with
    /// [`ListAction::Noted`], after which a listing reflects it (see the
    /// module doc).
    pub fn handle_changed(&mut self, req: u64, dir: Arc<str>, subtree: bool, now: u64) {
        self.counters.changes += 1;
        if self.asks.len() >= MAX_PENDING {
            let assured = false;
            self.actions.push_back(ListAction::Noted { req, assured });
            return;
        }
        if subtree {
            self.spread(req, dir, true, None, true, now);
        } else {
            let to = self.manager(&dir);
            let what = Asked::Change {
                req,
                dir: dir.clone(),
            };
            let subtree = false;
            let msg = |nonce| ListMsg::Changed {
                nonce,
                dir,
                subtree,
            };
            self.ask(to, what, msg, now);
        }
        self.settle(now);
    }

    /// A message from `from`, the member its link authenticated.
    pub fn handle_message(&mut self, from: NodeId, msg: ListMsg<L>, now: u64) {
        self.on_message(from, msg, now);
        self.settle(now);
    }

    /// The origin's listing of `dir`, asked by [`ListAction::List`]; `None`
    /// if the origin failed (or `dir` is gone): its listers list the origin
    /// themselves and see the error.
    pub fn handle_listed(&mut self, dir: &str, listing: Option<L>, now: u64) {
        let key = path_key(dir);
        if self.lists.get(&key).is_none_or(|l| &*l.dir != dir) {
            return;
        }
        let Some(lister) = self.lists.remove(&key) else {
            return;
        };
        let listing = listing.filter(|l| l.is_of(dir));
        let fits = listing
            .as_ref()
            .is_some_and(|l| l.bytes() <= self.cfg.max_listing);
        if listing.is_some() && !fits {
            if self.large.len() >= MAX_LARGE {
                self.large.clear();
            }
            self.large.insert(key);
        }
        let listing = listing.filter(|_| fits);
        if listing.is_none() {
            self.counters.answered_none += lister.waiters.len() as u64;
        }
        for (to, nonce) in lister.waiters {
            let listing = listing.clone();
            self.send(to, ListMsg::Listed { nonce, listing });
        }
        if let Some(l) = listing
            && !lister.stale
        {
            self.keep(key, l);
        }
        self.settle(now);
    }

    /// The live members are now `members` (this node is added if absent).
    pub fn set_members(&mut self, members: &[NodeId], now: u64) {
        let live = live_with(self.me, members);
        if live == self.live {
            return;
        }
        self.live = live;
        self.stable_at = now.saturating_add(self.cfg.stable_us);
        for key in std::mem::take(&mut self.table).into_keys() {
            self.order.remove(key);
        }
        self.large.clear();
        for (_, lister) in std::mem::take(&mut self.lists) {
            self.counters.answered_none += lister.waiters.len() as u64;
            for (to, nonce) in lister.waiters {
                self.send(
                    to,
                    ListMsg::Listed {
                        nonce,
                        listing: None,
                    },
                );
            }
        }
        let gone: Vec<u64> = (self.asks.iter())
            .filter(|(_, a)| !self.is_member(a.to))
            .map(|(&nonce, _)| nonce)
            .collect();
        for nonce in gone {
            self.expire(nonce, false, now);
        }
        self.settle(now);
    }

    /// Fires every timeout due at `now`.
    pub fn handle_timeout(&mut self, now: u64) {
        while let Some(&(at, nonce)) = self.deadlines.first() {
            if at > now {
                break;
            }
            self.deadlines.pop_first();
            self.counters.timeouts += 1;
            self.expire(nonce, true, now);
        }
        self.settle(now);
    }

    fn manager(&self, dir: &str) -> NodeId {
        manager_of(manager_key(dir), &self.live).unwrap_or(self.me)
    }

    fn manages(&self, dir: &str, now: u64) -> bool {
        now >= self.stable_at && self.manager(dir) == self.me
    }

    fn is_member(&self, node: NodeId) -> bool {
        self.live.binary_search(&node).is_ok()
    }

    fn violation(&mut self, from: NodeId, why: &'static str) {
        self.counters.violations += 1;
        self.actions.push_back(ListAction::Violation { from, why });
    }

    /// Sends `msg` to `to`, or queues it for this node itself.
    fn send(&mut self, to: NodeId, msg: ListMsg<L>) {
        if to == self.me {
            self.local.push_back(msg);
        } else {
            self.actions.push_back(ListAction::Send { to, msg });
        }
    }

    /// Sends a request to `to`, awaiting its answer until the timeout.
    fn ask(&mut self, to: NodeId, what: Asked, msg: impl FnOnce(u64) -> ListMsg<L>, now: u64) {
        let nonce = self.next_nonce;
        self.next_nonce += 1;
        let deadline = now.saturating_add(self.cfg.timeout_us);
        self.asks.insert(nonce, Ask { to, deadline, what });
        self.deadlines.insert((deadline, nonce));
        self.send(to, msg(nonce));
    }

    /// Handles the messages this node sent itself.
    fn settle(&mut self, now: u64) {
        while let Some(msg) = self.local.pop_front() {
            self.on_message(self.me, msg, now);
        }
    }

    fn on_message(&mut self, from: NodeId, msg: ListMsg<L>, now: u64) {
        match msg {
            ListMsg::List { nonce, dir } => self.on_list(from, nonce, dir, now),
            ListMsg::Changed {
                nonce,
                dir,
                subtree,
            } => self.on_changed(from, nonce, dir, subtree, now),
            ListMsg::Listed { nonce, listing } => {
                self.on_answer(from, nonce, Answer::Listed(listing), now)
            }
            ListMsg::Noted { nonce, managed } => {
                self.on_answer(from, nonce, Answer::Noted(managed), now)
            }
        }
    }

    /// Whether a request from `from` for `dir` may be served at all.
    fn admits(&mut self, from: NodeId, dir: &str) -> bool {
        if !self.is_member(from) {
            self.violation(from, "a listing request from a non-member");
            return false;
        }
        if dir.len() > MAX_PATH {
            self.violation(from, "a directory path over MAX_PATH");
            return false;
        }
        true
    }

    fn on_list(&mut self, from: NodeId, nonce: u64, dir: Arc<str>, now: u64) {
        if !self.admits(from, &dir) {
            return;
        }
        let key = path_key(&dir);
        let listing = self.answer(key, &dir, from, nonce, now);
        if let Some(listing) = listing {
            self.send(from, ListMsg::Listed { nonce, listing });
        }
    }

    /// The answer to `from`'s listing of `dir` now (`Some(None)`: none,
    /// list the origin), or `None` if it waits on the origin's listing.
    #[allow(clippy::option_option)]
    fn answer(
        &mut self,
        key: u64,
        dir: &Arc<str>,
        from: NodeId,
        nonce: u64,
        now: u64,
    ) -> Option<Option<L>> {
        if !self.manages(dir, now) || self.large.contains(&key) {
            self.counters.answered_none += 1;
            return Some(None);
        }
        if let Some(l) = self.table.get(&key).filter(|l| l.is_of(dir)) {
            let (l, weight) = (l.clone(), weight(l));
            access(&mut self.order, key, weight, |_| {});
            self.counters.from_table += 1;
            return Some(Some(l));
        }
        if let Some(lister) = self.lists.get_mut(&key) {
            if lister.stale || lister.dir != *dir || lister.waiters.len() >= MAX_WAITERS {
                self.counters.answered_none += 1;
                return Some(None);
            }
            lister.waiters.push((from, nonce));
            return None;
        }
        if self.lists.len() >= MAX_LISTS {
            self.counters.answered_none += 1;
            return Some(None);
        }
        let lister = Lister {
            dir: dir.clone(),
            waiters: vec![(from, nonce)],
            stale: false,
        };
        self.lists.insert(key, lister);
        self.counters.origin_lists += 1;
        self.actions
            .push_back(ListAction::List { dir: dir.clone() });
        None
    }

    fn on_changed(&mut self, from: NodeId, nonce: u64, dir: Arc<str>, subtree: bool, now: u64) {
        if !self.admits(from, &dir) {
            return;
        }
        let key = path_key(&dir);
        let gone: Vec<u64> = match subtree {
            true => (self.table.iter())
                .filter(|(_, l)| is_under(l.dir(), &dir))
                .map(|(&k, _)| k)
                .collect(),
            false => vec![key],
        };
        for k in gone {
            if self.table.remove(&k).is_some() {
                self.order.remove(k);
            }
        }
        match subtree {
            true => self.large.clear(),
            false => _ = self.large.remove(&key),
        }
        for lister in self.lists.values_mut() {
            if lister.dir == dir || subtree && is_under(&lister.dir, &dir) {
                lister.stale = true;
            }
        }
        let managed = self.manages(&dir, now);
        self.send(from, ListMsg::Noted { nonce, managed });
    }

    /// Keeps `dir`'s listing, dropping the least recently used for room.
    fn keep(&mut self, key: u64, listing: L) {
        let table = &mut self.table;
        if self.order.remove(key) {
            table.remove(&key);
        }
        access(&mut self.order, key, weight(&listing), |dropped| {
            table.remove(&dropped);
        });
        table.insert(key, listing);
    }

    fn on_answer(&mut self, from: NodeId, nonce: u64, answer: Answer<L>, now: u64) {
        let Some(ask) = self.asks.get(&nonce) else {
            self.counters.late_answers += 1;
            return;
        };
        if ask.to != from {
            self.violation(from, "a listing answer from a member not asked");
            return;
        }
        let Some(ask) = self.asks.remove(&nonce) else {
            return;
        };
        self.deadlines.remove(&(ask.deadline, nonce));
        match (ask.what, answer) {
            (Asked::List { req, dir }, Answer::Listed(listing)) => {
                let listing = match listing {
                    Some(l) if !l.is_of(&dir) || l.bytes() > self.cfg.max_listing => {
                        self.violation(from, "a listing of another directory, or too long");
                        None
                    }
                    l => l,
                };
                self.actions.push_back(ListAction::Listed { req, listing });
            }
            (Asked::Change { req, dir }, Answer::Noted(managed)) => {
                if managed {
                    let assured = true;
                    self.actions.push_back(ListAction::Noted { req, assured });
                } else {
                    self.spread(req, dir, false, Some(from), true, now);
                }
            }
            (Asked::Spread { req }, Answer::Noted(_)) => self.spread_answered(req, true),
            (what, _) => {
                self.violation(from, "a listing answer of another kind");
                self.fail(what, from, now);
            }
        }
    }

    /// Ask `nonce` gets no answer (`timed_out`, or its member left).
    fn expire(&mut self, nonce: u64, timed_out: bool, now: u64) {
        let Some(ask) = self.asks.remove(&nonce) else {
            return;
        };
        self.deadlines.remove(&(ask.deadline, nonce));
        if timed_out {
            self.fail(ask.what, ask.to, now);
        } else {
            // A member that left holds no listing in any member's view; a
            // change it was to note is told to every member left.
            match ask.what {
                Asked::Spread { req } => self.spread_answered(req, true),
                what => self.fail(what, ask.to, now),
            }
        }
    }

    /// Request `what` to `to` failed.
    fn fail(&mut self, what: Asked, to: NodeId, now: u64) {
        match what {
            Asked::List { req, .. } => {
                let listing = None;
                self.actions.push_back(ListAction::Listed { req, listing });
            }
            Asked::Change { req, dir } => self.spread(req, dir, false, Some(to), false, now),
            Asked::Spread { req } => self.spread_answered(req, false),
        }
    }

    /// Tells every live member but `skip` that `dir` changed, for request
    /// `req`; `assured` so far if `skip` is known to keep no listing.
    fn spread(
        &mut self,
        req: u64,
        dir: Arc<str>,
        subtree: bool,
        skip: Option<NodeId>,
        assured: bool,
        now: u64,
    ) {
        self.counters.spread += 1;
        let to: Vec<NodeId> = (self.live.iter().copied())
            .filter(|&m| Some(m) != skip)
            .collect();
        if to.is_empty() || self.asks.len() + to.len() > MAX_PENDING {
            let assured = assured && to.is_empty();
            self.actions.push_back(ListAction::Noted { req, assured });
            return;
        }
        self.spreading.insert(req, (to.len(), assured));
        for m in to {
            let dir = dir.clone();
            let what = Asked::Spread { req };
            let msg = |nonce| ListMsg::Changed {
                nonce,
                dir,
                subtree,
            };
            self.ask(m, what, msg, now);
        }
    }

    fn spread_answered(&mut self, req: u64, answered: bool) {
        let Some((left, assured)) = self.spreading.get_mut(&req) else {
            return;
        };
        *left -= 1;
        *assured &= answered;
        if *left == 0 {
            let assured = *assured;
            self.spreading.remove(&req);
            self.actions.push_back(ListAction::Noted { req, assured });
        }
    }
}

/// A listing's weight in the table: its bytes, and one for the listing
/// itself (an empty directory costs something too).
fn weight<L: Listing>(l: &L) -> u32 {
    u32::try_from(l.bytes().saturating_add(1)).unwrap_or(u32::MAX)
}
