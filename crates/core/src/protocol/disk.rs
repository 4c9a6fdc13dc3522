//! A node's disk tier (docs/ARCHITECTURE.md, "The disk tier"): blocks this
//! node read, kept in slots of its local disk, served when a read would
//! otherwise go to the origin.
//!
//! The protocol decides everything here; the driver only carries bytes to
//! and from the slots it is told ([`Action::ReadDisk`],
//! [`Action::WriteDisk`]):
//!
//! - **Which blocks.** Every block a read of this node brought in from the
//!   origin or a peer is written to disk as it completes (an inclusive
//!   tier: a block the memory cache later drops, forwards or loses in a
//!   crash is still on disk, and a restarted node finds everything it
//!   read, not only what memory happened to evict). Block ids name a file
//!   *version*, so a slot never needs invalidating: a changed file's
//!   blocks have other ids, and the old ones age out.
//! - **When it is read.** At the point a read would go to the origin:
//!   after the node's memory and the cluster's (lookup order: local
//!   memory, peer memory, local disk, origin). The cooperation machines
//!   see a disk hit as the origin's answer, so the managers' directories
//!   and N-Chance's, Greedy's and Hash-Distributed's choices are exactly
//!   as without a disk. A read whose peer contents failed their check
//!   reads the origin itself: only the origin's copy may blame a peer.
//! - **Whom it trusts.** Not the disk: every block read back is hashed
//!   where it arrived and must match the digest recorded when it was
//!   written (or, after a restart, the one stored beside it); otherwise
//!   the slot is forgotten and the read goes to the origin.
//! - **Bounds.** One slot per block, as many slots as the driver's store
//!   has; the least recently used block's slot is overwritten when all
//!   are taken ([`DiskTier::metadata_bytes`] is what the index costs the
//!   memory budget). At most [`DiskSettings::max_writing`] writes are on
//!   their way to the disk at once: a block read beyond that is not
//!   written (counted in `disk_writes_skipped`), so a slow disk holds a
//!   bounded share of the budget, never the read.
//! - **When it fails.** After [`MAX_DISK_ERRORS`] failed calls in a row
//!   the tier is given up (memory alone, the driver warns), and the node
//!   asks the driver to open it again ([`Action::ReopenDisk`]) after
//!   [`DiskSettings::retry_us`], then twice as long after each failure, up
//!   to [`MAX_DISK_RETRY_US`]: a disk that was full, or unplugged and
//!   plugged back, is used again without a restart, with what it held.
//!
//! [`Action::ReadDisk`]: super::Action::ReadDisk
//! [`Action::WriteDisk`]: super::Action::WriteDisk
//! [`Action::ReopenDisk`]: super::Action::ReopenDisk

use super::timers::Timer;
use super::{Action, Content, Digest, NodeProtocol, ProtocolKey};
use crate::coop::SizeClassed;
use crate::policy::Lru;
use crate::policy::{BLOCK, BlockKey, Policy};
use std::collections::HashMap;

/// Bytes of memory one disk slot's entry costs at most: the index entry
/// (key, slot, digest, state, with the hash table's slack) and the LRU
/// queue's node. What the daemon's budget reserves per slot. Measured
/// (`coopcache bench disk --index-slots`, docs/benchmarks.md): 161 to 265
/// bytes on the heap, by where the slot count falls between two sizes of
/// the block-to-slot table, which is made for every slot at start so it
/// never grows past this.
pub const ENTRY_BYTES: u64 = 272;

/// One block on disk.
#[derive(Clone, Copy, Debug)]
struct Entry {
    slot: u32,
    digest: Digest,
    /// Written and acknowledged by the driver: may be read.
    ready: bool,
}

/// The index of a node's disk tier: which block is in which slot, and in
/// which order slots are reused.
#[derive(Debug)]
pub struct DiskTier<K> {
    entries: HashMap<K, Entry, foldhash::fast::FixedState>,
    /// Slot to block, for reusing a slot whose block the LRU dropped.
    by_slot: Vec<Option<K>>,
    /// Slots never used (or freed by a failed check), taken first; a slot
    /// recovery took meanwhile stays in it and is skipped when popped (so
    /// recovering a disk costs no search of this list).
    free: Vec<u32>,
    lru: Lru<K>,
    /// Reads and writes the driver failed in a row ([`MAX_DISK_ERRORS`]).
    errors: u32,
    /// Writes sent to the driver and not reported yet.
    writing: u32,
    settings: DiskSettings,
}

