//! The manager slice's side of the protocol: the digest of every block it
//! manages, recorded by the one node it told to read the block from the
//! origin (a grant, used once); the forwards it sent, so only a holder it
//! forwarded to can hand a read back; and the questions waiting for a
//! record that is on its way.

use super::disk_peers::DiskHints;
use super::node::NodeProtocol;
use super::timers::Timer;
use super::{Content, Digest, PeerMsg, ProtocolKey, Recorded};
use crate::coop::{AlgorithmKind, Msg, NodeId, SizeClassed};
use std::collections::{HashMap, VecDeque};

/// Most questions waiting for one block's record; more are answered at
/// once (without a digest).
const MAX_AWAITING_PER_BLOCK: usize = 64;

/// Most forwards remembered per block.
const MAX_FORWARDS_PER_BLOCK: usize = 16;

/// A node allowed to record a block's digest.
///
/// Until `deadline` readers forwarded to it wait for its record. Past it
/// the grant *lapses*: they are answered without one, but the node may
/// still record until a second deadline (or until another reader is
/// granted the block). A granted reader's origin read can queue behind
/// its others (a read-ahead of a whole file), and a record refused for
/// coming late left the block unrecorded, so every later reader went to
/// the origin too.
#[derive(Clone, Copy, Debug)]
struct Grant {
    node: NodeId,
    deadline: u64,
    lapsed: bool,
}

/// How many grant timeouts a lapsed grant still accepts its record.
const LAPSED_GRANT_TIMEOUTS: u64 = 10;

/// A forward sent to `holder` for `reader`, remembered until `deadline`
/// or until the holder's answer to it; `answered` once a `NotHere` of the
/// holder's re-served its reader (the holder's `NotHere` for this very
/// forward may still be on its way).
#[derive(Clone, Copy, Debug)]
struct Forwarded {
    holder: NodeId,
    reader: NodeId,
    deadline: u64,
    answered: bool,
}

/// The forwards of one block: the first inline (a block is rarely
/// forwarded to two readers at once), more on the heap.
#[derive(Clone, Debug)]
struct Forwards {
    first: Forwarded,
    more: Vec<Forwarded>,
}

impl Forwards {
    fn iter(&self) -> impl Iterator<Item = &Forwarded> {
        std::iter::once(&self.first).chain(&self.more)
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut Forwarded> {
        std::iter::once(&mut self.first).chain(&mut self.more)
    }

    fn len(&self) -> usize {
        1 + self.more.len()
    }

    /// Adds `f`, dropping the oldest beyond `max` (at least 2).
    fn push(&mut self, f: Forwarded, max: usize) {
        if self.len() >= max && !self.more.is_empty() {
            self.first = self.more.remove(0);
        }
        self.more.push(f);
    }

    /// Keeps those `keep` says; false if none is left.
    fn retain(&mut self, mut keep: impl FnMut(&Forwarded) -> bool) -> bool {
        self.more.retain(|f| keep(f));
        if keep(&self.first) {
            return true;
        }
        if self.more.is_empty() {
            return false;
        }
        self.first = self.more.remove(0);
        true
    }
}

/// A question that waits for a block's record.
#[derive(Clone, Copy, Debug)]
enum Awaiting {
    /// `asker` sent `HashOf`.
    HashOf { asker: NodeId },
    /// The read of `reader` was forwarded to `holder`, which is still
    /// reading the block from the origin: the reader's `Expect` waits.
    Expect { reader: NodeId, holder: NodeId },
}

/// Entries in each of the manager slice's tables.
pub(super) struct SliceSizes {
    pub(super) records: usize,
    pub(super) order: usize,
    pub(super) grants: usize,
    pub(super) forwards: usize,
    pub(super) awaiting: usize,
    pub(super) disk_hints: usize,
}

/// The manager slice's protocol state.
#[derive(Debug)]
pub(super) struct Slice<K> {
    records: HashMap<K, Recorded, foldhash::fast::FixedState>,
    /// Recorded blocks, oldest first (with stale ids of dropped records,
    /// skipped when reached).
    order: VecDeque<K>,
    grants: HashMap<K, Grant, foldhash::fast::FixedState>,
    forwards: HashMap<K, Forwards, foldhash::fast::FixedState>,
    awaiting: HashMap<K, Vec<Awaiting>, foldhash::fast::FixedState>,
    /// Which members' disks hold blocks no memory does (`disk_peers.rs`).
    pub(super) disk_hints: DiskHints<K>,
}

impl<K> Default for Slice<K> {
    fn default() -> Self {
        Slice {
            records: HashMap::default(),
            order: VecDeque::new(),
            grants: HashMap::default(),
            forwards: HashMap::default(),
            awaiting: HashMap::default(),
            disk_hints: DiskHints::default(),
        }
    }
}

impl<K: ProtocolKey> Slice<K> {
    /// Whether `node` may record `block` now (its grant may have lapsed).
    pub(super) fn granted(&self, block: K, node: NodeId) -> bool {
        self.grants.get(&block).is_some_and(|g| g.node == node)
    }

