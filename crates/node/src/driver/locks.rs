//! The driver's side of the cluster's locks: it feeds the core's node
//! (its `LockProtocol`) with the mount's calls, the peers' lock frames (with
//! the link's identity), membership and the clock, and carries out what
//! it asks: frames to peers, answers to the callers waiting. Whom to ask,
//! when to ask again, whom to believe and what a manager answers are the
//! core's (`coopcache_core::c2cfs::locks`).

use super::*;
use coopcache_core::c2cfs::locks::{LockAction, LockCall, LockMsg, LockResult};

/// What the driver hears about locks from this node's mount.
pub struct LockEvent {
    /// What a process asks.
    pub call: LockCall,
    /// Where the answer goes. Dropping its receiver (the process was
    /// interrupted, the FUSE request abandoned) cancels a wait.
    pub reply: oneshot::Sender<LockResult>,
}

impl Driver {
    pub(super) fn on_lock_event(&mut self, ev: LockEvent) {
        let now = self.clock.micros();
        self.next_lock_req += 1;
        let req = self.next_lock_req;
        // The core answers every call (at once when over its bound), so
        // this map holds at most its calls in flight.
        self.lock_waiters.insert(req, ev.reply);
        self.node.handle_lock_call(req, ev.call, now);
    }

    /// A peer's lock frame.
    pub(super) fn on_lock_msg(&mut self, from: NodeId, msg: LockMsg) {
        *self.received.entry(from).or_default() += 1;
        let now = self.clock.micros();
        self.node.handle_message(from, Msg::Lock(msg), now);
    }

    /// Cancels the waits whose callers went away.
    pub(super) fn cancel_abandoned_locks(&mut self) {
        if self.lock_waiters.is_empty() {
            return;
        }
        let gone: Vec<u64> = self
            .lock_waiters
            .iter()
            .filter(|(_, reply)| reply.is_closed())
            .map(|(&req, _)| req)
            .collect();
        let now = self.clock.micros();
        for req in gone {
            self.node.handle_lock_cancel(req, now);
        }
        self.apply();
    }

    /// Carries out what the lock machine decided.
    pub(super) fn apply_lock(&mut self, action: LockAction) {
        match action {
            LockAction::Send { to, msg } => {
                if self.send(to, Wire::Lock(msg)) {
                    *self.sent.entry(to).or_default() += 1;
                }
            }
            LockAction::Reply { req, result } => {
                if let Some(reply) = self.lock_waiters.remove(&req) {
                    let _ = reply.send(result);
                }
            }
            LockAction::Violation { from, why } => {
                let name = self.member_name(from);
                tracing::warn!(peer = %name, id = from, "refused a peer's lock message: {why}");
                self.metrics.violation(name, 1);
            }
            LockAction::Lost { path, owner } => {
                self.metrics.locks_lost.inc();
                tracing::warn!(
                    %path,
                    owner,
                    "a lock held here was taken by another node while the file's manager changed"
                );
            }
        }
    }
}
