//! A node's whole part in the cluster's locks: the files it manages (a
//! [`LockTable`]) and its own processes' locks at other managers, as one
//! sans-IO machine. The driver hands it the mount's calls, the peers'
//! lock messages (with the link's identity), membership and the clock,
//! and carries out the [`LockAction`]s it polls.
//!
//! What it decides:
//!
//! - **Whom to ask.** A file's manager is its C2Cfs manager
//!   ([`manager_key`] over the live members), so a lock and the file's
//!   commits meet at one member. A call for a file this node manages is
//!   carried out here, through the same path as a peer's.
//! - **When to ask again.** A manager that answers `NotManager` (its view
//!   differs, or it is settling) is asked again after
//!   [`LockProtocolConfig::retry_us`]; one that does not answer within
//!   [`LockProtocolConfig::timeout_us`] is asked again under a fresh nonce
//!   (the old one is abandoned: a late grant of it is unlocked). After
//!   [`LockProtocolConfig::give_up_us`] the call fails with
//!   [`LockError::Unanswered`] (`ENOLCK`). A wait that was queued has no
//!   deadline: `F_SETLKW` waits as long as the holder holds.
//! - **Leases.** Each third of a lease the node renews at every manager
//!   it holds or waits at; a node that stops (crashed, cut off) loses its
//!   locks one lease later, and at once when membership says it is gone.
//! - **Manager changes.** A new manager starts empty for the files it took
//!   over. Each node keeps a copy of what it holds (a [`LockTable`] of its
//!   own locks) and reclaims it from the new manager; for
//!   [`LockProtocolConfig::grace_us`] the new manager takes only reclaims
//!   and releases for those files, so a new lock cannot take a range whose
//!   holder has not reclaimed it yet. A reclaim refused (another node took
//!   the range in the meantime, possible only when views differ for
//!   longer than the grace) is reported as [`LockAction::Lost`].
//! - **Whom to believe.** An answer counts only from the member it was
//!   asked of and only in the phase that awaits it; a grant only for a
//!   wait queued there. Anything else is a [`LockAction::Violation`].

use super::{
    LockConfig, LockConflict, LockError, LockKind, LockMsg, LockOutcome, LockRange, LockRequest,
    LockSpace, LockTable, LockViolation, Managed,
};
use crate::c2cfs::exclusive::{live_with, manager_key};
use crate::coop::NodeId;
use crate::protocol::manager_of;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// Calls of this node in flight at once; more fail at once with
/// [`LockError::TooManyWaiters`] (`ENOLCK`).
pub const MAX_ASKS: usize = 4096;

/// Abandoned nonces remembered (a late grant of one is unlocked).
const MAX_ABANDONED: usize = 1024;

/// The machine's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockProtocolConfig {
    /// The manager's table: bounds and lease.
    pub table: LockConfig,
    /// How long an answer may take before the call is asked again.
    pub timeout_us: u64,
    /// How long after a `NotManager` the call is asked again.
    pub retry_us: u64,
    /// How long a call is asked again before it fails.
    pub give_up_us: u64,
    /// How long a new manager of a file takes only reclaims for it.
    pub grace_us: u64,
}

impl Default for LockProtocolConfig {
    /// Answers within 5 s, asked again 50 ms after a `NotManager`, given
    /// up after 30 s; a 5 s grace (a few of SWIM's periods, for every
    /// member to see the change and reclaim).
    fn default() -> Self {
        LockProtocolConfig {
            table: LockConfig::default(),
            timeout_us: 5_000_000,
            retry_us: 50_000,
            give_up_us: 30_000_000,
            grace_us: 5_000_000,
        }
    }
}