    /// Whether `block`'s record is expected soon: granted, not lapsed.
    fn grant_live(&self, block: K) -> Option<NodeId> {
        let g = self.grants.get(&block)?;
        (!g.lapsed).then_some(g.node)
    }

    /// Whether a read of `block` was forwarded to `holder`.
    pub(super) fn forwarded_to(&self, block: K, holder: NodeId) -> bool {
        self.forwards
            .get(&block)
            .is_some_and(|f| f.iter().any(|f| f.holder == holder))
    }

    /// Whether a forward of `block` may be remembered: the table holds as
    /// many blocks' forwards as the directory tracks blocks.
    pub(super) fn forward_room(&self, block: K, max: usize) -> bool {
        self.forwards.len() < max || self.forwards.contains_key(&block)
    }

    /// Whether no question waits for a record.
    pub(super) fn is_quiet(&self) -> bool {
        self.awaiting.is_empty()
    }

    /// Grants and forward entries (for bounding the timers).
    pub(super) fn len(&self) -> usize {
        self.grants.len() + self.forwards.len()
    }

    /// How many entries each table holds.
    pub(super) fn sizes(&self) -> SliceSizes {
        SliceSizes {
            records: self.records.len(),
            order: self.order.len(),
            grants: self.grants.len(),
            forwards: self.forwards.len(),
            awaiting: self.awaiting.len(),
            disk_hints: self.disk_hints.len(),
        }
    }

    /// Whether a grant or forward of `block` is remembered.
    pub(super) fn tracks(&self, block: K) -> bool {
        self.grants.contains_key(&block) || self.forwards.contains_key(&block)
    }

    /// The recorded digest of `block`, and its recorder.
    pub(super) fn record(&self, block: K) -> Option<Recorded> {
        self.records.get(&block).copied()
    }

    /// Records `digest` for `block`, the oldest record going beyond `max`.
    /// Returns false on a conflict with an earlier record, which is then
    /// dropped as well (one of the two recorders lied).
    fn insert_record(&mut self, block: K, recorded: Recorded, max: usize) -> bool {
        match self.records.get(&block) {
            Some(old) if old.digest == recorded.digest => return true,
            Some(_) => {
                self.records.remove(&block);
                return false;
            }
            None => {}
        }
        self.records.insert(block, recorded);
        self.order.push_back(block);
        while self.records.len() > max {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            self.records.remove(&old);
        }
        if self.order.len() > 2 * max.max(self.records.len()) {
            let records = &self.records;
            self.order.retain(|b| records.contains_key(b));
        }
        true
    }

    /// Forgets forwards of `block` past their deadline.
    pub(super) fn expire_forwards(&mut self, block: K, now: u64) {
        if let Some(f) = self.forwards.get_mut(&block)
            && !f.retain(|f| f.deadline > now)
        {
            self.forwards.remove(&block);
        }
    }

    /// A `NotHere` of `holder` for `block`: the readers of its forwards not
    /// yet answered, to serve again. The holder answers each `Forward`
    /// with its own `NotHere`, so one forward is forgotten per `NotHere`
    /// and the others stay, answered, until theirs arrive: forgetting them
    /// all at the first made the holder's next `NotHere` look like one no
    /// forward asked for (a violation by an honest holder, now and then
    /// in `every_live_policy_serves_right_bytes_under_eviction`; every
    /// time in `protocol_sim.rs:
    /// concurrent_reads_under_recirculation_raise_no_violation`).
    fn take_forwards(&mut self, block: K, holder: NodeId) -> Vec<NodeId> {
        let Some(f) = self.forwards.get_mut(&block) else {
            return Vec::new();
        };
        let mut readers = Vec::new();
        for x in f.iter_mut() {
            if x.holder == holder && !x.answered {
                x.answered = true;
                readers.push(x.reader);
            }
        }
        let mut forgot = false;
        let left = f.retain(|x| {
            let forget = !forgot && x.holder == holder && x.answered;
            forgot |= forget;
            !forget
        });
        if !left {
            self.forwards.remove(&block);
        }
        readers
    }

