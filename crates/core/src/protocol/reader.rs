//! The reader's side: reads in flight (one per block, single-flight),
//! what each waits for, the verification of a peer's contents against the
//! manager's digest, and the fall-back to the origin.

use super::integrity::{Dispute, Expected};
use super::node::{Action, NodeProtocol, ReadFailure, Served};
use super::roles::NOT_ASKED;
use super::timers::Timer;
use super::{Content, Digest, PeerMsg, ProtocolKey};
use crate::coop::{Level, Msg, NodeId, SizeClassed};
use std::collections::{HashMap, HashSet, VecDeque};

/// Where a read stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    /// Asked the cluster: waiting for a peer's contents or the manager's
    /// word.
    Asking,
    /// Reading the origin.
    Origin,
    /// The machine served it from a block held unverified: the contents
    /// wait for the manager's digest.
    Held,
}

/// Where a read stands with this node's disk tier (`disk.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FromDisk {
    /// Not asked.
    No,
    /// Its slot is being read; the origin is not asked meanwhile.
    Reading,
    /// The disk served it (the completion says so).
    Served,
    /// The disk failed it (unreadable, wrong digest, too slow): the origin.
    Failed,
}

/// How long a read waits on its disk slot before reading the origin: a
/// disk that hangs (a failing drive, a network mount) slows reads down by
/// this, never stops them.
pub(super) const DISK_TIMEOUT_US: u64 = 2_000_000;

/// Contents that arrived before the reader knew whom to expect them from
/// or what they must hash to: at most one per sender, a few per read.
const MAX_EARLY: usize = 4;

/// One read in flight.
#[derive(Debug)]
pub(super) struct Pending<D> {
    pub(super) stage: Stage,
    pub(super) deadline: u64,
    /// When its origin read started.
    origin_started: u64,
    /// What a peer's contents must hash to, and who said so.
    expect: Option<Expected>,
    /// The node allowed to send them (the holder the manager named, the
    /// partition owner or Direct host this node asked).
    source: Option<NodeId>,
    /// The source said it does not hold the block.
    source_missing: bool,
    /// Contents that came before `expect` or `source` was known.
    early: Vec<(NodeId, D)>,
    /// Verified or origin contents, for the completion.
    data: Option<D>,
    /// The manager asked for a record of the origin's digest.
    record: bool,
    /// The machine already completed this read (held on an unverified
    /// block that then failed): the origin's contents go straight out.
    machine_done: bool,
    /// A peer's contents failed their check: the origin read settles
    /// whom to blame.
    dispute: Option<Dispute>,
    /// Whether the disk tier was asked, and how it answered.
    disk: FromDisk,
}

/// Reads in flight and in line.
#[derive(Debug)]
pub(super) struct Reads<K, D> {
    pending: HashMap<K, Pending<D>, foldhash::fast::FixedState>,
    queued: VecDeque<K>,
    queued_set: HashSet<K, foldhash::fast::FixedState>,
    /// Smoothed origin read time (an eighth of each new sample).
    origin_time_us: u64,
}

impl<D> Pending<D> {
    /// The level a completion reports: the disk tier's where it served
    /// the contents the machine took as the origin's.
    fn level(&self, machine: Level) -> Level {
        match self.disk {
            FromDisk::Served if machine == Level::Origin => Level::LocalDisk,
            _ => machine,
        }
    }
}

impl<K, D> Default for Reads<K, D> {
    fn default() -> Self {
        Reads {
            pending: HashMap::default(),
            queued: VecDeque::new(),
            queued_set: HashSet::default(),
            origin_time_us: 0,
        }
    }
}