/// A node's disk tier as its driver's store allows it
/// ([`NodeProtocol::set_disk`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskSettings {
    /// Slots the store has (at least one is used).
    pub slots: u32,
    /// Writes on their way to the disk at once (at least one); a block
    /// read while this many are is not written. The daemon gives
    /// `DISK_WRITE_BYTES` of its budget to them, over the largest block.
    pub max_writing: u32,
    /// How long after the tier is given up the node first asks for it to
    /// be opened again, in microseconds.
    pub retry_us: u64,
}

impl DiskSettings {
    /// `slots` slots, writes unbounded and a retry a minute after a
    /// failure: a simulated disk never lags nor fails.
    pub fn unbounded(slots: u32) -> Self {
        DiskSettings {
            slots,
            max_writing: u32::MAX,
            retry_us: DISK_RETRY_US,
        }
    }
}

/// The daemon's first wait before opening a given-up disk tier again
/// ([`DiskSettings::retry_us`]).
pub const DISK_RETRY_US: u64 = 60_000_000;

/// The longest wait between two attempts to open a given-up disk tier
/// again: a disk gone for good costs an attempt (its files' headers read)
/// every half hour.
pub const MAX_DISK_RETRY_US: u64 = 30 * 60_000_000;

/// A tier given up: how long until the next attempt to open it again.
#[derive(Clone, Copy, Debug)]
pub(super) struct Lost {
    settings: DiskSettings,
    wait_us: u64,
}

/// Failed disk reads and writes in a row after which the node gives its
/// disk tier up and goes on with memory alone: a disk that is gone, full
/// or failing answers every call with an error, and each would cost a
/// read its slot's round trip before the origin.
pub const MAX_DISK_ERRORS: u32 = 16;

impl<K: BlockKey> DiskTier<K> {
    /// A tier of `settings.slots` empty slots (at least one).
    pub fn new(settings: DiskSettings) -> Self {
        let slots = settings.slots.max(1);
        DiskTier {
            // Sized once for every slot: a table that doubled while
            // blocks came would pass the budget's charge for a moment.
            entries: HashMap::with_capacity_and_hasher(slots as usize, Default::default()),
            by_slot: vec![None; slots as usize],
            // Popped from the end: slot 0 first.
            free: (0..slots).rev().collect(),
            lru: Lru::new(slots as usize).expect("at least one slot"),
            errors: 0,
            writing: 0,
            settings,
        }
    }

    /// Slots in all.
    pub fn slots(&self) -> u32 {
        self.by_slot.len() as u32
    }

    /// Writes on their way to the disk.
    pub fn writing(&self) -> u32 {
        self.writing
    }

    /// Blocks on disk, ready or being written.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no block is on disk.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Memory the index takes, at most ([`ENTRY_BYTES`] a slot).
    pub fn metadata_bytes(&self) -> u64 {
        u64::from(self.slots()) * ENTRY_BYTES
    }

    /// A block found in `slot` when the node started, stored with
    /// `digest`: taken in unless the slot is out of range or taken, or the
    /// block is there already (a stale duplicate of a slot reused before a
    /// crash). Returns whether it was.
    pub fn recover(&mut self, block: K, slot: u32, digest: Digest) -> bool {
        let taken = self.by_slot.get(slot as usize).is_none_or(Option::is_some);
        if taken || self.entries.contains_key(&block) {
            return false;
        }
        self.take(block, slot, digest, true);
        true
    }

    /// Gives `slot` to `block`, most recently used.
    fn take(&mut self, block: K, slot: u32, digest: Digest, ready: bool) {
        self.by_slot[slot as usize] = Some(block);
        let entry = Entry {
            slot,
            digest,
            ready,
        };
        self.entries.insert(block, entry);
        self.lru.insert(block, BLOCK, ());
    }

