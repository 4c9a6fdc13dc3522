//! CLOCK-Pro: LIRS's reuse-distance test on one clock with three hands.

use super::knobs::{Knob, KnobUnit, Knobs};
use super::{BlockKey, Capacity, Lookup, Policy, Weight, bad_param, check_capacity};
use crate::error::CapacityError;
use crate::list::{Idx, NIL};
use crate::queue::{IndexedLists, ListTag};

/// A page's state on the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    /// Resident, with a small reuse distance.
    Hot,
    /// Resident cold, its test period over.
    ColdResident,
    /// Resident cold, in its test period.
    ColdInTest,
    /// Evicted cold page still in its test period (the paper's
    /// non-resident cold page): only its id is kept.
    NonResident,
}

impl Status {
    fn in_test(self) -> bool {
        matches!(self, Status::ColdInTest | Status::NonResident)
    }

    fn resident_cold(self) -> bool {
        matches!(self, Status::ColdResident | Status::ColdInTest)
    }

    fn resident(self) -> bool {
        self != Status::NonResident
    }
}

/// A node's payload: its state and reference bit.
#[derive(Clone, Copy, Debug)]
struct Page {
    status: Status,
    referenced: bool,
}

impl ListTag for Page {
    fn list(self) -> usize {
        0
    }
}

/// CLOCK-Pro's parameters, `clockpro(min_cold=0.01,max_cold=0.99,
/// cold_floor=2,non_resident=1)` being the defaults: Caffeine's simulator's
/// bounds on the cold target and the paper's bound on non-resident pages.
/// Shares and the floor are in the cache's unit: pages in a block cache,
/// bytes in a byte cache.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockProParams {
    /// Smallest share of the cache the adaptive cold target `mc` may fall
    /// to, in [0, 1); it is also the initial target (`min_cold`).
    pub min_cold_ratio: f64,
    /// Largest share of the cache `mc` may reach, in (0, 1], and at least
    /// `min_cold_ratio` (`max_cold`).
    pub max_cold_ratio: f64,
    /// Floor of the cold target, at least 1, in the cache's unit: a tiny
    /// cache still has cold pages to replace (`cold_floor`). In a byte
    /// cache the ratio all but always dominates it.
    pub min_cold_blocks: usize,
    /// Most non-resident cold pages, as a multiple of the cache (the
    /// paper's `m`: 1), in [0, 16]; in a byte cache, of their recorded
    /// sizes (`non_resident`).
    pub non_resident_ratio: f64,
}

impl Default for ClockProParams {
    fn default() -> Self {
        ClockProParams {
            min_cold_ratio: 0.01,
            max_cold_ratio: 0.99,
            min_cold_blocks: 2,
            non_resident_ratio: 1.0,
        }
    }
}

/// libCacheSim has no working CLOCK-Pro, so the long names are the
/// settings of Caffeine's simulator (`clockpro.*`), which this follows.
impl Knobs for ClockProParams {
    const KNOBS: &'static [Knob] = &[
        Knob {
            name: "min_cold",
            libcachesim: "percent-min-resident-cold",
            min: 0.0,
            // Above a half the hot pages could not have the minimum's room
            // (the maximum is bounded by it): no cache of any size builds.
            max: 0.5,
            unit: KnobUnit::Real,
            help: "the cold target's smallest share of the cache, and its start (Caffeine's name)",
        },
        Knob {
            name: "max_cold",
            libcachesim: "percent-max-resident-cold",
            min: 0.01,
            max: 1.0,
            unit: KnobUnit::Real,
            help: "the cold target's largest share of the cache (Caffeine's name)",
        },
        Knob {
            name: "cold_floor",
            libcachesim: "lower-bound-resident-cold",
            min: 1.0,
            max: 1_048_576.0,
            unit: KnobUnit::Integer,
            help: "the cold target's floor, in blocks or bytes (Caffeine's name)",
        },
        Knob {
            name: "non_resident",
            libcachesim: "non-resident-multiplier",
            min: 0.0,
            max: 16.0,
            unit: KnobUnit::Real,
            help: "non-resident cold pages kept, as a multiple of the cache (Caffeine's name)",
        },
    ];

    fn get(&self, i: usize) -> f64 {
        [
            self.min_cold_ratio,
            self.max_cold_ratio,
            self.min_cold_blocks as f64,
            self.non_resident_ratio,
        ][i]
    }

    fn set(&mut self, i: usize, value: f64) {
        match i {
            0 => self.min_cold_ratio = value,
            1 => self.max_cold_ratio = value,
            2 => self.min_cold_blocks = value as usize,
            _ => self.non_resident_ratio = value,
        }
    }
}

