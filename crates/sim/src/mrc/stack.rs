//! The LRU stack (Mattson et al., 1970): for every reference, how many
//! distinct objects, and how many bytes of them, were referenced since the
//! previous reference to the same object.
//!
//! An LRU cache of `C` objects holds an object at its next reference iff
//! fewer than `C` other distinct objects were referenced in between, so
//! one pass of these distances gives an LRU cache's misses at every size.
//! They come from Fenwick trees over reference times marking each
//! object's latest reference (with 1, and with its size): `O(log m)` per
//! reference, `m` the distinct objects. Only the order of the latest
//! references matters, so once the times run past twice the objects on the
//! stack they are renumbered densely (compacted): the trees stay
//! within four times the objects, not the trace's length (on a long trace
//! over few objects, a small tree that stays in cache).

use foldhash::fast::FixedState;
use std::collections::HashMap;
use std::collections::hash_map::Entry;

/// A Fenwick (binary indexed) tree of weights over reference times.
#[derive(Clone, Debug)]
struct Fenwick {
    /// Node `i` (1-based) at `nodes[i - 1]`; the length is a power of two.
    nodes: Vec<u64>,
}

impl Fenwick {
    fn new() -> Self {
        Fenwick {
            nodes: vec![0; 1024],
        }
    }

    /// Adds `delta` (two's complement for a decrease) at time `i`.
    fn add(&mut self, i: usize, delta: u64) {
        let mut i = i + 1;
        while i <= self.nodes.len() {
            self.nodes[i - 1] = self.nodes[i - 1].wrapping_add(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Sum of the weights at times `0..i`.
    fn prefix(&self, i: usize) -> u64 {
        let (mut i, mut sum) = (i, 0u64);
        while i > 0 {
            sum = sum.wrapping_add(self.nodes[i - 1]);
            i &= i - 1;
        }
        sum
    }

    /// Times the tree has room for.
    fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Replaces every weight with `weights` (time, weight), other times
    /// 0, built in `O(len)`: each node passes its sum to its parent once.
    fn rebuild(&mut self, weights: impl Iterator<Item = (usize, u64)>) {
        self.nodes.fill(0);
        for (t, w) in weights {
            self.nodes[t] = w;
        }
        let n = self.nodes.len();
        for i in 1..=n {
            let parent = i + (i & i.wrapping_neg());
            if parent <= n {
                self.nodes[parent - 1] = self.nodes[parent - 1].wrapping_add(self.nodes[i - 1]);
            }
        }
    }

    /// Makes room for times `0..len`. Doubling keeps every node: with `n`
    /// a power of two, node `n` covers `(0, n]`, the new nodes `n+1..2n-1`
    /// cover times past `n` (all zero) and node `2n` all of them.
    fn ensure(&mut self, len: usize) {
        while len > self.nodes.len() {
            let n = self.nodes.len();
            let total = self.nodes[n - 1];
            self.nodes.resize(2 * n, 0);
            self.nodes[2 * n - 1] = total;
        }
    }
}

/// What was referenced between two references to one object: the distinct
/// other objects, and the sum of their sizes on the stack. Without
/// sizes every object counts 1 byte, so both are equal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reuse {
    /// Distinct other objects referenced in between.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// One object on the stack.
#[derive(Clone, Copy, Debug)]
struct Resident<T> {
    /// Time of its latest reference.
    last: usize,
    /// Its size at its first reference since it came on the stack.
    size: u32,
    data: T,
}

/// The LRU stack of a stream of references, with `T` of the caller's kept
/// per object (the attribute-cache analysis keeps whether it is dirty).
#[derive(Clone, Debug)]
pub struct LruStack<T = ()> {
    counts: Fenwick,
    /// Sizes at latest references; `None` without sizes (counts serve).
    bytes: Option<Fenwick>,
    objects: HashMap<u64, Resident<T>, FixedState>,
    live_bytes: u64,
    time: usize,
    /// Scratch of [`compact`](Self::compact): per old time, one plus the
    /// new time of the object last referenced then (0 if none). Kept to
    /// reuse its allocation.
    renumber: Vec<u32>,
}

impl<T: Copy + Default> LruStack<T> {
    /// An empty stack; `sized` if references carry sizes to sum.
    pub fn new(sized: bool) -> Self {
        LruStack {
            counts: Fenwick::new(),
            bytes: sized.then(Fenwick::new),
            objects: HashMap::default(),
            live_bytes: 0,
            time: 0,
            renumber: Vec::new(),
        }
    }

    /// Renumbers the latest references `0..m` in their order, `m` the
    /// objects on the stack, and rebuilds the trees: distances depend only
    /// on that order. `O(time)`, run when `time` reaches twice `m` (and
    /// the tree's length), so `O(1)` amortised per reference.
    fn compact(&mut self) {
        let renumber = &mut self.renumber;
        renumber.clear();
        renumber.resize(self.time, 0);
        for r in self.objects.values() {
            renumber[r.last] = 1;
        }
        // Objects fit in u32: each costs tens of bytes of this map.
        let mut next = 0u32;
        for slot in renumber.iter_mut().filter(|s| **s != 0) {
            next += 1;
            *slot = next;
        }
        for r in self.objects.values_mut() {
            r.last = renumber[r.last] as usize - 1;
        }
        self.time = next as usize;
        let objects = &self.objects;
        self.counts.rebuild(objects.values().map(|r| (r.last, 1)));
        if let Some(tree) = &mut self.bytes {
            tree.rebuild(objects.values().map(|r| (r.last, u64::from(r.size))));
        }
    }

    /// A reference to `key` of `size` bytes (ignored without sizes): what
    /// was referenced since its previous reference (`None` for a first
    /// one) and the size it weighs, and its data to update.
    ///
    /// An object keeps the size of its first reference while it stays on
    /// the stack, as a cache keeps an object at the size it cached it
    /// with: on the shared photo trace, which asks for one photo at several
    /// sizes, that keeps a byte curve within 0.0004 of LRU where weighing
    /// the latest size was 0.007 off.
    pub fn reference(&mut self, key: u64, size: u32) -> (Option<(Reuse, u32)>, &mut T) {
        if self.time == self.counts.len() && self.time >= 2 * self.objects.len() {
            self.compact();
        }
        let now = self.time;
        self.time += 1;
        self.counts.ensure(self.time);
        if let Some(bytes) = &mut self.bytes {
            bytes.ensure(self.time);
        }
        let live_objects = self.objects.len() as u64;
        let size = if self.bytes.is_some() { size } else { 1 };
        match self.objects.entry(key) {
            Entry::Occupied(e) => {
                let r = e.into_mut();
                let last = r.last;
                let objects = live_objects - self.counts.prefix(last + 1);
                let bytes = match &mut self.bytes {
                    Some(tree) => {
                        let above = self.live_bytes - tree.prefix(last + 1);
                        tree.add(last, u64::from(r.size).wrapping_neg());
                        tree.add(now, u64::from(r.size));
                        above
                    }
                    None => objects,
                };
                self.counts.add(last, 1u64.wrapping_neg());
                self.counts.add(now, 1);
                r.last = now;
                (Some((Reuse { objects, bytes }, r.size)), &mut r.data)
            }
            Entry::Vacant(e) => {
                self.counts.add(now, 1);
                if let Some(tree) = &mut self.bytes {
                    tree.add(now, u64::from(size));
                }
                self.live_bytes += u64::from(size);
                let r = e.insert(Resident {
                    last: now,
                    size,
                    data: T::default(),
                });
                (None, &mut r.data)
            }
        }
    }

    /// Takes `key` off the stack (a delete); returns its data if it was on.
    pub fn remove(&mut self, key: u64) -> Option<T> {
        let r = self.objects.remove(&key)?;
        self.counts.add(r.last, 1u64.wrapping_neg());
        if let Some(tree) = &mut self.bytes {
            tree.add(r.last, u64::from(r.size).wrapping_neg());
        }
        self.live_bytes -= u64::from(r.size);
        Some(r.data)
    }

    /// Distinct objects on the stack.
    pub fn objects(&self) -> u64 {
        self.objects.len() as u64
    }

    /// Sum of their sizes (their count without sizes).
    pub fn bytes(&self) -> u64 {
        self.live_bytes
    }

    /// Every object on the stack with what was referenced after its latest
    /// reference, up to now (an arbitrary order).
    pub fn residents(&self) -> impl Iterator<Item = (&T, Reuse)> + '_ {
        let live_objects = self.objects.len() as u64;
        self.objects.values().map(move |r| {
            let objects = live_objects - self.counts.prefix(r.last + 1);
            let bytes = self
                .bytes
                .as_ref()
                .map_or(objects, |t| self.live_bytes - t.prefix(r.last + 1));
            (&r.data, Reuse { objects, bytes })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_count_distinct_objects_and_their_bytes_in_between() {
        let mut s: LruStack = LruStack::new(true);
        let mut seen = Vec::new();
        for (key, size) in [(1, 10), (2, 20), (3, 30), (2, 20), (1, 10), (1, 5)] {
            seen.push(s.reference(key, size).0);
        }
        let reuse = |objects, bytes, old| Some((Reuse { objects, bytes }, old));
        assert_eq!(seen[..3], [None, None, None]);
        // 2 after 3; 1 after 2 and 3 (20 + 30 bytes).
        assert_eq!(seen[3], reuse(1, 30, 20));
        assert_eq!(seen[4], reuse(2, 50, 10));
        // 1 right after itself, still weighing its first 10 bytes.
        assert_eq!(seen[5], reuse(0, 0, 10));
        assert_eq!((s.objects(), s.bytes()), (3, 60));
        assert_eq!(s.remove(3), Some(()));
        assert_eq!(s.reference(2, 20).0, reuse(1, 10, 20));
    }

    #[test]
    fn the_tree_grows_past_its_first_length() {
        // A loop over 3 objects, 3000 references: every reuse has 2 between.
        let mut s: LruStack = LruStack::new(false);
        for i in 0..3000u64 {
            let (reuse, _) = s.reference(i % 3, 0);
            if i >= 3 {
                assert_eq!(
                    reuse.unwrap().0,
                    Reuse {
                        objects: 2,
                        bytes: 2
                    }
                );
            }
        }
        let ends: Vec<u64> = s.residents().map(|(_, r)| r.objects).collect();
        assert_eq!(ends.iter().sum::<u64>(), 1 + 2);
        // Renumbered, not grown: 3 objects never need more than the first
        // 1,024 times.
        assert_eq!(s.counts.len(), 1024);
    }

    /// Distances against a plain list kept in LRU order, over a random
    /// stream long enough to renumber many times, with deletes.
    #[test]
    fn distances_match_a_list_across_renumbering() {
        let mut s: LruStack = LruStack::new(true);
        let mut list: Vec<(u64, u32)> = Vec::new(); // most recent last
        let mut seed = 7u64;
        for i in 0..60_000u64 {
            let x = coopcache_core::policy::splitmix64(&mut seed);
            // A shifting working set of 200-1,000 keys.
            let key = (i / 5_000) * 100 + x % (200 + (i / 10_000) * 160);
            let size = (key % 97 + 1) as u32;
            if x.is_multiple_of(53) {
                let on = list.iter().position(|e| e.0 == key);
                assert_eq!(s.remove(key).is_some(), on.is_some());
                if let Some(at) = on {
                    list.remove(at);
                }
                continue;
            }
            let want = list.iter().position(|e| e.0 == key).map(|at| {
                let above = &list[at + 1..];
                let reuse = Reuse {
                    objects: above.len() as u64,
                    bytes: above.iter().map(|e| u64::from(e.1)).sum(),
                };
                (reuse, list.remove(at).1)
            });
            let first = want.map_or(size, |w| w.1);
            list.push((key, first));
            assert_eq!(s.reference(key, size).0, want, "reference {i} to {key}");
        }
        let (tree, objects) = (s.counts.len() as u64, s.objects());
        assert!(
            tree <= 4 * objects,
            "a tree of {tree} for {objects} objects"
        );
    }
}