    /// The lowest free slot not taken by recovery since it was freed.
    fn pop_free(&mut self) -> Option<u32> {
        while let Some(slot) = self.free.pop() {
            if self.by_slot[slot as usize].is_none() {
                return Some(slot);
            }
        }
        None
    }

    /// The slot holding `block`, ready to be read, as a use of it.
    pub fn lookup(&mut self, block: K) -> Option<(u32, Digest)> {
        let e = self.entries.get(&block).filter(|e| e.ready)?;
        let found = (e.slot, e.digest);
        let _ = self.lru.lookup(block);
        Some(found)
    }

    /// A slot for `block`, of `digest`, to write it into: a free one, or
    /// the least recently used block's. `None` if the block is on disk
    /// already.
    pub fn place(&mut self, block: K, digest: Digest) -> Option<u32> {
        if self.entries.contains_key(&block) {
            return None;
        }
        let slot = match self.pop_free() {
            Some(slot) => slot,
            None => {
                let victim = self.lru.evict(&(), BLOCK)?;
                let gone = self.entries.remove(&victim)?;
                gone.slot
            }
        };
        self.take(block, slot, digest, false);
        Some(slot)
    }

    /// The driver wrote `block` into `slot` (`ok`), or failed to: ready to
    /// be read, or forgotten. A report for a slot reused meanwhile changes
    /// nothing.
    pub fn written(&mut self, block: K, slot: u32, ok: bool) {
        let Some(e) = self.entries.get_mut(&block).filter(|e| e.slot == slot) else {
            return;
        };
        match ok {
            true => e.ready = true,
            false => self.forget(block),
        }
    }

    /// Forgets `block` (its contents failed their check, or could not be
    /// read): its slot is free again.
    pub fn forget(&mut self, block: K) {
        if let Some(e) = self.entries.remove(&block) {
            self.lru.remove(block);
            self.by_slot[e.slot as usize] = None;
            self.free.push(e.slot);
        }
    }

    /// Whether `block` is on disk, written and ready to be read.
    pub fn holds(&self, block: K) -> bool {
        self.entries.get(&block).is_some_and(|e| e.ready)
    }