/// CLOCK-Pro (Jiang, Chen and Zhang, "CLOCK-Pro: An Effective Improvement
/// of the CLOCK Replacement", USENIX ATC 2005): LIRS's idea (a block is
/// hot if its reuse distance is smaller than the hot blocks' recency)
/// approximated on one clock. Hot pages, resident cold pages and
/// non-resident cold pages (ids of evicted cold pages still in their test
/// period) share one circular list ordered by access, with a reference bit
/// per page instead of moves on a hit. Three hands sweep it from the oldest
/// end: HAND_cold replaces the oldest unreferenced resident cold page (a
/// referenced one in its test period turns hot, the others go round
/// again); HAND_hot turns the oldest unreferenced hot page cold whenever a
/// promotion pushes the hot pages over `m - mc`, ending the test period of
/// the cold pages it passes; HAND_test ends test periods when more than
/// `m` non-resident pages are kept. The cold target `mc` grows by one on a
/// hit in a test period and shrinks by one when a test period ends without
/// one, within the bounds of [`ClockProParams`] (the command line's
/// `clockpro(min_cold=..,max_cold=..,cold_floor=..,non_resident=..)`).
///
/// Like LIRS and ARC it resists scans and loops larger than the cache, at
/// CLOCK's cost per hit (setting a bit); on recency-friendly traces it is
/// close to LRU. Hits never move or drop a block.
///
/// libCacheSim's `ClockPro` never evicts, so this follows the paper as
/// Caffeine's simulator (`irr.ClockProPolicy`) implements it, including
/// two points the paper leaves open: while the cache fills, new pages are
/// hot until only the minimum cold target is left free; and a test-period
/// hit is not promoted when HAND_hot reaches the page without finding a
/// hot page to demote (the authors' code does the same).
/// [`remove`](Policy::remove) drops a page without leaving a non-resident
/// entry or moving `mc`.
///
/// In a byte cache ([`Capacity::Bytes`]) every budget is in bytes, as
/// LIRS's and ARC's are: `m`, the hot budget `m - mc`, `mc` and its bounds,
/// and the non-resident bound (the sum of the sizes the non-resident pages
/// were evicted at). `mc` moves by the size of the page whose test period
/// decided it, not by one: a hit in a test period says a cold area larger
/// by that page would have kept it, and a period ending unreferenced that
/// the page's bytes were spent for nothing (byte ARC moves `p` by bytes
/// too). A miss that fits the free space is a warm-up page (hot while
/// `min_cold` bytes stay free); one that does not replaces pages until it
/// fits and enters as a cold page, or hot if it was in its test period and
/// fits the hot budget. An object larger than the cache is not admitted.
/// A block cache is the byte cache of pages of size 1: the behaviour is
/// the same, step for step.
///
/// Miss ratios beside LRU, ARC and LIRS on the LIRS paper's traces
/// (`coopcache sim ../shared/traces/multi2.trace.gz --format lirs
/// --policy lru,arc,lirs,clockpro --cache-size 100,500,1000`, and the
/// same for `2_pools.trace.gz`):
///
/// | trace, blocks | LRU | ARC | LIRS | CLOCK-Pro |
/// | --- | --- | --- | --- | --- |
/// | multi2, 100 | 0.9327 | 0.7407 | 0.7386 | 0.7357 |
/// | multi2, 500 | 0.6402 | 0.6051 | 0.4990 | 0.5138 |
/// | multi2, 1000 | 0.5220 | 0.4925 | 0.4248 | 0.4313 |
/// | 2_pools, 100 | 0.7805 | 0.5312 | 0.5271 | 0.5312 |
/// | 2_pools, 500 | 0.4894 | 0.4813 | 0.4808 | 0.4807 |
/// | 2_pools, 1000 | 0.4558 | 0.4567 | 0.4565 | 0.4566 |
///
/// The paper claims LIRS's advantages for CLOCK-Pro (its figures were not
/// at hand to compare point by point), and this is what the runs show:
/// within one and a half points of LIRS, and well below LRU where loops
/// and mixed patterns dominate (multi2 at every size, 2_pools while the
/// cache is small); the policies meet once the cache holds the reused set.
#[derive(Clone, Debug)]
pub struct ClockPro<K, W = u32> {
    /// The clock: head is the newest page, the hands move from the tail
    /// towards the head and wrap round.
    clock: IndexedLists<K, Page, 1, W>,
    hand_hot: Idx,
    hand_cold: Idx,
    hand_test: Idx,
    /// `m`, in the cache's unit, like every size below.
    capacity: usize,
    max_non_resident: usize,
    hot: Tally,
    resident_cold: Tally,
    non_resident: Tally,
    /// Pages in their test period, resident or not.
    in_test: usize,
    /// `mc`: the target size of the resident cold pages.
    cold_target: usize,
    min_cold: usize,
    max_cold: usize,
    /// Whether [`evict`](Policy::evict) ran since the last lookup: the
    /// object that missed did not fit the free space, so it enters as a
    /// replacement rather than as a warm-up page. In a block cache this is
    /// the miss's "full"; in a byte cache only the size decides it.
    made_room: bool,
}