    /// Records a forward of `block`, the oldest dropped beyond `max`.
    fn add_forward(&mut self, block: K, f: Forwarded, max: usize) {
        match self.forwards.get_mut(&block) {
            Some(list) => list.push(f, max),
            None => {
                let list = Forwards {
                    first: f,
                    more: Vec::new(),
                };
                self.forwards.insert(block, list);
            }
        }
    }

    /// Readers forwarded to `holder` (which left), forgotten.
    fn take_forwards_to(&mut self, holder: NodeId) -> Vec<(K, NodeId)> {
        let mut lost = Vec::new();
        self.forwards.retain(|&b, f| {
            f.retain(|f| {
                let gone = f.holder == holder;
                if gone && !f.answered {
                    lost.push((b, f.reader));
                }
                !gone
            })
        });
        lost
    }
}

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// `reader` missed `block`: the manager machine records it as a holder
    /// and serves it.
    pub(super) fn manager_read(&mut self, reader: NodeId, block: K, now: u64) {
        if self.directory_full(block) {
            self.stats.dropped += 1;
            return self.manager_fetch(block, reader, now);
        }
        let msg = Msg::Read {
            block,
            reader,
            hops: 1,
        };
        self.deliver_to_manager(reader, msg, now);
    }

    /// `from` asks that every copy of `block` go (`coopcache evict`): each
    /// holder this manager knows is told to drop it, and under
    /// Hash-Distributed the block's partition owner too (its partition is
    /// not in the directory). The sender dropped its own already.
    pub(super) fn manager_evict(&mut self, from: NodeId, block: K) {
        let holders = self.manager.evict(block);
        let mut told: Vec<NodeId> = holders.iter().filter(|&h| h != from).collect();
        if self.kind == AlgorithmKind::Hash {
            let owner = self.owners.of(&block);
            if owner != from && !told.contains(&owner) {
                told.push(owner);
            }
        }
        for holder in told {
            self.send(holder, PeerMsg::Invalidate { block });
        }
    }

    /// `from` says it caches `block`: recorded, unless the directory is
    /// full (the block is then simply not served from `from`).
    pub(super) fn manager_cached(&mut self, from: NodeId, block: K, now: u64) {
        if self.directory_full(block) {
            self.stats.dropped += 1;
            return;
        }
        self.deliver_to_manager(from, Msg::Cached { block }, now);
    }

    /// Whether the directory has no room for `block` (it tracks as many
    /// blocks as it may, and not this one).
    fn directory_full(&self, block: K) -> bool {
        let directory = self.manager.directory();
        directory.len() >= self.cfg.max_directory && directory.holders(block).is_empty()
    }

    /// A holder this manager forwarded to no longer has `block`: each
    /// reader it was serving is served again (another holder, or the
    /// origin).
    pub(super) fn manager_not_here(&mut self, holder: NodeId, block: K, now: u64) {
        // A disk holder that answers so is not asked for the block again.
        self.slice.disk_hints.remove(block, holder);
        for reader in self.slice.take_forwards(block, holder) {
            let msg = Msg::NotHere {
                block,
                reader,
                hops: 2,
            };
            self.deliver_to_manager(holder, msg, now);
        }
    }

    /// The granted reader's digest of `block`.
    pub(super) fn manager_record(&mut self, from: NodeId, block: K, digest: Digest, now: u64) {
        self.slice.grants.remove(&block);
        let recorded = Recorded { digest, by: from };
        if !self
            .slice
            .insert_record(block, recorded, self.cfg.max_records)
        {
            self.stats.record_conflicts += 1;
            let rule = "a second record of one block differs from the first (both dropped)";
            let msg: PeerMsg<K, D> = PeerMsg::Record { block, digest };
            self.violation(from, &msg, rule, now);
        }
        self.answer_awaiting(block);
    }