impl<K: ProtocolKey, D> Reads<K, D> {
    pub(super) fn contains(&self, block: K) -> bool {
        self.pending.contains_key(&block)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.queued.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether the read of `block` still waits on `source`'s answer.
    pub(super) fn asks(&self, block: K, source: NodeId) -> bool {
        self.pending
            .get(&block)
            .is_some_and(|p| p.stage == Stage::Asking && p.source == Some(source))
    }

    pub(super) fn queued_len(&self) -> usize {
        self.queued.len()
    }

    pub(super) fn origin_time_us(&self) -> u64 {
        self.origin_time_us
    }
}

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// Starts a read of `block`, joins the one in flight, or queues it.
    pub(super) fn start_read(&mut self, block: K, now: u64) {
        let reads = &mut self.reads;
        if reads.pending.contains_key(&block) || reads.queued_set.contains(&block) {
            return;
        }
        if let Some(data) = self.pinned.get(block) {
            let result = Ok(Served {
                data: data.clone(),
                level: Level::Local,
            });
            return self.complete(block, result);
        }
        if reads.pending.len() >= self.cfg.max_reads {
            if reads.queued.len() >= self.cfg.max_queued {
                self.stats.dropped += 1;
                let result = Err(ReadFailure::Overloaded);
                self.complete(block, result);
                return;
            }
            reads.queued.push_back(block);
            reads.queued_set.insert(block);
            return;
        }
        let deadline = now + self.peer_timeout();
        self.reads.pending.insert(
            block,
            Pending {
                stage: Stage::Asking,
                deadline,
                origin_started: now,
                expect: None,
                source: None,
                source_missing: false,
                early: Vec::new(),
                data: None,
                record: false,
                machine_done: false,
                dispute: None,
                disk: FromDisk::No,
            },
        );
        self.timers.arm(deadline, Timer::Read(block));
        self.node.read(block, now, &mut self.machine_out);
    }

    /// Starts queued reads while there is room.
    fn start_queued(&mut self, now: u64) {
        while self.reads.pending.len() < self.cfg.max_reads {
            let Some(block) = self.reads.queued.pop_front() else {
                return;
            };
            self.reads.queued_set.remove(&block);
            self.start_read(block, now);
        }
    }

    /// The read of `block` if it still waits on the cluster; if not (it
    /// finished, or went to the origin), a reply for it is late: counted.
    fn asking(&mut self, block: K) -> Option<&mut Pending<D>> {
        match self.reads.pending.get_mut(&block) {
            Some(p) if p.stage == Stage::Asking => Some(p),
            _ => {
                self.stats.late_replies += 1;
                None
            }
        }
    }

    /// The read of `block` went to `source` directly (a partition owner, a
    /// Direct host): only its contents are accepted.
    pub(super) fn asked(&mut self, block: K, source: NodeId) {
        if let Some(p) = self.reads.pending.get_mut(&block) {
            p.source = Some(source);
        }
    }

    /// Reads `block` from the origin, unless it is already.
    pub(super) fn read_origin(&mut self, block: K, now: u64) {
        let Some(p) = self.reads.pending.get_mut(&block) else {
            return;
        };
        if p.stage == Stage::Origin {
            return;
        }
        p.stage = Stage::Origin;
        p.origin_started = now;
        // The disk tier first, once, unless a dispute waits on the
        // origin's copy: only the origin's may blame a peer.
        if p.disk == FromDisk::No && p.dispute.is_none() {
            let slot = self.disk.as_mut().and_then(|t| t.lookup(block));
            if let Some((slot, _)) = slot {
                p.disk = FromDisk::Reading;
                p.deadline = now + DISK_TIMEOUT_US;
                self.timers.arm(p.deadline, Timer::Read(block));
                self.stats.disk_reads += 1;
                return self.actions.push_back(Action::ReadDisk { block, slot });
            }
        }
        self.actions.push_back(Action::ReadOrigin { block });
    }

    /// The disk tier's answer for `block`: contents hashing to the digest
    /// they were written with serve the read as the origin's would;
    /// anything else (unreadable, another digest, a slot reused) forgets
    /// the slot and reads the origin.
    pub(super) fn disk_read(&mut self, block: K, result: Result<D, ()>, now: u64) {
        let Some(p) = self.reads.pending.get_mut(&block) else {
            return;
        };
        if p.disk != FromDisk::Reading || p.stage != Stage::Origin {
            // Too late: the origin was asked already.
            return;
        }
        let tier = self.disk.as_ref();
        let good = result
            .ok()
            .filter(|d| tier.is_some_and(|t| t.matches(block, d.digest()))); // rule: disk-digest
        let Some(data) = good else {
            if let Some(t) = self.disk.as_mut() {
                t.forget(block);
            }
            return self.disk_failed(block, now);
        };
        p.disk = FromDisk::Served;
        self.stats.disk_hits += 1;
        self.origin_contents(block, data, now);
    }

    /// A read of `block` waited on its disk slot past
    /// [`DISK_TIMEOUT_US`]: the origin.
    fn disk_deadline(&mut self, block: K, now: u64) -> bool {
        let Some(p) = self.reads.pending.get_mut(&block) else {
            return false;
        };
        if p.disk != FromDisk::Reading || p.deadline > now {
            return false;
        }
        self.disk_failed(block, now);
        true
    }