/// Pages of one kind: how many, and their sizes' sum in the cache's unit
/// (the same in a block cache). Budgets read the size; whether a hand has
/// a page to go to reads the count, so pages of size 0 are still found.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    pages: usize,
    size: usize,
}

/// What a miss tells the insert that follows: whether the cache was full,
/// so the page enters as a cold page (or a promoted test page) rather
/// than as a warm-up page. In a byte cache an object may also not fit a
/// cache with room left; the insert then knows from the evictions.
pub type ClockProMiss = bool;

impl<K: BlockKey> ClockPro<K> {
    /// An empty CLOCK-Pro cache of `capacity` blocks or bytes (at least 4)
    /// with the default parameters.
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> ClockPro<K, W> {
    /// An empty CLOCK-Pro cache of `capacity` blocks or bytes with the
    /// default parameters; nodes store sizes as `W` (`u32` for any cache,
    /// [`Unit`](super::Unit) for a block cache).
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_params(capacity.into(), ClockProParams::default())
    }

    /// An empty CLOCK-Pro cache of `capacity` blocks or bytes with
    /// `params`; a capacity leaving no room for both hot and cold pages, or
    /// a parameter out of range, is an error.
    pub fn with_params(capacity: Capacity, params: ClockProParams) -> Result<Self, CapacityError> {
        let ClockProParams {
            min_cold_ratio,
            max_cold_ratio,
            min_cold_blocks,
            non_resident_ratio,
        } = params;
        if !((0.0..1.0).contains(&min_cold_ratio)
            && max_cold_ratio > 0.0
            && max_cold_ratio <= 1.0
            && min_cold_ratio <= max_cold_ratio)
        {
            return Err(bad_param(
                "clockpro (min_cold in [0, 1), max_cold in (0, 1], min_cold at most max_cold)",
                capacity,
            ));
        }
        if min_cold_blocks == 0 || !(0.0..=16.0).contains(&non_resident_ratio) {
            return Err(bad_param(
                "clockpro (cold_floor at least 1, non_resident in [0, 16])",
                capacity,
            ));
        }
        // Caffeine's bounds: the floor applies to the minimum, and the
        // maximum leaves the minimum's room for hot pages.
        let bounds = |units: usize| {
            let min = ((units as f64 * min_cold_ratio) as usize).max(min_cold_blocks);
            let max = ((units as f64 * max_cold_ratio) as usize).min(units.saturating_sub(min));
            (min, max)
        };
        let mut smallest = 1;
        while smallest < 1 << 20 && {
            let (min, max) = bounds(smallest);
            min > max
        } {
            smallest += 1;
        }
        let units = check_capacity("clockpro", capacity, smallest)?;
        let (min_cold, max_cold) = bounds(units);
        if min_cold > max_cold {
            return Err(bad_param("clockpro (no cold target fits)", capacity));
        }
        let max_non_resident = (units as f64 * non_resident_ratio) as usize;
        let hint = capacity.objects_hint();
        Ok(ClockPro {
            clock: IndexedLists::with_capacity(
                hint + (hint as f64 * non_resident_ratio) as usize + 1,
            ),
            hand_hot: NIL,
            hand_cold: NIL,
            hand_test: NIL,
            capacity: units,
            max_non_resident,
            hot: Tally::default(),
            resident_cold: Tally::default(),
            non_resident: Tally::default(),
            in_test: 0,
            cold_target: min_cold,
            min_cold,
            max_cold,
            made_room: false,
        })
    }

