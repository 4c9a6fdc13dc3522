//! Every node's armed deadlines in one ordered index, so that a step
//! finds the earliest timer without asking every node. Asking every node
//! each step made a step O(N): at 1,000 nodes `poll_timeout` took 36% of
//! the run and a seed of 500 reads did not finish in ten minutes.
//!
//! The world marks a node touched whenever it lends out the node's
//! protocol or membership mutably; before the index is read, every
//! touched node's deadlines are asked again ([`super::World::refresh_timers`]).
//! A full comparison with the nodes themselves runs with the directory
//! checks, so an access that forgot to mark its node fails loudly.

use super::NodeId;
use std::collections::BTreeSet;

/// Which machine of a node armed a deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Machine {
    /// Its protocol (reads, commits, locks, listings).
    Proto = 0,
    /// Its membership (SWIM).
    Members = 1,
}

/// The index.
#[derive(Debug, Default)]
pub(super) struct Timers {
    /// Per node, each machine's deadline as last asked.
    armed: Vec<[Option<u64>; 2]>,
    /// The same deadlines, in time order.
    order: BTreeSet<(u64, NodeId, Machine)>,
    /// Nodes lent out mutably since their deadlines were last asked.
    touched: Vec<NodeId>,
    is_touched: Vec<bool>,
}

impl Timers {
    /// Marks `id`'s deadlines as possibly changed.
    pub(super) fn touch(&mut self, id: NodeId) {
        let i = id as usize;
        if i >= self.is_touched.len() {
            self.is_touched.resize(i + 1, false);
            self.armed.resize(i + 1, [None; 2]);
        }
        if !self.is_touched[i] {
            self.is_touched[i] = true;
            self.touched.push(id);
        }
    }

    /// The nodes touched since the last call, unmarked.
    pub(super) fn take_touched(&mut self) -> Vec<NodeId> {
        for &id in &self.touched {
            self.is_touched[id as usize] = false;
        }
        std::mem::take(&mut self.touched)
    }

    /// Gives back the (emptied) list [`take_touched`](Self::take_touched)
    /// returned, so its allocation is reused.
    pub(super) fn recycle(&mut self, mut list: Vec<NodeId>) {
        if self.touched.is_empty() {
            list.clear();
            self.touched = list;
        }
    }

    /// `id`'s `machine` is armed for `at` now.
    pub(super) fn set(&mut self, id: NodeId, machine: Machine, at: Option<u64>) {
        let i = id as usize;
        if i >= self.armed.len() {
            self.armed.resize(i + 1, [None; 2]);
            self.is_touched.resize(i + 1, false);
        }
        let slot = &mut self.armed[i][machine as usize];
        if *slot == at {
            return;
        }
        if let Some(old) = slot.take() {
            self.order.remove(&(old, id, machine));
        }
        if let Some(new) = at {
            self.order.insert((new, id, machine));
        }
        *slot = at;
    }

    /// What the index holds for `id`'s `machine`.
    pub(super) fn get(&self, id: NodeId, machine: Machine) -> Option<u64> {
        self.armed.get(id as usize)?[machine as usize]
    }

    /// The earliest deadline of any node.
    pub(super) fn first(&self) -> Option<u64> {
        self.order.first().map(|&(at, _, _)| at)
    }

    /// The lowest node id at or above `from` whose `machine` is due at
    /// `now`. The due entries are few (those at or before `now`), so this
    /// scans them, not the nodes.
    pub(super) fn due_from(&self, machine: Machine, from: NodeId, now: u64) -> Option<NodeId> {
        self.order
            .range(..=(now, NodeId::MAX, Machine::Members))
            .filter(|&&(_, id, m)| m == machine && id >= from)
            .map(|&(_, id, _)| id)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_keeps_one_deadline_per_machine_and_finds_the_due_in_id_order() {
        let mut t = Timers::default();
        t.set(3, Machine::Proto, Some(50));
        t.set(1, Machine::Proto, Some(40));
        t.set(2, Machine::Members, Some(10));
        t.set(1, Machine::Proto, Some(60)); // re-armed: the old entry goes
        assert_eq!(t.first(), Some(10));
        assert_eq!(t.get(1, Machine::Proto), Some(60));
        assert_eq!(t.due_from(Machine::Proto, 0, 55), Some(3));
        assert_eq!(t.due_from(Machine::Proto, 0, 60), Some(1));
        assert_eq!(t.due_from(Machine::Proto, 2, 60), Some(3));
        assert_eq!(t.due_from(Machine::Proto, 4, 60), None);
        assert_eq!(t.due_from(Machine::Members, 0, 9), None);
        assert_eq!(t.due_from(Machine::Members, 0, 10), Some(2));
        t.set(2, Machine::Members, None);
        assert_eq!(t.first(), Some(50));
    }

    #[test]
    fn a_node_touched_twice_is_asked_once() {
        let mut t = Timers::default();
        t.touch(5);
        t.touch(2);
        t.touch(5);
        let touched = t.take_touched();
        assert_eq!(touched, vec![5, 2]);
        t.recycle(touched);
        t.touch(5);
        assert_eq!(t.take_touched(), vec![5]);
    }
}