    /// The disk did not serve the read of `block`: the origin, from now.
    fn disk_failed(&mut self, block: K, now: u64) {
        if let Some(p) = self.reads.pending.get_mut(&block) {
            p.disk = FromDisk::Failed;
            p.origin_started = now;
        }
        self.stats.disk_failures += 1;
        self.actions.push_back(Action::ReadOrigin { block });
    }

    /// A read's deadline passed: if it still waits on peers, the origin.
    pub(super) fn read_deadline(&mut self, block: K, now: u64) {
        if self.disk_deadline(block, now) {
            return;
        }
        let late = self
            .reads
            .pending
            .get(&block)
            .is_some_and(|p| p.stage == Stage::Asking && p.deadline <= now);
        if late {
            self.stats.timeouts += 1;
            self.read_origin(block, now);
        }
    }

    /// The manager forwarded this node's read to `holder`, whose contents
    /// must match `expected`.
    pub(super) fn read_expect(&mut self, block: K, expected: Expected, holder: NodeId, now: u64) {
        let Some(p) = self.asking(block) else {
            return;
        };
        p.expect = Some(expected);
        p.source = Some(holder);
        self.check_early(block, now);
    }

    /// The manager's digest for a read sent straight to a peer (a
    /// partition owner, a Direct host): the contents to expect, or, with
    /// none recorded, the origin (nothing a peer sends could be checked).
    pub(super) fn read_hash_is(&mut self, block: K, expected: Option<Expected>, now: u64) {
        let Some(p) = self.reads.pending.get_mut(&block) else {
            return;
        };
        if p.stage != Stage::Asking || p.expect.is_some() {
            return;
        }
        match expected {
            // A peer was asked and has not said it lacks the block.
            Some(e) if p.source.is_some() => {
                p.expect = Some(e);
                self.check_early(block, now);
            }
            // No one to send contents (a Hash-Distributed read of a block
            // whose partition is this node's own, or an owner that lacked
            // it), or nothing to check them against.
            _ => self.read_origin(block, now),
        }
    }

    /// The manager sent this node to the origin, to record what it reads
    /// if `record`.
    pub(super) fn read_fetch_origin(&mut self, block: K, record: bool, now: u64) {
        let Some(p) = self.reads.pending.get_mut(&block) else {
            return self.stats.late_replies += 1;
        };
        match p.stage {
            // Its own timeout sent it there first: record all the same.
            Stage::Origin => p.record |= record,
            Stage::Asking => {
                p.record = record;
                self.read_origin(block, now);
            }
            Stage::Held => self.stats.late_replies += 1,
        }
    }

    /// `from`, asked directly, does not hold `block`.
    pub(super) fn read_missing(&mut self, from: NodeId, block: K, now: u64) {
        let direct = self.kind == crate::coop::AlgorithmKind::Direct;
        let private = self.is_private();
        let Some(p) = self.asking(block) else {
            return;
        };
        let asked = p.source == Some(from); // rule: missing
        if !asked {
            let msg = PeerMsg::Missing { block };
            return self.violation(from, &msg, NOT_ASKED, now);
        }
        p.source_missing = true;
        p.source = None;
        if private {
            // No manager knows a private block: the origin.
            self.read_origin(block, now);
        } else if direct {
            // The host lost the parked block: the manager serves the read,
            // as the simulator's host hands it back to the manager.
            self.send_to_manager(block, PeerMsg::Read { block });
        } else if p.expect.is_some() {
            // The partition owner lost it; the manager has a record, so
            // no one is told to fetch it: the origin.
            self.read_origin(block, now);
        }
        // Otherwise the manager's answer (a fetch, or a digest with no one
        // to send contents) decides.
    }

    /// Contents of `block` from `from`.
    pub(super) fn read_data(&mut self, from: NodeId, block: K, data: D, now: u64) {
        if !self.reads.pending.contains_key(&block) {
            // Perhaps for a read an open carried, not started yet.
            return self.stash_carried(from, block, data, now);
        }
        let Some(p) = self.asking(block) else {
            return;
        };
        let asked = p.source.is_none_or(|s| s == from); // rule: data
        match (p.source, p.expect) {
            (Some(_), Some(expect)) if asked => {
                self.judge_early(block, now);
                self.verify(block, from, data, expect, now)
            }
            // Not yet known to be the source, or not yet checkable. Contents
            // from a member other than the source may come from the holder
            // the manager names next: the holder it named first answered
            // `NotHere`, and the new holder's contents overtook the
            // manager's `Expect` (links keep no order between them). They
            // wait, and are judged when the source's contents come.
            _ => {
                if p.early.len() < MAX_EARLY && p.early.iter().all(|(s, _)| *s != from) {
                    p.early.push((from, data));
                } else {
                    self.stats.dropped += 1;
                }
            }
        }
    }

