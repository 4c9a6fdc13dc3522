//! The protocol's timers: one queue of deadlines, each checked against the
//! state it belongs to when it falls due (a read that completed, a grant
//! that was used), so nothing has to be cancelled.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What a deadline is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Timer<K> {
    /// A read waiting on peers falls back to the origin.
    Read(K),
    /// A block held unverified is dropped if its digest never came.
    Held(K),
    /// A manager's grant to record a block lapses.
    Grant(K),
    /// A manager forgets the forwards of a block it sent long ago.
    Forward(K),
    /// Time to ping every peer.
    Ping,
}

/// Deadlines in microseconds, earliest first.
#[derive(Debug)]
pub(super) struct Timers<K> {
    heap: BinaryHeap<Reverse<(u64, Timer<K>)>>,
}

impl<K: Ord> Default for Timers<K> {
    fn default() -> Self {
        Timers {
            heap: BinaryHeap::new(),
        }
    }
}

impl<K: Ord + Copy> Timers<K> {
    /// Arms `timer` for `at`.
    pub(super) fn arm(&mut self, at: u64, timer: Timer<K>) {
        self.heap.push(Reverse((at, timer)));
    }

    /// The earliest deadline.
    pub(super) fn next(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((at, _))| *at)
    }

    /// The next timer due at `now`, if any.
    pub(super) fn pop_due(&mut self, now: u64) -> Option<Timer<K>> {
        match self.heap.peek() {
            Some(Reverse((at, _))) if *at <= now => self.heap.pop().map(|Reverse((_, t))| t),
            _ => None,
        }
    }

    /// Deadlines armed, stale ones included.
    pub(super) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Keeps only the timers `live` says still matter (bounds the queue
    /// when many were armed for state that has since gone).
    pub(super) fn retain(&mut self, mut live: impl FnMut(&Timer<K>) -> bool) {
        self.heap.retain(|Reverse((_, t))| live(t));
    }
}