/// What a process of this node asks (the mount's `setlk`, `getlk`,
/// `flush` and `release`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockCall {
    /// Take a lock, or wait for it if `wait`.
    Lock {
        /// The file.
        path: Arc<str>,
        /// The namespace.
        space: LockSpace,
        /// The lock owner (FUSE's `lock_owner`).
        owner: u64,
        /// Shared or exclusive.
        kind: LockKind,
        /// The range.
        range: LockRange,
        /// `F_SETLKW`.
        wait: bool,
        /// The process, for another node's `F_GETLK`.
        pid: u32,
    },
    /// Unlock a range.
    Unlock {
        /// The file.
        path: Arc<str>,
        /// The namespace.
        space: LockSpace,
        /// The lock owner.
        owner: u64,
        /// The range.
        range: LockRange,
    },
    /// Drop all the owner holds or waits for on the file.
    Release {
        /// The file.
        path: Arc<str>,
        /// The namespace.
        space: LockSpace,
        /// The lock owner.
        owner: u64,
    },
    /// `F_GETLK`.
    Test {
        /// The file.
        path: Arc<str>,
        /// The namespace.
        space: LockSpace,
        /// The lock owner.
        owner: u64,
        /// The kind it would take.
        kind: LockKind,
        /// The range.
        range: LockRange,
    },
}

impl LockCall {
    fn path(&self) -> &Arc<str> {
        match self {
            LockCall::Lock { path, .. }
            | LockCall::Unlock { path, .. }
            | LockCall::Release { path, .. }
            | LockCall::Test { path, .. } => path,
        }
    }

    fn request(&self, nonce: u64) -> Option<LockRequest> {
        match self {
            LockCall::Lock {
                path,
                space,
                owner,
                kind,
                range,
                wait,
                pid,
            } => Some(LockRequest {
                nonce,
                path: path.clone(),
                space: *space,
                owner: *owner,
                kind: *kind,
                range: *range,
                wait: *wait,
                pid: *pid,
            }),
            _ => None,
        }
    }

    fn message(&self, nonce: u64, reclaim: bool) -> LockMsg {
        match self.clone() {
            LockCall::Lock { .. } => {
                let req = self.request(nonce).expect("a lock call");
                match reclaim {
                    true => LockMsg::Reclaim(req),
                    false => LockMsg::Lock(req),
                }
            }
            LockCall::Unlock {
                path,
                space,
                owner,
                range,
            } => LockMsg::Unlock {
                nonce,
                path,
                space,
                owner,
                range,
            },
            LockCall::Release { path, space, owner } => LockMsg::Release {
                nonce,
                path,
                space,
                owner,
            },
            LockCall::Test {
                path,
                space,
                owner,
                kind,
                range,
            } => LockMsg::Test {
                nonce,
                path,
                space,
                owner,
                kind,
                range,
            },
        }
    }
}

/// A call's answer: for a lock, `None` when held and the lock in the way
/// when refused; for a test, the lock in the way if any; `None` for an
/// unlock or a release.
pub type LockResult = Result<Option<LockConflict>, LockError>;

/// What the machine asks its driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockAction {
    /// Send `msg` to `to`.
    Send {
        /// The member.
        to: NodeId,
        /// The message.
        msg: LockMsg,
    },
    /// Answer the caller of request `req`.
    Reply {
        /// The driver's request id.
        req: u64,
        /// The answer.
        result: LockResult,
    },
    /// `from` sent a message its role does not allow: dropped.
    Violation {
        /// The member, as its link authenticated it.
        from: NodeId,
        /// Why.
        why: LockViolation,
    },
    /// A lock this node held could not be reclaimed from the file's new
    /// manager: its owner no longer holds it.
    Lost {
        /// The file.
        path: Arc<str>,
        /// The lock owner.
        owner: u64,
    },
}

/// Counters, for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockCounters {
    /// Messages dropped as violations.
    pub violations: u64,
    /// Calls asked again after no answer came in time.
    pub timeouts: u64,
    /// Locks lost at a manager change.
    pub lost: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Sent; the answer is due by the timer.
    Asking,
    /// Queued at the manager: a `Granted` comes, no deadline.
    Waiting,
    /// Refused with `NotManager`: asked again at the timer.
    Retrying,
}

struct Ask {
    /// The caller's request id; `None` for a reclaim or the unlock of an
    /// abandoned grant.
    req: Option<u64>,
    call: LockCall,
    reclaim: bool,
    to: NodeId,
    phase: Phase,
    /// When the timer fires, if it is set.
    timer: Option<u64>,
    started: u64,
}