    /// `asker` wants `block`'s digest: given now, or once the record a
    /// granted reader is about to send arrives.
    pub(super) fn manager_hash_of(&mut self, asker: NodeId, block: K, _now: u64) {
        let recorded = self.slice.record(block);
        if recorded.is_none() && self.slice.grant_live(block).is_some() {
            let waiting = self.slice.awaiting.entry(block).or_default();
            if waiting.len() < MAX_AWAITING_PER_BLOCK {
                return waiting.push(Awaiting::HashOf { asker });
            }
            self.stats.dropped += 1;
        }
        self.send(asker, PeerMsg::HashIs { block, recorded });
    }

    /// Answers the questions that waited for `block`'s record (which came,
    /// or whose grant lapsed).
    fn answer_awaiting(&mut self, block: K) {
        let recorded = self.slice.record(block);
        for waiting in self.slice.awaiting.remove(&block).unwrap_or_default() {
            match (waiting, recorded) {
                (Awaiting::HashOf { asker }, recorded) => {
                    self.send(asker, PeerMsg::HashIs { block, recorded })
                }
                (Awaiting::Expect { reader, holder }, Some(recorded)) => {
                    let expect = PeerMsg::Expect {
                        block,
                        recorded,
                        holder,
                    };
                    self.send(reader, expect);
                }
                (Awaiting::Expect { reader, .. }, None) => {
                    let fetch = PeerMsg::FetchOrigin {
                        block,
                        record: false,
                    };
                    self.send(reader, fetch);
                }
            }
        }
    }

    /// A grant's deadline passed: if unused, it lapses and whoever waited
    /// for its record is answered without one; at its second deadline a
    /// lapsed grant is forgotten.
    pub(super) fn grant_deadline(&mut self, block: K, now: u64) {
        let keep = LAPSED_GRANT_TIMEOUTS * self.grant_timeout();
        let Some(g) = self.slice.grants.get_mut(&block) else {
            return;
        };
        if g.deadline > now {
            return;
        }
        if g.lapsed {
            self.slice.grants.remove(&block);
            return;
        }
        g.lapsed = true;
        g.deadline = now + keep;
        let deadline = g.deadline;
        self.timers.arm(deadline, Timer::Grant(block));
        self.answer_awaiting(block);
    }

    /// The manager machine forwards `reader`'s read of `block` to
    /// `holder`. The reader is told what the holder's contents must hash
    /// to; with no record to check them against, the reader reads the
    /// origin instead, unless the holder is the granted reader still
    /// reading it (then the forward waits at the holder and the `Expect`
    /// here, until the record comes: one origin read for both).
    pub(super) fn manager_forward(&mut self, block: K, holder: NodeId, reader: NodeId, now: u64) {
        if !self.slice.forward_room(block, self.cfg.max_directory) {
            // As many blocks' forwards remembered as the directory tracks
            // blocks (found by the fault harness, seed 13948: entries of
            // blocks the directory had dropped outlived it): the reader
            // reads the origin rather than be forwarded unremembered.
            self.stats.dropped += 1;
            return self.manager_fetch(block, reader, now);
        }
        match self.slice.record(block) {
            Some(recorded) => {
                let expect = PeerMsg::Expect {
                    block,
                    recorded,
                    holder,
                };
                self.send(reader, expect);
            }
            None if self.slice.grant_live(block) == Some(holder) => {
                let waiting = self.slice.awaiting.entry(block).or_default();
                if waiting.len() >= MAX_AWAITING_PER_BLOCK {
                    return self.manager_fetch(block, reader, now);
                }
                waiting.push(Awaiting::Expect { reader, holder });
            }
            None => return self.manager_fetch(block, reader, now),
        }
        let deadline = now + self.peer_timeout();
        let forward = Forwarded {
            holder,
            reader,
            deadline,
            answered: false,
        };
        self.slice
            .add_forward(block, forward, MAX_FORWARDS_PER_BLOCK);
        self.timers.arm(deadline, Timer::Forward(block));
        self.send(holder, PeerMsg::Forward { block, reader });
    }

