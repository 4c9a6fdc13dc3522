//! The protocol's timers: one queue of deadlines per kind, each checked
//! against the state it belongs to when it falls due (a read that
//! completed, a grant that was used), so nothing has to be cancelled.
//!
//! Every deadline of one kind is `now` plus a timeout that changes only
//! slowly (it follows measured round trips), so each kind's deadlines are
//! armed in nearly increasing order: a first-in first-out queue per kind
//! costs O(1) per read where a heap cost O(log n) (`coopcache bench
//! latency`). When the timeout shrinks, a later entry can fall due before
//! the one ahead of it; it then fires late by at most the shrink, which a
//! fall-back timer can afford.

use std::collections::VecDeque;

/// What a deadline is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// Kinds of timer, one queue each.
const KINDS: usize = 5;

fn kind<K>(t: &Timer<K>) -> usize {
    match t {
        Timer::Read(_) => 0,
        Timer::Held(_) => 1,
        Timer::Grant(_) => 2,
        Timer::Forward(_) => 3,
        Timer::Ping => 4,
    }
}

/// Deadlines in microseconds, a queue per kind.
#[derive(Debug)]
pub(super) struct Timers<K> {
    queues: [VecDeque<(u64, Timer<K>)>; KINDS],
}

impl<K> Default for Timers<K> {
    fn default() -> Self {
        Timers {
            queues: std::array::from_fn(|_| VecDeque::new()),
        }
    }
}

impl<K: Copy> Timers<K> {
    /// Arms `timer` for `at`.
    pub(super) fn arm(&mut self, at: u64, timer: Timer<K>) {
        self.queues[kind(&timer)].push_back((at, timer));
    }

    /// The earliest deadline at the head of a queue.
    pub(super) fn next(&self) -> Option<u64> {
        self.queues
            .iter()
            .filter_map(|q| q.front())
            .map(|(at, _)| *at)
            .min()
    }

    /// The next timer due at `now`, if any.
    pub(super) fn pop_due(&mut self, now: u64) -> Option<Timer<K>> {
        let q = self
            .queues
            .iter_mut()
            .filter(|q| q.front().is_some_and(|(at, _)| *at <= now))
            .min_by_key(|q| q.front().map(|(at, _)| *at))?;
        q.pop_front().map(|(_, t)| t)
    }

    /// Deadlines armed, stale ones included.
    pub(super) fn len(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    /// Keeps only the timers `live` says still matter (bounds the queues
    /// when many were armed for state that has since gone).
    pub(super) fn retain(&mut self, mut live: impl FnMut(&Timer<K>) -> bool) {
        for q in &mut self.queues {
            q.retain(|(_, t)| live(t));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_fall_due_earliest_first_across_kinds() {
        let mut t: Timers<u64> = Timers::default();
        t.arm(30, Timer::Read(1));
        t.arm(10, Timer::Grant(2));
        t.arm(40, Timer::Read(3));
        t.arm(20, Timer::Ping);
        assert_eq!(t.next(), Some(10));
        assert_eq!(t.pop_due(5), None);
        assert_eq!(t.pop_due(35), Some(Timer::Grant(2)));
        assert_eq!(t.pop_due(35), Some(Timer::Ping));
        assert_eq!(t.pop_due(35), Some(Timer::Read(1)));
        assert_eq!(t.pop_due(35), None);
        assert_eq!((t.next(), t.len()), (Some(40), 1));
        t.retain(|_| false);
        assert_eq!(t.next(), None);
    }
}