    /// Whether `data`'s digest is the one `block` was written with.
    pub fn matches(&self, block: K, digest: Digest) -> bool {
        self.entries.get(&block).is_some_and(|e| e.digest == digest)
    }
}

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// Gives this node a disk tier of empty slots (the driver's store has
    /// them); blocks found in them from an earlier run follow with
    /// [`NodeProtocol::recover_disk`]. A private node's blocks are written
    /// sealed ([`Sealer::seal_own`](super::Sealer::seal_own)) and opened
    /// when read back, then checked against their digest.
    pub fn set_disk(&mut self, settings: DiskSettings) {
        self.disk = Some(DiskTier::new(settings));
        self.disk_lost = None;
    }

    /// The disk tier failed before it could be used (at the node's start):
    /// memory alone, and the driver is asked to open it again after
    /// `settings.retry_us` as if it had failed while running.
    pub fn lose_disk(&mut self, settings: DiskSettings, now: u64) {
        self.disk = None;
        let wait_us = settings.retry_us.max(1);
        self.disk_lost = Some(Lost { settings, wait_us });
        self.timers.arm(now + wait_us, Timer::DiskRetry);
    }

    /// The driver tried to open the given-up tier again
    /// ([`Action::ReopenDisk`](super::Action::ReopenDisk)): its store has
    /// `slots` slots now (blocks found in them follow with
    /// [`NodeProtocol::recover_disk`]), or it could not be opened and the
    /// next attempt waits twice as long.
    pub fn handle_disk_reopened(&mut self, slots: Option<u32>, now: u64) {
        let Some(lost) = self.disk_lost else {
            return;
        };
        match slots {
            Some(slots) if self.disk.is_none() => {
                self.stats.disk_reopened += 1;
                self.set_disk(DiskSettings {
                    slots,
                    ..lost.settings
                });
            }
            Some(_) => {}
            None => {
                let wait_us = (lost.wait_us * 2).min(MAX_DISK_RETRY_US);
                self.disk_lost = Some(Lost { wait_us, ..lost });
                self.timers.arm(now + wait_us, Timer::DiskRetry);
            }
        }
    }

    /// The retry's timer fell due: asks the driver to open the tier again.
    pub(super) fn disk_retry_due(&mut self) {
        if self.disk_lost.is_some() && self.disk.is_none() {
            self.actions.push_back(Action::ReopenDisk);
        }
    }

    /// A block the driver's store found in `slot` when the node started,
    /// stored with `digest`: served like any other once its contents are
    /// read back and match. Returns whether it was taken in.
    pub fn recover_disk(&mut self, block: K, slot: u32, digest: Digest) -> bool {
        // A private node's earlier run sealed its blocks under a key and
        // named them with a salt that died with it: no read can ask for
        // them, and they would not open. Their slots are free.
        if self.is_private() {
            return false;
        }
        self.disk
            .as_mut()
            .is_some_and(|t| t.recover(block, slot, digest))
    }

    /// The disk tier's index, if the node has one.
    pub fn disk(&self) -> Option<&DiskTier<K>> {
        self.disk.as_ref()
    }

    /// The driver read `block` from its slot ([`Action::ReadDisk`]): its
    /// contents, hashed where they were read, or why there were none.
    /// After [`MAX_DISK_ERRORS`] I/O errors in a row the tier is given up
    /// ([`NodeProtocol::disk`] is `None` then: the driver says so).
    pub fn handle_disk_read(&mut self, block: K, result: Result<D, DiskMiss>, now: u64) {
        self.disk_health(!matches!(result, Err(DiskMiss::Io)), now);
        // A private node's slots hold sealed bytes: what does not open
        // (altered, another block's) is a slot not holding the block.
        let result = match self.private.as_mut() {
            Some(p) => {
                result.and_then(|sealed| p.open_own(block, &sealed).ok_or(DiskMiss::NotThere))
            }
            None => result,
        };
        self.disk_served(block, &result);
        self.disk_read(block, result.map_err(|_| ()), now);
        self.settle(now);
    }

    /// The driver wrote `block` into `slot` ([`Action::WriteDisk`]), or
    /// failed to (`ok` false).
    ///
    /// (A write sent to a tier given up since, and reported after it was
    /// opened again, counts off the new tier's writes: one write too few
    /// in flight for a moment, never one too many for long.)
    pub fn handle_disk_written(&mut self, block: K, slot: u32, ok: bool, now: u64) {
        if !ok {
            self.stats.disk_write_failures += 1;
        }
        if let Some(t) = self.disk.as_mut() {
            t.writing = t.writing.saturating_sub(1);
            t.written(block, slot, ok);
        }
        self.disk_health(ok, now);
    }

    /// Counts a failed disk call in a row, or clears the count: the tier
    /// goes at [`MAX_DISK_ERRORS`], and its retry is armed.
    fn disk_health(&mut self, ok: bool, now: u64) {
        let Some(t) = self.disk.as_mut() else {
            return;
        };
        t.errors = if ok { 0 } else { t.errors + 1 };
        if t.errors >= MAX_DISK_ERRORS {
            let settings = t.settings;
            self.stats.disk_given_up += 1;
            self.lose_disk(settings, now);
        }
    }

    /// Writes `data` of `block`, which a read just brought in, to the
    /// disk tier if it is not there.
    ///
    /// A private node's block is sealed first, as it would be to park it
    /// on a peer: the disk is no more trusted with it than a peer is.
    pub(super) fn keep_on_disk(&mut self, block: K, data: &D) {
        let digest = data.digest();
        let Some(t) = self.disk.as_mut() else {
            return;
        };
        if t.writing >= t.settings.max_writing.max(1) {
            // The disk is behind: this block stays off it rather than
            // wait in memory (the bound is on what waits, not on reads).
            if !t.entries.contains_key(&block) {
                self.stats.disk_writes_skipped += 1;
            }
            return;
        }
        let Some(slot) = t.place(block, digest) else {
            return;
        };
        let data = match self.private.as_mut() {
            Some(p) => match p.seal_own(block, data) {
                Some(sealed) => sealed,
                None => {
                    // Never written in the clear: the slot is free again.
                    if let Some(t) = self.disk.as_mut() {
                        t.written(block, slot, false);
                    }
                    return;
                }
            },
            None => data.clone(),
        };
        self.stats.disk_writes += 1;
        if let Some(t) = self.disk.as_mut() {
            t.writing += 1;
        }
        self.actions
            .push_back(Action::WriteDisk { block, slot, data });
    }
}

