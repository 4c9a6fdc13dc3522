//! Rejoining from nothing. SWIM heals a partition by announcing to the
//! members it declared down, but foca does that only while it still holds
//! some member alive: a node that lost every peer (the two halves of a
//! two-node cluster, or every node of a cluster cut apart for longer than
//! the suspicion timeout) goes idle and never announces again, and its
//! peers, idle too, never dial it. Every few seconds a node that SWIM holds
//! no member alive therefore dials back the addresses the operator gave
//! (seeds) and the members it lost, and announces itself again to every
//! member still linked; the first answer brings SWIM back, and SWIM does
//! the rest.

use std::collections::VecDeque;

/// The addresses a lonely node dials back, and when it next looks.
#[derive(Debug)]
pub(super) struct Rejoin {
    /// Addresses the operator gave, in order, at most `max` of them.
    seeds: Vec<String>,
    /// Listen addresses of members lost (declared down or their link
    /// lost), oldest first, at most `max`; one that links again leaves.
    lost: VecDeque<String>,
    max: usize,
    period: u64,
    /// When to look next (unset until the first call with a time).
    at: Option<u64>,
}

impl Rejoin {
    /// Looks every `period` microseconds, remembering at most `max`
    /// seeds and `max` lost members.
    pub(super) fn new(period: u64, max: usize) -> Self {
        Rejoin {
            seeds: Vec::new(),
            lost: VecDeque::new(),
            max,
            period: period.max(1),
            at: None,
        }
    }

    pub(super) fn seed(&mut self, addr: &str) {
        if self.seeds.len() < self.max && !self.seeds.iter().any(|s| s == addr) {
            self.seeds.push(addr.to_string());
        }
    }

    pub(super) fn lost(&mut self, listen: &str) {
        if self.lost.iter().any(|l| l == listen) {
            return;
        }
        if self.lost.len() >= self.max {
            self.lost.pop_front();
        }
        self.lost.push_back(listen.to_string());
    }

    pub(super) fn found(&mut self, listen: &str) {
        self.lost.retain(|l| l != listen);
    }

    /// Arms the first look, if not armed yet.
    pub(super) fn arm(&mut self, now: u64) {
        self.at.get_or_insert(now.saturating_add(self.period));
    }

    pub(super) fn next_due(&self) -> Option<u64> {
        self.at
    }

    /// Whether a look is due at `now`; if so the next is armed.
    pub(super) fn due(&mut self, now: u64) -> bool {
        match self.at {
            Some(at) if at <= now => {
                self.at = Some(now.saturating_add(self.period));
                true
            }
            _ => false,
        }
    }

    /// The seeds, then the lost members' addresses.
    pub(super) fn addresses(&self) -> (Vec<String>, Vec<String>) {
        (self.seeds.clone(), self.lost.iter().cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::Rejoin;

    #[test]
    fn it_looks_once_a_period_and_keeps_its_lists_bounded() {
        let mut r = Rejoin::new(10, 2);
        assert!(!r.due(100), "not armed");
        r.arm(100);
        r.arm(105);
        assert_eq!(r.next_due(), Some(110), "the first arm holds");
        assert!(!r.due(109));
        assert!(r.due(112));
        assert_eq!(r.next_due(), Some(122));
        for s in ["a", "b", "a", "c"] {
            r.seed(s);
        }
        for l in ["x", "y", "x", "z"] {
            r.lost(l);
        }
        r.found("z");
        assert_eq!(
            r.addresses(),
            (vec!["a".into(), "b".into()], vec!["y".into()])
        );
    }
}