    /// The adaptive cold target `mc`, in the cache's unit.
    pub fn cold_target(&self) -> usize {
        self.cold_target
    }

    /// Non-resident cold pages remembered now.
    pub fn non_resident(&self) -> usize {
        self.non_resident.pages
    }

    /// The sizes the non-resident pages were evicted at, summed: what the
    /// non-resident bound limits (their number in a block cache).
    pub fn non_resident_size(&self) -> usize {
        self.non_resident.size
    }

    fn free(&self) -> usize {
        self.capacity - self.hot.size - self.resident_cold.size
    }

    fn status(&self, idx: Idx) -> Status {
        self.clock.meta(idx).status
    }

    fn referenced(&self, idx: Idx) -> bool {
        self.clock.meta(idx).referenced
    }

    /// The page after `idx` in the hands' direction: the next newer one,
    /// wrapping from the head to the tail.
    fn next(&self, idx: Idx) -> Idx {
        match self.clock.slab.newer(idx) {
            NIL => self.clock.list(0).tail(),
            newer => newer,
        }
    }

    /// Counts one page of `status` and `size` (`add`) or one fewer.
    fn count(&mut self, status: Status, size: usize, add: bool) {
        let tally = match status {
            Status::Hot => &mut self.hot,
            Status::ColdResident | Status::ColdInTest => &mut self.resident_cold,
            Status::NonResident => &mut self.non_resident,
        };
        if add {
            tally.pages += 1;
            tally.size += size;
        } else {
            tally.pages -= 1;
            tally.size -= size;
        }
        if status.in_test() {
            if add {
                self.in_test += 1;
            } else {
                self.in_test -= 1;
            }
        }
    }

    /// The size `idx` was cached with.
    fn size_of(&self, idx: Idx) -> usize {
        self.clock.size(idx) as usize
    }

    fn set_status(&mut self, idx: Idx, status: Status) {
        let size = self.size_of(idx);
        self.count(self.status(idx), size, false);
        self.count(status, size, true);
        self.clock.slab.meta_mut(idx).status = status;
    }

    /// Moves every hand on `idx` to the page after it, before `idx` leaves
    /// its place.
    fn step_hands_off(&mut self, idx: Idx) {
        let next = self.next(idx);
        let next = if next == idx { NIL } else { next };
        for hand in [&mut self.hand_hot, &mut self.hand_cold, &mut self.hand_test] {
            if *hand == idx {
                *hand = next;
            }
        }
    }

    /// Moves `idx` to the head as `status`, its bit cleared.
    fn move_to_head(&mut self, idx: Idx, status: Status) {
        self.step_hands_off(idx);
        self.set_status(idx, status);
        self.clock.relocate(
            idx,
            Page {
                status,
                referenced: false,
            },
        );
    }

    /// Takes `idx` off the clock altogether.
    fn leave_clock(&mut self, idx: Idx) -> K {
        self.step_hands_off(idx);
        self.count(self.status(idx), self.size_of(idx), false);
        self.clock.forget(idx)
    }