/// Why a disk slot gave no contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiskMiss {
    /// The slot holds another block, or a torn one (a crash, a slot reused
    /// by a write this index never saw).
    NotThere,
    /// The disk failed the read.
    Io,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(n: u8) -> Digest {
        Digest {
            hash: [n; 32],
            len: 7,
        }
    }

    #[test]
    fn a_block_is_readable_once_written_and_only_with_its_digest() {
        let mut t = DiskTier::new(DiskSettings::unbounded(2));
        let s = t.place(1u64, d(1)).unwrap();
        assert_eq!(t.lookup(1), None, "not written yet");
        assert_eq!(t.place(1, d(1)), None, "already placed");
        t.written(1, s, true);
        assert_eq!(t.lookup(1), Some((s, d(1))));
        assert!(t.matches(1, d(1)));
        assert!(!t.matches(1, d(2)));
    }

    #[test]
    fn the_least_recently_used_block_gives_up_its_slot() {
        let mut t = DiskTier::new(DiskSettings::unbounded(2));
        for b in [1u64, 2] {
            let s = t.place(b, d(b as u8)).unwrap();
            t.written(b, s, true);
        }
        assert!(t.lookup(1).is_some()); // 2 is now the oldest
        let s3 = t.place(3, d(3)).unwrap();
        assert_eq!(t.lookup(2), None);
        assert!(t.lookup(1).is_some());
        // The late report of 2's write changes nothing.
        t.written(2, s3, true);
        assert_eq!(t.lookup(2), None);
        assert_eq!(t.lookup(3), None, "3 is not written yet");
        t.written(3, s3, true);
        assert_eq!(t.lookup(3), Some((s3, d(3))));
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn a_failed_write_or_check_frees_the_slot() {
        let mut t = DiskTier::new(DiskSettings::unbounded(1));
        let s = t.place(1u64, d(1)).unwrap();
        t.written(1, s, false);
        assert!(t.is_empty());
        let s = t.place(2, d(2)).unwrap();
        t.written(2, s, true);
        t.forget(2);
        assert_eq!(t.lookup(2), None);
        assert_eq!(t.place(3, d(3)), Some(s));
    }

    /// A lone Base node whose blocks' contents are their digests, with a
    /// disk tier of `settings`.
    fn node(settings: DiskSettings) -> NodeProtocol<super::super::BlockId, Digest> {
        use crate::coop::{AlgorithmKind, LiveShape};
        let shape = LiveShape {
            capacity: 4,
            policy: crate::policy::PolicyKind::Lru,
            chances: 2,
            seed: 1,
            classes: Default::default(),
        };
        let kind = AlgorithmKind::Base;
        let machines = kind.build_live(0, &shape).unwrap();
        let cfg = super::super::ProtocolConfig::for_node(4, 4096);
        let mut n = NodeProtocol::new(0, kind, machines, cfg, 0);
        n.set_members(&[0], 0);
        n.set_disk(settings);
        n
    }

    fn block(i: u32) -> super::super::BlockId {
        super::super::BlockId {
            file: 7,
            index: i,
            route: 7,
        }
    }

    /// Every action the node has to take now.
    fn drain<K, D>(n: &mut NodeProtocol<K, D>) -> Vec<Action<K, D>>
    where
        K: ProtocolKey + SizeClassed,
        D: Content,
    {
        std::iter::from_fn(|| n.poll()).collect()
    }

    /// Reads block `i` through the origin; returns the slot its write
    /// went to, if one was asked for.
    fn read(n: &mut NodeProtocol<super::super::BlockId, Digest>, i: u32, now: u64) -> Option<u32> {
        n.handle_read(block(i), now);
        let asked = drain(n);
        assert!(
            asked.contains(&Action::ReadOrigin { block: block(i) }),
            "{asked:?}"
        );
        n.handle_origin_done(block(i), Ok(d(i as u8)), now);
        drain(n).into_iter().find_map(|a| match a {
            Action::WriteDisk { slot, .. } => Some(slot),
            _ => None,
        })
    }

    #[test]
    fn a_read_beyond_the_writes_in_flight_is_not_written_and_none_waits() {
        let settings = DiskSettings {
            slots: 16,
            max_writing: 2,
            retry_us: 1000,
        };
        let mut n = node(settings);
        let s0 = read(&mut n, 0, 1).expect("written");
        read(&mut n, 1, 2).expect("written");
        assert_eq!(read(&mut n, 2, 3), None, "a third write in flight");
        assert_eq!(n.stats().disk_writes_skipped, 1);
        assert_eq!(n.disk().unwrap().writing(), 2);
        // One lands: room for one more.
        n.handle_disk_written(block(0), s0, true, 4);
        assert!(read(&mut n, 3, 5).is_some());
        assert_eq!((n.stats().disk_writes, n.disk().unwrap().len()), (3, 3));
    }

    #[test]
    fn a_given_up_tier_is_asked_for_again_later_and_later_until_it_opens() {
        let settings = DiskSettings {
            slots: 16,
            max_writing: 4,
            retry_us: 1000,
        };
        let mut n = node(settings);
        for i in 0..MAX_DISK_ERRORS {
            assert!(n.disk().is_some(), "given up after {i} failures");
            n.handle_disk_written(block(i), 0, false, 10);
        }
        assert!(n.disk().is_none());
        assert_eq!(n.stats().disk_given_up, 1);
        assert_eq!(drain(&mut n), vec![]);
        // Whether the node asks for its disk at `now` (pings aside).
        let asks = |n: &mut NodeProtocol<_, _>, now| {
            n.handle_timeout(now);
            drain(n).contains(&Action::ReopenDisk)
        };
        // Asked again after 1 ms, then 2, 4... up to the ceiling.
        let (mut now, mut wait) = (10, 1000);
        for _ in 0..40 {
            assert!(!asks(&mut n, now + wait - 1), "asked early");
            now += wait;
            assert!(asks(&mut n, now), "not asked after {wait} us");
            n.handle_disk_reopened(None, now);
            wait = (wait * 2).min(MAX_DISK_RETRY_US);
        }
        assert_eq!(wait, MAX_DISK_RETRY_US);
        now += wait;
        assert!(asks(&mut n, now));
        n.handle_disk_reopened(Some(8), now);
        let t = n.disk().expect("back");
        assert_eq!((t.slots(), t.writing()), (8, 0));
        assert_eq!(n.stats().disk_reopened, 1);
        assert!(n.recover_disk(block(1), 3, d(1)), "its blocks come back");
        // No more attempts; a late answer changes nothing.
        n.handle_disk_reopened(None, now);
        assert!(!asks(&mut n, now + 2 * MAX_DISK_RETRY_US));
        assert!(n.disk().is_some());
    }

    #[test]
    fn recovery_takes_each_slot_and_block_once() {
        let mut t = DiskTier::new(DiskSettings::unbounded(3));
        assert!(t.recover(10u64, 2, d(1)));
        assert!(!t.recover(11, 2, d(2)), "slot taken");
        assert!(!t.recover(10, 0, d(1)), "block there already");
        assert!(!t.recover(12, 3, d(1)), "no such slot");
        assert_eq!(t.lookup(10), Some((2, d(1))));
        // Free slots are used lowest first, then the oldest block's.
        assert_eq!(t.place(20, d(2)), Some(0));
        assert_eq!(t.place(21, d(2)), Some(1));
        assert_eq!(t.place(22, d(2)), Some(2));
        assert_eq!(t.lookup(10), None);
    }
}
