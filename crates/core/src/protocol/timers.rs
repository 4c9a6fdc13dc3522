//! The protocol's timers: at most one deadline per timer (a read of one
//! block, a grant of one block...), each checked against the state it
//! belongs to when it falls due (a read that completed, a grant that was
//! used), so nothing has to be cancelled.
//!
//! Arming a timer again replaces its deadline. Deadlines fire exactly in
//! order: they are `now` plus a timeout that follows measured round trips,
//! so a later deadline can fall due before an earlier one (a first-in
//! first-out queue per kind fired those late, by as much as the timeout
//! shrank: found by the fault harness, reads waiting past their bound).
//! The cost is a hash-map insert and a heap push per armed timer.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// What a deadline is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Timer<K> {
    /// A read waiting on peers falls back to the origin.
    Read(K),
    /// A block held unverified is dropped if its digest never came.
    Held(K),
    /// A manager's grant to record a block lapses.
    Grant(K),
    /// A manager forgets the forwards of a block it sent long ago (all of
    /// them by the latest one's deadline: only the manager's table waits
    /// on it, every reader has a deadline of its own).
    Forward(K),
    /// An N-Chance question to a manager goes unanswered.
    Question(K),
    /// Time to ping every peer.
    Ping,
    /// Time to ask for a given-up disk tier to be opened again.
    DiskRetry,
}

/// Deadlines in microseconds.
#[derive(Debug)]
pub(super) struct Timers<K> {
    /// Each armed timer's deadline.
    armed: HashMap<Timer<K>, u64, foldhash::fast::FixedState>,
    /// The same deadlines by time, with entries a timer's re-arming left
    /// behind; never one of those at its head.
    queue: BinaryHeap<Reverse<(u64, Timer<K>)>>,
}

impl<K> Default for Timers<K> {
    fn default() -> Self {
        Timers {
            armed: HashMap::default(),
            queue: BinaryHeap::new(),
        }
    }
}

impl<K: Copy + Ord + std::hash::Hash> Timers<K> {
    /// Arms `timer` for `at`, replacing the deadline it had.
    pub(super) fn arm(&mut self, at: u64, timer: Timer<K>) {
        if self.armed.insert(timer, at) == Some(at) {
            return;
        }
        self.queue.push(Reverse((at, timer)));
        if self.queue.len() > 2 * self.armed.len() + 64 {
            self.rebuild();
        }
        self.skip_stale();
    }

    /// The earliest deadline.
    pub(super) fn next(&self) -> Option<u64> {
        self.queue.peek().map(|Reverse((at, _))| *at)
    }

    /// The next timer due at `now`, if any.
    pub(super) fn pop_due(&mut self, now: u64) -> Option<Timer<K>> {
        let &Reverse((at, timer)) = self.queue.peek()?;
        if at > now {
            return None;
        }
        self.queue.pop();
        self.armed.remove(&timer);
        self.skip_stale();
        Some(timer)
    }

    /// Timers armed (each once, however often it was re-armed).
    pub(super) fn len(&self) -> usize {
        self.armed.len()
    }

    /// Keeps only the timers `live` says still matter (bounds the table
    /// when many were armed for state that has since gone).
    pub(super) fn retain(&mut self, mut live: impl FnMut(&Timer<K>) -> bool) {
        self.armed.retain(|t, _| live(t));
        self.rebuild();
    }

    /// The queue again from the armed deadlines alone.
    fn rebuild(&mut self) {
        let entries: Vec<_> = self
            .armed
            .iter()
            .map(|(&t, &at)| Reverse((at, t)))
            .collect();
        self.queue = BinaryHeap::from(entries);
    }

    /// Drops queue entries at the head whose timer was re-armed since.
    fn skip_stale(&mut self) {
        while let Some(&Reverse((at, timer))) = self.queue.peek() {
            if self.armed.get(&timer) == Some(&at) {
                return;
            }
            self.queue.pop();
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

    /// A timeout that shrank: the later-armed, earlier deadline fires
    /// first, on time.
    #[test]
    fn a_shorter_deadline_armed_later_fires_first() {
        let mut t: Timers<u64> = Timers::default();
        t.arm(1_000, Timer::Read(1));
        t.arm(200, Timer::Read(2));
        assert_eq!(t.next(), Some(200));
        assert_eq!(t.pop_due(200), Some(Timer::Read(2)));
        assert_eq!(t.pop_due(999), None);
    }

    #[test]
    fn arming_again_replaces_the_deadline() {
        let mut t: Timers<u64> = Timers::default();
        t.arm(10, Timer::Read(1));
        t.arm(50, Timer::Read(1));
        assert_eq!((t.next(), t.len()), (Some(50), 1));
        assert_eq!(t.pop_due(49), None);
        assert_eq!(t.pop_due(50), Some(Timer::Read(1)));
        assert_eq!(t.pop_due(u64::MAX), None);
        // Re-armed earlier than before: the later entry is left behind.
        t.arm(90, Timer::Held(4));
        t.arm(60, Timer::Held(4));
        assert_eq!(t.pop_due(60), Some(Timer::Held(4)));
        assert_eq!((t.next(), t.len()), (None, 0));
    }

    /// Re-arming one timer for ever does not grow the queue.
    #[test]
    fn re_arming_keeps_the_queue_bounded() {
        let mut t: Timers<u64> = Timers::default();
        for at in (0..10_000).rev() {
            t.arm(at, Timer::Read(7));
        }
        assert!(t.queue.len() <= 2 * t.len() + 65);
        assert_eq!(t.pop_due(0), Some(Timer::Read(7)));
    }
}