/// A node's locks: the files it manages and its own calls (module doc).
pub struct LockProtocol {
    me: NodeId,
    cfg: LockProtocolConfig,
    /// Live members, sorted, this node among them.
    live: Vec<NodeId>,
    /// The members before the last change, for the grace period.
    previous: Vec<NodeId>,
    grace_until: u64,
    /// The files this node manages.
    table: LockTable,
    /// What this node's own owners hold, for reclaims and renewals.
    mine: LockTable,
    asks: BTreeMap<u64, Ask>,
    timers: BTreeSet<(u64, u64)>,
    abandoned: VecDeque<(u64, NodeId, LockCall)>,
    next_nonce: u64,
    next_renew: Option<u64>,
    local: VecDeque<LockMsg>,
    actions: VecDeque<LockAction>,
    counters: LockCounters,
}

impl LockProtocol {
    /// The machine of node `me`, alone in the cluster until
    /// [`LockProtocol::set_members`].
    pub fn new(me: NodeId, cfg: LockProtocolConfig) -> LockProtocol {
        let own = LockConfig {
            lease_us: u64::MAX,
            ..cfg.table
        };
        LockProtocol {
            me,
            cfg,
            live: vec![me],
            previous: vec![me],
            grace_until: 0,
            table: LockTable::new(cfg.table),
            mine: LockTable::new(own),
            asks: BTreeMap::new(),
            timers: BTreeSet::new(),
            abandoned: VecDeque::new(),
            next_nonce: 0,
            next_renew: None,
            local: VecDeque::new(),
            actions: VecDeque::new(),
            counters: LockCounters::default(),
        }
    }

    /// The counters.
    pub fn counters(&self) -> &LockCounters {
        &self.counters
    }

    /// The table of the files this node manages.
    pub fn table(&self) -> &LockTable {
        &self.table
    }

    /// Locks this node's owners hold, over the cluster.
    pub fn held(&self) -> usize {
        self.mine.locks()
    }

    /// Whether no call of this node is in flight.
    pub fn is_quiet(&self) -> bool {
        self.asks.is_empty()
    }

    /// The next action.
    pub fn poll(&mut self) -> Option<LockAction> {
        self.actions.pop_front()
    }