    /// Checks contents that came before the source and digest were known:
    /// the source's, if among them, are verified (and the others judged);
    /// the others wait for the source's.
    fn check_early(&mut self, block: K, now: u64) {
        let Some(p) = self.reads.pending.get_mut(&block) else {
            return;
        };
        let (Some(source), Some(expect)) = (p.source, p.expect) else {
            return;
        };
        let mut from_source = None;
        for i in 0..p.early.len() {
            let from = p.early[i].0;
            let asked = from == source; // rule: data-early
            if asked {
                from_source = Some(p.early.swap_remove(i));
                break;
            }
        }
        if let Some((from, data)) = from_source {
            self.judge_early(block, now);
            self.verify(block, from, data, expect, now);
        }
    }

    /// The source's contents came: contents any other member sent for this
    /// read were never asked for.
    fn judge_early(&mut self, block: K, now: u64) {
        let Some(p) = self.reads.pending.get_mut(&block) else {
            return;
        };
        for (from, data) in std::mem::take(&mut p.early) {
            let msg = PeerMsg::Data { block, data };
            self.violation(from, &msg, NOT_ASKED, now);
        }
    }

    /// Hands `data` from `from` to the machine if it matches `expect`;
    /// otherwise counts a failure and reads the origin, which settles
    /// whom to blame.
    fn verify(&mut self, block: K, from: NodeId, data: D, expect: Expected, now: u64) {
        // A private node's block comes back sealed: opened first, then
        // checked like any other against the digest it left with.
        let data = match self.is_private() {
            false => data,
            true => match self.open_sealed(block, from, data, expect) {
                Some(plain) => plain,
                None => return self.read_origin(block, now),
            },
        };
        let got = data.digest();
        let verified = got == expect.recorded.digest; // rule: verify-data
        if !verified {
            self.integrity_failure();
            self.dispute(block, from, got, expect);
            return self.read_origin(block, now);
        }
        if self.is_private() {
            self.stats.opened += 1;
        }
        if let Some(p) = self.reads.pending.get_mut(&block) {
            p.data = Some(data.clone());
        }
        let msg = Msg::Data {
            block,
            data,
            level: Level::RemoteNode,
            hops: 3,
        };
        self.deliver_to_node(msg, now);
    }

    /// Notes a failed check of `from`'s contents (hashing to `got`) for
    /// the origin read to settle.
    pub(super) fn dispute(&mut self, block: K, from: NodeId, got: Digest, expected: Expected) {
        if let Some(p) = self.reads.pending.get_mut(&block) {
            p.dispute = Some(Dispute {
                message: "Data",
                sender: from,
                got,
                expected,
            });
        }
    }

    /// The origin read of `block` finished.
    pub(super) fn origin_done(&mut self, block: K, result: Result<D, ()>, now: u64) {
        let Some(p) = self.reads.pending.get_mut(&block) else {
            return;
        };
        if p.stage != Stage::Origin {
            return;
        }
        let took = now.saturating_sub(p.origin_started);
        if let Some(dispute) = p.dispute.take() {
            let verdict = dispute.settle(result.as_ref().ok().map(Content::digest));
            self.report_integrity(block, dispute, verdict, now);
        }
        let Some(p) = self.reads.pending.get_mut(&block) else {
            return;
        };
        // The origin answered first: a disk answer still to come is late.
        if p.disk == FromDisk::Reading {
            p.disk = FromDisk::Failed;
        }
        let smoothed = &mut self.reads.origin_time_us;
        *smoothed = (*smoothed * 7 + took) / 8;
        let data = match result {
            Ok(data) => data,
            Err(()) => {
                self.reads.pending.remove(&block);
                let result = Err(ReadFailure::Origin);
                self.complete(block, result);
                // The machine admitted the block on its miss: out again.
                self.uncache(block, now);
                self.release_deferred(block, now);
                return self.start_queued(now);
            }
        };
        self.origin_contents(block, data, now);
    }