    /// Moves `mc` `up` or down by `step` (the size of the page whose test
    /// period decided it: 1 in a block cache), clamped into its bounds.
    fn adjust_cold_target(&mut self, up: bool, step: usize) {
        self.cold_target = if up {
            self.cold_target + step
        } else {
            self.cold_target.saturating_sub(step)
        }
        .clamp(self.min_cold, self.max_cold);
    }

    /// Ends the test period of `idx`, if it is in one: a resident page
    /// stays cold, a non-resident one leaves the clock. `mc` grows if the
    /// page was referenced during the period, and shrinks if not.
    fn end_test(&mut self, idx: Idx) {
        let page = self.clock.meta(idx);
        if !page.status.in_test() {
            return;
        }
        let size = self.size_of(idx);
        if page.status.resident() {
            self.set_status(idx, Status::ColdResident);
            self.adjust_cold_target(page.referenced, size);
        } else {
            self.leave_clock(idx);
            self.adjust_cold_target(false, size);
        }
    }

    /// HAND_cold onto the oldest resident cold page.
    fn seek_hand_cold(&mut self) {
        if self.resident_cold.pages == 0 {
            self.hand_cold = NIL;
            return;
        }
        if self.hand_cold == NIL {
            self.hand_cold = self.clock.list(0).tail();
        }
        while !self.status(self.hand_cold).resident_cold() {
            self.hand_cold = self.next(self.hand_cold);
        }
    }

    /// HAND_hot onto the oldest hot page, ending the test periods of the
    /// cold pages it passes.
    fn seek_hand_hot(&mut self) {
        if self.hot.pages == 0 {
            self.hand_hot = NIL;
            return;
        }
        if self.hand_hot == NIL {
            self.hand_hot = self.clock.list(0).tail();
        }
        while self.status(self.hand_hot) != Status::Hot {
            let passed = self.hand_hot;
            self.hand_hot = self.next(passed);
            self.end_test(passed);
        }
        // HAND_hot may have ended the test period HAND_test was on.
        self.seek_hand_test();
    }

    /// HAND_test onto the oldest page in its test period.
    fn seek_hand_test(&mut self) {
        if self.in_test == 0 {
            self.hand_test = NIL;
            return;
        }
        if self.hand_test == NIL {
            self.hand_test = match self.hand_hot {
                NIL => self.clock.list(0).tail(),
                hot => hot,
            };
        }
        while !self.status(self.hand_test).in_test() {
            self.hand_test = self.next(self.hand_test);
        }
    }

    fn seek_hands(&mut self) {
        self.seek_hand_cold();
        self.seek_hand_hot();
        self.seek_hand_test();
    }

    /// HAND_hot's run on behalf of `trigger`, a test page turning hot:
    /// referenced hot pages go round again, the first unreferenced one
    /// turns cold. Returns whether one did before the hand reached
    /// `trigger`.
    fn run_hand_hot(&mut self, trigger: Idx) -> bool {
        let mut demoted = false;
        while self.hand_hot != trigger && self.hand_hot != NIL {
            let hand = self.hand_hot;
            if self.status(hand) == Status::Hot {
                if self.referenced(hand) {
                    self.move_to_head(hand, Status::Hot);
                } else {
                    self.move_to_head(hand, Status::ColdResident);
                    demoted = true;
                    break;
                }
            } else {
                self.hand_hot = self.next(hand);
                self.end_test(hand);
            }
        }
        self.seek_hand_hot();
        demoted
    }

    /// Whether the test page `key`, hit in its test period at `size`,
    /// turns hot: `mc` grows, and HAND_hot must turn enough hot pages cold
    /// to keep the hot pages, `key` with them, within `m - mc` before it
    /// passes the page. A page larger than `m - mc` stays cold (never so in
    /// a block cache, where `m - mc` is at least the minimum cold target).
    fn promotes(&mut self, key: K, size: usize) -> bool {
        let in_test = |this: &Self| {
            this.clock
                .find(key)
                .filter(|&idx| this.status(idx).in_test())
        };
        if in_test(self).is_none() {
            return false;
        }
        self.adjust_cold_target(true, size);
        let hot_budget = |this: &Self| this.capacity - this.cold_target;
        if size > hot_budget(self) {
            return false;
        }
        while self.hot.size + size > hot_budget(self) {
            let Some(idx) = in_test(self) else {
                return false;
            };
            if !self.run_hand_hot(idx) {
                return false;
            }
        }
        true
    }