    /// The manager machine has `reader` read `block` from the origin. The
    /// reader reads it itself (its bytes cross the network once) and
    /// records its digest if none is recorded or granted.
    ///
    /// Hash-Distributed readers ask the partition owner and the manager at
    /// once, and the manager never forwards: with a record, the reader
    /// gets the digest to check the owner's contents against instead.
    pub(super) fn manager_fetch(&mut self, block: K, reader: NodeId, now: u64) {
        if let Some(recorded) = self.slice.record(block) {
            let msg = match self.kind {
                AlgorithmKind::Hash => PeerMsg::HashIs {
                    block,
                    recorded: Some(recorded),
                },
                _ => PeerMsg::FetchOrigin {
                    block,
                    record: false,
                },
            };
            return self.send(reader, msg);
        }
        // One grant per block at a time, and no more grants than the
        // directory tracks blocks (beyond, readers read without recording).
        // A lapsed grant gives way to the new reader.
        let record = match self.slice.grants.get(&block) {
            Some(g) => g.lapsed,
            None => self.slice.grants.len() < self.cfg.max_directory,
        };
        if record {
            let deadline = now + self.grant_timeout();
            self.slice.grants.insert(
                block,
                super::manager::Grant {
                    node: reader,
                    deadline,
                    lapsed: false,
                },
            );
            self.timers.arm(deadline, Timer::Grant(block));
        }
        self.send(reader, PeerMsg::FetchOrigin { block, record });
    }

    /// How long a grant lasts: a peer timeout for the message and two for
    /// the origin read (a read's own deadline covers the same).
    fn grant_timeout(&self) -> u64 {
        3 * self.peer_timeout()
    }

    /// `lost` left the cluster: its grants lapse, and readers whose reads
    /// were forwarded to it are served again.
    pub(super) fn manager_lost(&mut self, lost: NodeId, now: u64) {
        self.slice.disk_hints.forget_node(lost);
        let lapsed: Vec<K> = self
            .slice
            .grants
            .iter()
            .filter(|(_, g)| g.node == lost)
            .map(|(&b, _)| b)
            .collect();
        for block in lapsed {
            self.slice.grants.remove(&block);
            self.answer_awaiting(block);
        }
        for (block, reader) in self.slice.take_forwards_to(lost) {
            // A reader that left too is not served (nor recorded again).
            if self.live.binary_search(&reader).is_err() {
                continue;
            }
            let msg = Msg::NotHere {
                block,
                reader,
                hops: 2,
            };
            self.deliver_to_manager(lost, msg, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(n: u8) -> Recorded {
        let digest = Digest {
            hash: [n; 32],
            len: 1,
        };
        Recorded { digest, by: 3 }
    }

    #[test]
    fn forwards_are_bounded_oldest_first_and_retained_in_any_slot() {
        let f = |holder, deadline| Forwarded {
            holder,
            reader: 9,
            deadline,
            answered: false,
        };
        let mut s: Slice<u64> = Slice::default();
        for i in 0..20 {
            s.add_forward(1, f(i, u64::from(i)), 16);
        }
        assert_eq!(s.forwards[&1].len(), 16);
        let holders: Vec<u32> = s.forwards[&1].iter().map(|f| f.holder).collect();
        assert_eq!(holders, (4..20).collect::<Vec<_>>());
        assert!(s.forwarded_to(1, 19) && !s.forwarded_to(1, 3));
        s.expire_forwards(1, 17);
        assert_eq!(s.take_forwards(1, 18), [9]);
        assert_eq!(s.take_forwards(1, 19), [9]);
        assert!(!s.forwards.contains_key(&1), "none left");
        s.add_forward(2, f(7, 5), 16);
        assert_eq!(s.take_forwards_to(7), [(2, 9)]);
        assert!(s.forwards.is_empty());
        // Two forwards to one holder: its first NotHere re-serves both
        // readers, its second is still one a forward asked for.
        s.add_forward(
            3,
            Forwarded {
                reader: 8,
                ..f(5, 99)
            },
            16,
        );
        s.add_forward(3, f(5, 99), 16);
        assert_eq!(s.take_forwards(3, 5), [8, 9]);
        assert!(s.forwarded_to(3, 5));
        assert_eq!(s.take_forwards(3, 5), Vec::<NodeId>::new());
        assert!(!s.forwarded_to(3, 5) && s.forwards.is_empty());
    }

    #[test]
    fn records_are_bounded_oldest_first_and_conflicts_drop_both() {
        let mut s: Slice<u64> = Slice::default();
        for b in 0..10u64 {
            assert!(s.insert_record(b, d(b as u8), 4));
        }
        assert_eq!(s.records.len(), 4);
        assert_eq!(s.record(5), None);
        assert_eq!(s.record(9), Some(d(9)));
        assert!(
            s.insert_record(9, d(9), 4),
            "the same digest again is no conflict"
        );
        assert!(!s.insert_record(9, d(1), 4));
        assert_eq!(s.record(9), None, "a conflict keeps neither");
        assert!(s.order.len() <= 8);
    }
}