    /// The origin's contents of `block` (or the disk tier's, which are
    /// the origin's as they were read before), for the read in flight.
    fn origin_contents(&mut self, block: K, data: D, now: u64) {
        let Some(p) = self.reads.pending.get_mut(&block) else {
            return;
        };
        if p.machine_done {
            let level = p.level(Level::Origin);
            self.reads.pending.remove(&block);
            return self.finish(block, data, level, now);
        }
        p.data = Some(data.clone());
        if std::mem::take(&mut p.record) {
            let digest = data.digest();
            self.send_to_manager(block, PeerMsg::Record { block, digest });
        }
        let msg = Msg::Data {
            block,
            data,
            level: Level::Origin,
            hops: 2,
        };
        self.deliver_to_node(msg, now);
    }

    /// Takes `block` out of the machine's cache and tells its manager.
    pub(super) fn uncache(&mut self, block: K, now: u64) {
        self.deliver_to_node(Msg::Invalidate { block }, now);
        self.send_to_manager(block, self.dropped_msg(block));
    }

    /// Finishes the reads the machine completed.
    pub(super) fn complete_reads(&mut self, now: u64) {
        let mut done = std::mem::take(&mut self.done_scratch);
        done.extend(self.machine_out.drain_done());
        for d in done.drain(..) {
            let Some(p) = self.reads.pending.get_mut(&d.block) else {
                continue;
            };
            if d.level == Level::Local && self.held.contains(d.block) {
                // A hit on a block held unverified: its contents wait for
                // the manager's digest.
                p.stage = Stage::Held;
                p.machine_done = true;
                continue;
            }
            let data = p.data.take().or_else(|| self.node.data(d.block));
            let level = p.level(d.level);
            match data {
                Some(data) => {
                    self.reads.pending.remove(&d.block);
                    self.finish(d.block, data, level, now);
                }
                None => {
                    // Cached in the policy but its contents never came (an
                    // earlier read of it failed): the origin again.
                    p.stage = Stage::Asking;
                    self.read_origin(d.block, now);
                }
            }
        }
        self.done_scratch = done;
    }

    /// Every read of `block` here ends with `result`: counted by where it
    /// was served ([`Status::reads`](super::Status::reads)).
    fn complete(&mut self, block: K, result: Result<Served<D>, ReadFailure>) {
        match &result {
            Ok(served) => self.stats.served[served.level.index()] += 1,
            Err(_) => self.stats.failed_reads += 1,
        }
        self.actions.push_back(Action::Complete { block, result });
    }

    /// Hands `data` to every reader of `block` and serves the forwards
    /// that waited for it.
    pub(super) fn finish(&mut self, block: K, data: D, level: Level, now: u64) {
        if matches!(
            level,
            Level::Origin | Level::RemoteNode | Level::ManagerMemory
        ) {
            self.keep_on_disk(block, &data);
        }
        let result = Ok(Served { data, level });
        self.complete(block, result);
        self.release_deferred(block, now);
        self.start_queued(now);
    }

    /// The verdict on a held block a read was waiting for.
    pub(super) fn held_read_verdict(&mut self, block: K, good: Option<D>, now: u64) {
        let held = self
            .reads
            .pending
            .get(&block)
            .is_some_and(|p| p.stage == Stage::Held);
        if !held {
            return;
        }
        match good {
            Some(data) => {
                self.reads.pending.remove(&block);
                self.finish(block, data, Level::Local, now);
            }
            None => {
                if let Some(p) = self.reads.pending.get_mut(&block) {
                    p.stage = Stage::Asking;
                }
                self.read_origin(block, now);
            }
        }
    }

    /// Reads waiting on a member that left (as the source of their
    /// contents, or as the manager they asked) go to the origin now.
    pub(super) fn reads_lost(&mut self, lost: &[NodeId], old_live: &[NodeId], now: u64) {
        let waiting: Vec<K> = self
            .reads
            .pending
            .iter()
            .filter(|(b, p)| {
                let asked = super::manager_of(b.route(), old_live);
                p.stage == Stage::Asking
                    && (p.source.is_some_and(|s| lost.contains(&s))
                        || (p.source.is_none() && asked.is_some_and(|m| lost.contains(&m))))
            })
            .map(|(&b, _)| b)
            .collect();
        for block in waiting {
            self.read_origin(block, now);
        }
    }
}