    /// When [`LockProtocol::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<u64> {
        [
            self.timers.first().map(|&(at, _)| at),
            self.next_renew,
            self.table.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// A process of this node asks `call`; the answer comes as a
    /// [`LockAction::Reply`] for `req`.
    pub fn handle_call(&mut self, req: u64, call: LockCall, now: u64) {
        if self.asks.len() >= MAX_ASKS {
            let result = Err(LockError::TooManyWaiters);
            return self.actions.push_back(LockAction::Reply { req, result });
        }
        self.ask(Some(req), call, false, now, now);
        self.settle(now);
    }

    /// The caller of `req` was interrupted: its wait is dropped and it is
    /// answered [`LockError::Cancelled`] (`EINTR`).
    pub fn handle_cancel(&mut self, req: u64, now: u64) {
        let Some(nonce) = self
            .asks
            .iter()
            .find(|(_, a)| a.req == Some(req))
            .map(|(&n, _)| n)
        else {
            return;
        };
        self.abandon(nonce);
        self.finish(nonce, Err(LockError::Cancelled), now);
        self.settle(now);
    }

    /// A lock message from `from`, the link's authenticated identity.
    pub fn handle_message(&mut self, from: NodeId, msg: LockMsg, now: u64) {
        self.on_message(from, msg, now);
        self.settle(now);
    }

    /// The live members are now `members` (this node is added if absent).
    pub fn set_members(&mut self, members: &[NodeId], now: u64) {
        let live = live_with(self.me, members);
        if live == self.live {
            return;
        }
        let previous = std::mem::replace(&mut self.live, live);
        for &gone in &previous {
            if !self.is_member(gone) {
                self.table.node_gone(gone, now);
            }
        }
        let (me, live) = (self.me, &self.live);
        self.table
            .retain_files(|path| manager(path, live).unwrap_or(me) == me);
        self.previous = previous;
        self.grace_until = now.saturating_add(self.cfg.grace_us);
        // Calls at a manager that no longer is one go to the new one.
        let moved: Vec<u64> = self
            .asks
            .iter()
            .filter(|(_, a)| self.manager(a.call.path()) != a.to)
            .map(|(&n, _)| n)
            .collect();
        for nonce in moved {
            self.reask(nonce, now);
        }
        // What this node holds at a file's new manager is taken back.
        for (path, space, held) in self.mine.held_by(self.me) {
            if manager(&path, &self.previous) == manager(&path, &self.live) {
                continue;
            }
            let call = LockCall::Lock {
                path,
                space,
                owner: held.owner.owner,
                kind: held.kind,
                range: held.range,
                wait: false,
                pid: held.pid,
            };
            if self.asks.len() >= MAX_ASKS {
                self.lost(&call, now);
                continue;
            }
            self.ask(None, call, true, now, now);
        }
        self.grants();
        self.settle(now);
    }

    /// Fires what is due at `now`: answers overdue, retries, renewals,
    /// leases lapsed at this node as a manager.
    pub fn handle_timeout(&mut self, now: u64) {
        self.table.handle_timeout(now);
        self.grants();
        while let Some(&(at, nonce)) = self.timers.first() {
            if at > now {
                break;
            }
            self.timers.pop_first();
            let Some(ask) = self.asks.get_mut(&nonce) else {
                continue;
            };
            ask.timer = None;
            if ask.phase == Phase::Asking {
                self.counters.timeouts += 1;
            }
            self.reask(nonce, now);
        }
        if self.next_renew.is_some_and(|at| at <= now) {
            self.renew(now);
        }
        self.settle(now);
    }

    fn is_member(&self, node: NodeId) -> bool {
        self.live.binary_search(&node).is_ok()
    }

    fn manager(&self, path: &str) -> NodeId {
        manager(path, &self.live).unwrap_or(self.me)
    }

    fn nonce(&mut self) -> u64 {
        self.next_nonce += 1;
        self.next_nonce
    }

    /// Sends `call` to its manager under a fresh nonce.
    fn ask(&mut self, req: Option<u64>, call: LockCall, reclaim: bool, started: u64, now: u64) {
        let nonce = self.nonce();
        let to = self.manager(call.path());
        self.send(to, call.message(nonce, reclaim));
        let at = now.saturating_add(self.cfg.timeout_us);
        self.timers.insert((at, nonce));
        self.asks.insert(
            nonce,
            Ask {
                req,
                call,
                reclaim,
                to,
                phase: Phase::Asking,
                timer: Some(at),
                started,
            },
        );
        self.arm_renew(now);
    }

    /// Asks `nonce`'s call again (at its manager now), or fails it once it
    /// has been asked for too long.
    fn reask(&mut self, nonce: u64, now: u64) {
        let Some(ask) = self.asks.get(&nonce) else {
            return;
        };
        if now.saturating_sub(ask.started) >= self.cfg.give_up_us {
            if matches!(ask.call, LockCall::Unlock { .. } | LockCall::Release { .. }) {
                // Not held here any more, whatever the manager keeps: it
                // is not reclaimed, and renewed only with other locks.
                self.carried_out(nonce, now);
                if let Some(LockAction::Reply { result, .. }) = self.actions.back_mut() {
                    *result = Err(LockError::Unanswered);
                }
                return;
            }
            return self.finish(nonce, Err(LockError::Unanswered), now);
        }
        // An answer or a grant may still be on its way.
        self.abandon(nonce);
        let Some(ask) = self.take(nonce) else {
            return;
        };
        self.ask(ask.req, ask.call, ask.reclaim, ask.started, now);
    }

    /// Removes `nonce`'s ask and its timer.
    fn take(&mut self, nonce: u64) -> Option<Ask> {
        let ask = self.asks.remove(&nonce)?;
        if let Some(at) = ask.timer {
            self.timers.remove(&(at, nonce));
        }
        Some(ask)
    }

    /// Remembers `nonce` as given up, so that a late grant of it is
    /// unlocked and a late answer is no violation.
    fn abandon(&mut self, nonce: u64) {
        let Some(ask) = self.asks.get(&nonce) else {
            return;
        };
        let (to, call, phase) = (ask.to, ask.call.clone(), ask.phase);
        // A wait may be queued there, also before its manager said so.
        let waits = matches!(call, LockCall::Lock { wait: true, .. });
        if waits && phase != Phase::Retrying && self.is_member(to) {
            self.send(to, LockMsg::Cancel { nonce });
        }
        if self.abandoned.len() >= MAX_ABANDONED {
            self.abandoned.pop_front();
        }
        self.abandoned.push_back((nonce, to, call));
    }

    /// Ends `nonce`'s call with `result`.
    fn finish(&mut self, nonce: u64, result: LockResult, now: u64) {
        let Some(ask) = self.take(nonce) else {
            return;
        };
        if ask.reclaim && result != Ok(None) {
            return self.lost(&ask.call, now);
        }
        if let Some(req) = ask.req {
            self.actions.push_back(LockAction::Reply { req, result });
        }
    }

    /// A lock this node held is no longer held: it leaves the copy.
    fn lost(&mut self, call: &LockCall, now: u64) {
        let LockCall::Lock {
            path,
            space,
            owner,
            range,
            ..
        } = call
        else {
            return;
        };
        let _ = self.mine.unlock(self.me, path, *space, *owner, *range, now);
        self.counters.lost += 1;
        self.actions.push_back(LockAction::Lost {
            path: path.clone(),
            owner: *owner,
        });
    }

    fn violation(&mut self, from: NodeId, why: LockViolation) {
        self.counters.violations += 1;
        self.actions.push_back(LockAction::Violation { from, why });
    }

    fn send(&mut self, to: NodeId, msg: LockMsg) {
        if to == self.me {
            self.local.push_back(msg);
        } else {
            self.actions.push_back(LockAction::Send { to, msg });
        }
    }

    /// Handles what this node sent itself.
    fn settle(&mut self, now: u64) {
        while let Some(msg) = self.local.pop_front() {
            self.on_message(self.me, msg, now);
        }
    }

    fn on_message(&mut self, from: NodeId, msg: LockMsg, now: u64) {
        match msg {
            LockMsg::Answer { nonce, answer } => self.on_answer(from, nonce, answer, now),
            LockMsg::Granted { nonce, result } => self.on_granted(from, nonce, result, now),
            msg => {
                let (me, live, previous) = (self.me, &self.live, &self.previous);
                let settling = now < self.grace_until;
                let judge = |path: &str| {
                    if manager(path, live).unwrap_or(me) != me {
                        Managed::No
                    } else if settling && manager(path, previous).unwrap_or(me) != me {
                        Managed::Settling
                    } else {
                        Managed::Yes
                    }
                };
                let member = live.binary_search(&from).is_ok();
                match self.table.handle_message(from, msg, member, judge, now) {
                    Ok(Some(answer)) => self.send(from, answer),
                    Ok(None) => {}
                    Err(why) => self.violation(from, why),
                }
                self.grants();
            }
        }
    }

    /// Sends the table's grants to their waiters.
    fn grants(&mut self) {
        while let Some((to, msg)) = self.table.poll_message() {
            self.send(to, msg);
        }
    }

    fn on_answer(&mut self, from: NodeId, nonce: u64, answer: super::LockAnswer, now: u64) {
        let asked = self
            .asks
            .get(&nonce)
            .is_some_and(|a| a.to == from && a.phase == Phase::Asking);
        if !asked {
            if !self
                .abandoned
                .iter()
                .any(|(n, to, _)| *n == nonce && *to == from)
            {
                self.violation(from, LockViolation::Unasked);
            }
            return;
        }
        use super::LockAnswer as A;
        match answer {
            A::NotManager => {
                let at = now.saturating_add(self.cfg.retry_us);
                self.set_phase(nonce, Phase::Retrying, Some(at));
            }
            A::Tested(conflict) => self.finish(nonce, Ok(conflict), now),
            A::Done(Ok(LockOutcome::Waiting)) => self.set_phase(nonce, Phase::Waiting, None),
            A::Done(Ok(LockOutcome::Granted)) => self.carried_out(nonce, now),
            A::Done(Ok(LockOutcome::Conflict(c))) => self.finish(nonce, Ok(Some(c)), now),
            A::Done(Err(e)) => self.finish(nonce, Err(e), now),
        }
    }

    fn on_granted(&mut self, from: NodeId, nonce: u64, result: Result<(), LockError>, now: u64) {
        let waiting = self
            .asks
            .get(&nonce)
            .is_some_and(|a| a.to == from && a.phase == Phase::Waiting);
        if waiting {
            return match result {
                Ok(()) => self.carried_out(nonce, now),
                Err(e) => self.finish(nonce, Err(e), now),
            };
        }
        let Some(at) = self
            .abandoned
            .iter()
            .position(|(n, to, _)| *n == nonce && *to == from)
        else {
            return self.violation(from, LockViolation::Unasked);
        };
        let Some((_, _, call)) = self.abandoned.remove(at) else {
            return;
        };
        // Granted after this node gave up on it: give it back, unless the
        // owner holds or asks for a lock of the file again (a grant of
        // that would be undone, as owners' locks merge).
        if let (
            Ok(()),
            LockCall::Lock {
                path,
                space,
                owner,
                range,
                ..
            },
        ) = (result, call)
        {
            if self.owner_busy(&path, space, owner) {
                return;
            }
            let unlock = LockCall::Unlock {
                path,
                space,
                owner,
                range,
            };
            if self.asks.len() < MAX_ASKS {
                self.ask(None, unlock, false, now, now);
            }
        }
    }

    /// Whether `owner` holds a lock of `path` here or has a call about it
    /// in flight.
    fn owner_busy(&self, path: &str, space: LockSpace, owner: u64) -> bool {
        let asking = self.asks.values().any(|a| match &a.call {
            LockCall::Lock {
                path: p,
                space: s,
                owner: o,
                ..
            } => **p == *path && *s == space && *o == owner,
            _ => false,
        });
        asking
            || self
                .mine
                .held_by(self.me)
                .iter()
                .any(|(p, s, h)| **p == *path && *s == space && h.owner.owner == owner)
    }

    /// `nonce`'s call was carried out: the copy of what this node holds
    /// follows, and the caller hears.
    fn carried_out(&mut self, nonce: u64, now: u64) {
        let Some(ask) = self.asks.get(&nonce) else {
            return;
        };
        let me = self.me;
        match &ask.call {
            LockCall::Lock { .. } => {
                if let Some(req) = ask.call.request(0) {
                    let req = LockRequest { wait: false, ..req };
                    let _ = self.mine.lock(me, req, now);
                }
            }
            LockCall::Unlock {
                path,
                space,
                owner,
                range,
            } => {
                let _ = self.mine.unlock(me, path, *space, *owner, *range, now);
            }
            LockCall::Release { path, space, owner } => {
                self.mine.release(me, path, *space, *owner, now);
            }
            LockCall::Test { .. } => {}
        }
        self.finish(nonce, Ok(None), now);
    }

    fn set_phase(&mut self, nonce: u64, phase: Phase, timer: Option<u64>) {
        let Some(ask) = self.asks.get_mut(&nonce) else {
            return;
        };
        if let Some(at) = ask.timer.take() {
            self.timers.remove(&(at, nonce));
        }
        ask.phase = phase;
        ask.timer = timer;
        if let Some(at) = timer {
            self.timers.insert((at, nonce));
        }
    }

    fn arm_renew(&mut self, now: u64) {
        if self.next_renew.is_none() {
            self.next_renew = Some(now.saturating_add(self.cfg.table.lease_us / 3));
        }
    }

    /// Renews at every manager this node holds or waits at; stops renewing
    /// once it holds nothing.
    fn renew(&mut self, now: u64) {
        let mut at: Vec<NodeId> = self
            .mine
            .held_by(self.me)
            .iter()
            .map(|(path, _, _)| self.manager(path))
            .chain(self.asks.values().map(|a| a.to))
            .collect();
        at.sort_unstable();
        at.dedup();
        for to in &at {
            self.send(*to, LockMsg::Renew);
        }
        self.next_renew = None;
        if !at.is_empty() {
            self.arm_renew(now);
        }
    }
}

/// The manager of `path` among `members`.
fn manager(path: &str, members: &[NodeId]) -> Option<NodeId> {
    manager_of(manager_key(path), members)
}
