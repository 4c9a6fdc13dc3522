//! The invariants, checked as the run goes: right bytes, reads that
//! finish, bounded tables, directories naming only live members.

use super::plan::{Mode, Plan};
use super::report::Violation;
use coopcache_core::coop::NodeId;
use coopcache_core::protocol::{BlockId, Digest, NodeProtocol, ReadFailure, Served};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// Reads finished by one completion.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) ok: u64,
    pub(super) failed: u64,
    pub(super) tolerated: u64,
}

/// What the checker remembers of the run.
pub(super) struct Checker {
    /// How long a read may wait.
    bound_us: u64,
    /// Blocks a node caches at most.
    capacity: usize,
    /// Reads in flight: their start times and sequence numbers.
    reads: BTreeMap<(NodeId, BlockId), Vec<(u64, u64)>>,
    /// The same reads, oldest first.
    oldest: BTreeMap<(u64, u64), (NodeId, BlockId)>,
    seq: u64,
    /// Reads the origin failed (a failed read must have one).
    origin_failed: BTreeSet<(NodeId, BlockId)>,
    /// Blocks whose wrong bytes the trust model allows.
    tainted: HashSet<BlockId>,
}

impl Checker {
    pub(super) fn new(plan: &Plan) -> Checker {
        Checker {
            bound_us: match plan.mode {
                Mode::Liveness => plan.read_bound_us(),
                Mode::Safety => plan.hang_bound_us(),
            },
            capacity: plan.capacity,
            reads: BTreeMap::new(),
            oldest: BTreeMap::new(),
            seq: 0,
            origin_failed: BTreeSet::new(),
            tainted: HashSet::new(),
        }
    }

    /// `node` started reading `block`.
    pub(super) fn started(&mut self, node: NodeId, block: BlockId, now: u64) {
        self.seq += 1;
        self.reads
            .entry((node, block))
            .or_default()
            .push((now, self.seq));
        self.oldest.insert((now, self.seq), (node, block));
    }

    /// `node` crashed: its reads are gone with it. Returns how many.
    pub(super) fn lost(&mut self, node: NodeId) -> u64 {
        let mine: Vec<(NodeId, BlockId)> = self
            .reads
            .range((node, BlockId::new(0, 0))..)
            .take_while(|((n, _), _)| *n == node)
            .map(|(k, _)| *k)
            .collect();
        let mut lost = 0;
        for key in mine {
            for start in self.reads.remove(&key).unwrap_or_default() {
                self.oldest.remove(&start);
                lost += 1;
            }
        }
        self.origin_failed.retain(|(n, _)| *n != node);
        lost
    }

    /// Reads in flight.
    pub(super) fn pending(&self) -> usize {
        self.oldest.len()
    }

    pub(super) fn taint(&mut self, block: BlockId) {
        self.tainted.insert(block);
    }

    /// Whether a liar vouched for `block`'s bytes.
    pub(super) fn is_tainted(&self, block: BlockId) -> bool {
        self.tainted.contains(&block)
    }

    pub(super) fn origin_failed(&mut self, node: NodeId, block: BlockId) {
        self.origin_failed.insert((node, block));
    }

    /// Honest `node` finished its reads of `block` with `result`.
    /// `want` is the origin's contents of `block`.
    pub(super) fn completed(
        &mut self,
        node: NodeId,
        block: BlockId,
        want: Digest,
        now: u64,
        result: &Result<Served<Digest>, ReadFailure>,
    ) -> Result<Tally, Violation> {
        let Some(starts) = self.reads.remove(&(node, block)) else {
            return Err(Violation::UnstartedCompletion { node, block });
        };
        let origin_failed = self.origin_failed.remove(&(node, block));
        let mut tally = Tally::default();
        for start in &starts {
            self.oldest.remove(start);
            let waited_us = now - start.0;
            if waited_us > self.bound_us {
                let bound_us = self.bound_us;
                return Err(Violation::SlowRead {
                    node,
                    block,
                    waited_us,
                    bound_us,
                });
            }
        }
        let n = starts.len() as u64;
        match result {
            Ok(served) if served.data == want => tally.ok = n,
            Ok(_) if self.tainted.contains(&block) => tally.tolerated = n,
            Ok(served) => {
                return Err(Violation::WrongBytes {
                    node,
                    block,
                    got: served.data,
                    want,
                    level: format!("{:?}", served.level),
                });
            }
            Err(ReadFailure::Origin) if !origin_failed => {
                return Err(Violation::FalseOriginError { node, block });
            }
            Err(_) => tally.failed = n,
        }
        Ok(tally)
    }

    /// The oldest read in flight, if it has waited too long.
    pub(super) fn overdue(&self, now: u64) -> Result<(), Violation> {
        match self.oldest.first_key_value() {
            Some((&(start, _), &(node, block))) if now - start > self.bound_us => {
                Err(Violation::SlowRead {
                    node,
                    block,
                    waited_us: now - start,
                    bound_us: self.bound_us,
                })
            }
            _ => Ok(()),
        }
    }

    /// Every table of `node` within its bound, and its caches within its
    /// capacity.
    pub(super) fn bounds(
        &self,
        node: NodeId,
        proto: &NodeProtocol<BlockId, Digest>,
    ) -> Result<(), Violation> {
        if let Some(o) = proto.occupancy().into_iter().find(|o| o.is_over()) {
            return Err(Violation::OverBound {
                node,
                table: o.table,
                len: o.len,
                bound: o.bound,
            });
        }
        let stats = proto.stats();
        for (what, count) in [
            ("inputs that ran away", stats.runaways),
            ("messages with no live form", stats.not_live),
        ] {
            if count > 0 {
                return Err(Violation::Internal { node, what, count });
            }
        }
        let cached = proto.usage().blocks;
        if cached > self.capacity {
            return Err(Violation::OverBound {
                node,
                table: "cached blocks",
                len: cached,
                bound: self.capacity,
            });
        }
        Ok(())
    }

    /// Every holder in `node`'s directory is one of its live members.
    pub(super) fn directory(
        node: NodeId,
        proto: &NodeProtocol<BlockId, Digest>,
    ) -> Result<(), Violation> {
        let members = proto.members();
        match proto
            .directory()
            .pairs()
            .find(|(_, h)| members.binary_search(h).is_err())
        {
            Some((block, holder)) => Err(Violation::DeadHolder {
                node,
                block,
                holder,
                members: members.to_vec(),
            }),
            None => Ok(()),
        }
    }
}