    /// One step of HAND_cold; returns the page it replaced, if it did.
    fn run_hand_cold(&mut self) -> Option<K> {
        let hand = self.hand_cold;
        let page = self.clock.meta(hand);
        if page.referenced {
            let hot =
                page.status.in_test() && self.promotes(self.clock.key(hand), self.size_of(hand));
            let status = if hot { Status::Hot } else { Status::ColdInTest };
            self.move_to_head(hand, status);
            self.seek_hand_cold();
            return None;
        }
        let key = self.clock.key(hand);
        if page.status.in_test() {
            // Replaced in its test period: its id stays until the period ends.
            self.set_status(hand, Status::NonResident);
            self.hand_cold = self.next(hand);
        } else {
            self.leave_clock(hand);
        }
        while self.non_resident.size > self.max_non_resident && self.in_test > 0 {
            self.seek_hand_test();
            let test = self.hand_test;
            self.end_test(test);
            self.seek_hand_test();
        }
        self.seek_hand_cold();
        Some(key)
    }

    /// Never needed while `mc` keeps cold pages resident, but a full
    /// cache of hot pages must still make progress: the oldest hot page
    /// turns cold.
    fn demote_oldest_hot(&mut self) {
        let oldest = self
            .clock
            .iter_from_tail(0)
            .find(|&i| self.status(i) == Status::Hot);
        if let Some(idx) = oldest {
            self.set_status(idx, Status::ColdResident);
        }
        self.seek_hands();
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for ClockPro<K, W> {
    type Miss = ClockProMiss;

    fn name(&self) -> &'static str {
        "clockpro"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.hot.pages + self.resident_cold.pages
    }

    fn used(&self) -> usize {
        self.hot.size + self.resident_cold.size
    }

    fn contains(&self, key: K) -> bool {
        self.clock
            .find(key)
            .is_some_and(|idx| self.status(idx).resident())
    }

    #[inline]
    fn lookup(&mut self, key: K) -> Lookup<bool> {
        self.made_room = false;
        match self.clock.find(key) {
            Some(idx) if self.status(idx).resident() => {
                self.clock.slab.meta_mut(idx).referenced = true;
                Lookup::Hit
            }
            // A non-resident page stays where it is until the insert:
            // the evictions before it may end its test period.
            _ => Lookup::Miss(self.free() == 0),
        }
    }

    /// HAND_cold's victim: the oldest unreferenced resident cold page.
    /// When every resident cold page is referenced the sweep reorders the
    /// clock first, so a copy runs it.
    fn victim(&self, miss: &bool, size: u32) -> Option<K> {
        let mut idx = self.hand_cold;
        while idx != NIL {
            let page = self.clock.meta(idx);
            if page.status.resident_cold() && !page.referenced {
                return Some(self.clock.key(idx));
            }
            idx = self.clock.slab.newer(idx);
        }
        self.clone().evict(miss, size)
    }

    fn evict(&mut self, _: &bool, _: u32) -> Option<K> {
        self.made_room = true;
        loop {
            if self.hand_cold == NIL {
                if self.hot.pages == 0 {
                    return None;
                }
                self.demote_oldest_hot();
                continue;
            }
            if let Some(key) = self.run_hand_cold() {
                return Some(key);
            }
        }
    }

    fn insert(&mut self, key: K, size: u32, full: bool) {
        let full = full || std::mem::take(&mut self.made_room);
        let units = size as usize;
        let status = if !full {
            // Warming up: hot while the minimum cold target stays free.
            if self.free() >= self.min_cold + units {
                Status::Hot
            } else {
                Status::ColdInTest
            }
        } else if self.promotes(key, units) {
            Status::Hot
        } else {
            Status::ColdInTest
        };
        // A non-resident page comes back at the head with the size of the
        // request, which in a byte cache may differ from the one it left at.
        if let Some(idx) = self.clock.find(key) {
            self.leave_clock(idx);
        }
        let page = Page {
            status,
            referenced: false,
        };
        self.clock.push(key, size, page);
        self.count(status, units, true);
        self.seek_hands();
    }

    /// Drops a resident page; non-resident ids are history and stay.
    fn remove(&mut self, key: K) -> bool {
        match self.clock.find(key) {
            Some(idx) if self.status(idx).resident() => {
                self.leave_clock(idx);
                self.seek_hands();
                true
            }
            _ => false,
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.clock.metadata_bytes()
    }

    /// Resident cold pages from the oldest, then hot pages from the oldest.
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        let q = &self.clock;
        let cold = q
            .iter_from_tail(0)
            .filter(|&i| q.meta(i).status.resident_cold());
        let hot = q
            .iter_from_tail(0)
            .filter(|&i| q.meta(i).status == Status::Hot);
        cold.chain(hot).map(|i| q.key(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::access;

    fn get(cache: &mut ClockPro<u64>, key: u64) -> bool {
        access(cache, key, 1, |_| {})
    }

    /// A loop one and a half times the cache: LRU and CLOCK miss every
    /// request, CLOCK-Pro keeps a hot set and hits it.
    #[test]
    fn a_loop_larger_than_the_cache_still_hits() {
        let mut cache = ClockPro::new(100).unwrap();
        let mut hits = 0;
        for _ in 0..20 {
            for key in 0..150 {
                hits += u32::from(get(&mut cache, key));
            }
        }
        assert!(hits > 20 * 150 / 3, "{hits} hits");
        assert!(cache.used() <= 100);
        assert!(cache.non_resident() <= 100);
    }

    /// Hot blocks survive a long scan of blocks used once.
    #[test]
    fn hot_blocks_survive_a_scan() {
        let mut cache = ClockPro::new(100).unwrap();
        for _ in 0..3 {
            for key in 0..50 {
                get(&mut cache, key);
            }
        }
        for scan in 1_000..5_000 {
            get(&mut cache, scan);
        }
        let kept = (0..50).filter(|&k| cache.contains(k)).count();
        assert!(kept >= 45, "{kept} of 50 hot blocks kept");
    }

    /// Objects of a few kilobytes in a byte cache: never over capacity,
    /// several pages replaced for a large one, and one larger than the
    /// cache left out.
    #[test]
    fn a_byte_cache_holds_objects_of_their_sizes() {
        let mut cache = ClockPro::<u64>::new(Capacity::Bytes(64 << 10)).unwrap();
        let size = |key: u64| 512 + (key * 2_654_435_761 % 8_192) as u32;
        let mut hits = 0;
        for _ in 0..20 {
            for key in 0..30 {
                hits += u32::from(access(&mut cache, key, size(key), |_| {}));
                assert!(cache.used() <= 64 << 10);
            }
        }
        assert!(hits > 20 * 30 / 3, "{hits} hits");
        let mut evicted = 0;
        access(&mut cache, 1_000, 40 << 10, |_| evicted += 1);
        assert!(evicted > 1 && cache.contains(1_000), "{evicted} evicted");
        assert!(!access(&mut cache, 2_000, 65 << 10, |_| evicted += 100));
        assert!(!cache.contains(2_000) && evicted < 100);
        assert!(cache.non_resident_size() <= 64 << 10);
    }

    #[test]
    fn bad_parameters_are_refused() {
        let bad = |params| ClockPro::<u64>::with_params(Capacity::Blocks(100), params).is_err();
        let default = ClockProParams::default();
        assert!(bad(ClockProParams {
            min_cold_ratio: 1.0,
            ..default
        }));
        assert!(bad(ClockProParams {
            max_cold_ratio: f64::NAN,
            ..default
        }));
        assert!(bad(ClockProParams {
            min_cold_blocks: 0,
            ..default
        }));
        assert!(bad(ClockProParams {
            min_cold_ratio: 0.5,
            max_cold_ratio: 0.4,
            ..default
        }));
        assert!(ClockPro::<u64>::new(3).is_err());
        assert!(ClockPro::<u64>::new(4).is_ok());
    }
}
