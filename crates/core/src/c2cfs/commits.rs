//! The manager's side of C2Cfs: per file, `Tcommit`, the valid-copy set
//! and the origin version they stand for, in a bounded table.

use std::collections::HashMap;

use super::ValidCopies;
use crate::coop::NodeId;
use crate::error::CapacityError;
use crate::policy::{BlockKey, Lru, Policy, Unit, access};

/// A file's commit timestamp (C2Cfs's `Tcommit`): which committed version
/// a copy holds. A copy is valid when the `Tlocal` its node recorded equals
/// the manager's `Tcommit`.
///
/// The paper increments a counter per file at a server that never forgets.
/// A manager here forgets (a bounded table, a failover), so values come
/// from one counter per manager, tagged with the manager's epoch: they
/// still grow with every commit of a file, and no value is ever issued
/// twice, so a forgotten entry rebuilt later never matches an old copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tcommit {
    /// The manager's epoch (chosen at its start, e.g. at random).
    pub epoch: u64,
    /// The manager's counter when this value was issued.
    pub serial: u64,
}

/// What an open learns from the file's manager.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opened<V> {
    /// The file's `Tcommit` (the opener's `Topen` if it writes).
    pub tcommit: Tcommit,
    /// The origin's version the latest commit (or first fetch) produced;
    /// `None` when the manager does not know it.
    pub version: Option<V>,
    /// The nodes holding that version.
    pub valid: ValidCopies,
}

/// What a commit (a close after writes) leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Committed {
    /// The file's new `Tcommit`.
    pub tcommit: Tcommit,
    /// Whether the writer's copy is the latest version (no other close
    /// came between its open and its close): its `Tlocal` is then
    /// `tcommit`, and it serves the next openers.
    pub valid: bool,
}

#[derive(Clone, Debug)]
struct Entry<V> {
    tcommit: Tcommit,
    version: Option<V>,
    valid: ValidCopies,
}

/// Per file `Tcommit`, valid copies and version, for the files a manager
/// manages: at most `capacity` files, the least recently used entry dropped
/// for a new one (which only costs origin reads, see [`Tcommit`]).
pub struct CommitTable<F: BlockKey, V> {
    epoch: u64,
    serial: u64,
    files: HashMap<F, Entry<V>>,
    order: Lru<F, Unit>,
}

impl<F: BlockKey, V: Clone + Eq> CommitTable<F, V> {
    /// An empty table of at most `capacity` files (at least 1), issuing
    /// timestamps of `epoch`.
    pub fn new(epoch: u64, capacity: usize) -> Result<Self, CapacityError> {
        Ok(CommitTable {
            epoch,
            serial: 0,
            files: HashMap::with_capacity(capacity.min(1 << 16)),
            order: Lru::with_weights(capacity)?,
        })
    }

    /// Files with an entry.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file has an entry.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    fn fresh(&mut self) -> Tcommit {
        self.serial += 1;
        Tcommit {
            epoch: self.epoch,
            serial: self.serial,
        }
    }

    /// `file`'s entry, made (with a fresh `Tcommit`, no version, no valid
    /// copy) if it has none, and marked as used.
    fn entry(&mut self, file: F) -> &mut Entry<V> {
        let files = &mut self.files;
        access(&mut self.order, file, 1, |dropped| {
            files.remove(&dropped);
        });
        if !self.files.contains_key(&file) {
            let entry = Entry {
                tcommit: self.fresh(),
                version: None,
                valid: ValidCopies::default(),
            };
            self.files.insert(file, entry);
        }
        self.files.get_mut(&file).expect("inserted above")
    }

    /// An open of `file` (revalidation): its `Tcommit`, version and
    /// valid copies.
    pub fn open(&mut self, file: F) -> Opened<V> {
        let e = self.entry(file);
        Opened {
            tcommit: e.tcommit,
            version: e.version.clone(),
            valid: e.valid,
        }
    }

    /// `node` now holds `file` at `version`, fetched after an open that
    /// found `tlocal`: it joins the valid set if no commit came since.
    /// Returns the `Tcommit` its copy holds from now on (its `Tlocal`), or
    /// `None` if the copy is not the latest version.
    ///
    /// A version other than the one recorded was written outside the
    /// cluster (only in `shared` mode): it starts a new `Tcommit` held by
    /// `node` alone.
    pub fn holding(
        &mut self,
        file: F,
        node: NodeId,
        tlocal: Tcommit,
        version: V,
    ) -> Option<Tcommit> {
        let e = self.files.get(&file)?;
        if e.tcommit != tlocal {
            return None;
        }
        match &e.version {
            Some(v) if *v != version => {
                let tcommit = self.fresh();
                let e = self.files.get_mut(&file)?;
                *e = Entry {
                    tcommit,
                    version: Some(version),
                    valid: ValidCopies::only(node),
                };
                Some(tcommit)
            }
            _ => {
                let e = self.files.get_mut(&file)?;
                e.version = Some(version);
                e.valid.insert(node);
                Some(tlocal)
            }
        }
    }

    /// `node` no longer holds `file` (it evicted its copy).
    pub fn dropped(&mut self, file: F, node: NodeId) {
        if let Some(e) = self.files.get_mut(&file) {
            e.valid.remove(node);
        }
    }

    /// `node` closed `file` after writing it through to the origin, which
    /// now has `version`; its open found `topen`. C2Cfs section 3: the
    /// writer's copy stays valid only if no other close came between
    /// (`Tcommit` still equals `topen`), and the valid set becomes
    /// `{node}`, else it becomes empty; `Tcommit` moves on either way.
    ///
    /// With an empty set the version is forgotten too: closes that raced
    /// may have reached the origin in another order than here, so the next
    /// reader takes the origin's own.
    pub fn commit(&mut self, file: F, node: NodeId, topen: Tcommit, version: V) -> Committed {
        let tcommit = self.fresh();
        let e = self.entry(file);
        let alone = e.tcommit == topen;
        e.tcommit = tcommit;
        if alone {
            e.version = Some(version);
            e.valid = ValidCopies::only(node);
        } else {
            e.version = None;
            e.valid = ValidCopies::default();
        }
        Committed {
            tcommit,
            valid: alone,
        }
    }

    /// A commit whose writer holds no `Topen` (it removed the path or
    /// renamed another file over it): it counts as racing, so the valid
    /// set empties and the version is forgotten, and `Tcommit` moves on.
    pub fn commit_without_open(&mut self, file: F) -> Committed {
        let tcommit = self.fresh();
        let e = self.entry(file);
        e.tcommit = tcommit;
        e.version = None;
        e.valid = ValidCopies::default();
        Committed {
            tcommit,
            valid: false,
        }
    }

    /// Records `version`, which the origin has now, into `file`'s entry if
    /// it knows none, keeping its `Tcommit` (a manager's first look at the
    /// origin for a file). Returns the entry's open answer afterwards, or
    /// `None` if `file` has no entry.
    ///
    /// A version already known stays: only a commit replaces it, and the
    /// caller must only record a look at the origin taken after the latest
    /// commit the entry holds.
    pub fn record(&mut self, file: F, version: V) -> Option<Opened<V>> {
        let e = self.files.get_mut(&file)?;
        if e.version.is_none() {
            e.version = Some(version);
        }
        Some(self.open(file))
    }

    /// Whether `file` has an entry.
    pub fn contains(&self, file: F) -> bool {
        self.files.contains_key(&file)
    }

    /// `file`'s open answer without making an entry or touching its
    /// recency; `None` if it has no entry.
    pub fn peek(&self, file: F) -> Option<Opened<V>> {
        self.files.get(&file).map(|e| Opened {
            tcommit: e.tcommit,
            version: e.version.clone(),
            valid: e.valid,
        })
    }

    /// Drops `file`'s entry: the next open starts a new one, with a fresh
    /// `Tcommit` that matches no copy held so far.
    pub fn forget(&mut self, file: F) {
        if self.files.remove(&file).is_some() {
            self.order.remove(file);
        }
    }

    /// Drops every entry, keeping the counter, so no `Tcommit` value is
    /// ever issued twice.
    pub fn clear(&mut self) {
        for file in self.files.keys() {
            self.order.remove(*file);
        }
        self.files.clear();
    }

    /// `node` left the cluster: it holds nothing any more.
    pub fn remove_member(&mut self, node: NodeId) {
        for e in self.files.values_mut() {
            e.valid.remove(node);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Table = CommitTable<u64, u32>;

    /// An open of `file` by `node`, writes and its close: `version` is
    /// what the origin has after it.
    fn write(t: &mut Table, file: u64, node: NodeId, version: u32) -> Committed {
        let topen = t.open(file).tcommit;
        t.commit(file, node, topen, version)
    }

    #[test]
    fn the_papers_example_two_writers_then_a_reader() {
        // Section 3's example: c1 and c2 open f, c1 closes, then c2
        // closes: c2 detects the concurrent close and empties the set; c3
        // then finds no valid copy and reads the origin.
        let mut t = Table::new(7, 16).unwrap();
        let topen1 = t.open(1).tcommit;
        let topen2 = t.open(1).tcommit;
        let c1 = t.commit(1, 1, topen1, 100);
        assert!(c1.valid);
        assert_eq!(t.open(1).valid.as_slice(), &[1]);
        let c2 = t.commit(1, 2, topen2, 101);
        assert!(!c2.valid, "c1's close came between c2's open and close");
        assert!(c2.tcommit > c1.tcommit);
        let o3 = t.open(1);
        assert!(o3.valid.is_empty());
        assert_eq!(o3.version, None);
        assert_eq!(o3.tcommit, c2.tcommit);
    }

    #[test]
    fn a_reader_joins_the_valid_set_only_if_no_commit_came_since_its_open() {
        let mut t = Table::new(1, 16).unwrap();
        let w = write(&mut t, 5, 1, 10);
        let o = t.open(5);
        assert_eq!(t.holding(5, 2, o.tcommit, 10), Some(w.tcommit));
        assert_eq!(t.open(5).valid.as_slice(), &[1, 2]);
        // A reader that opened, then a commit, then it reports: refused.
        let late = t.open(5).tcommit;
        write(&mut t, 5, 3, 11);
        assert_eq!(t.holding(5, 4, late, 10), None);
        assert_eq!(t.open(5).valid.as_slice(), &[3]);
        // Dropping a copy leaves the set.
        t.dropped(5, 3);
        assert!(t.open(5).valid.is_empty());
    }

    #[test]
    fn a_version_written_outside_the_cluster_starts_a_new_tcommit() {
        let mut t = Table::new(1, 16).unwrap();
        let w = write(&mut t, 5, 1, 10);
        let o = t.open(5);
        // Node 2 found version 99 at the origin (an outside writer).
        let tlocal = t.holding(5, 2, o.tcommit, 99).unwrap();
        assert_ne!(tlocal, w.tcommit);
        let now = t.open(5);
        assert_eq!(now.version, Some(99));
        assert_eq!(now.valid.as_slice(), &[2]);
        assert_eq!(now.tcommit, tlocal);
    }

    #[test]
    fn a_dropped_entry_never_revalidates_an_old_copy() {
        // Capacity 1: opening file 2 drops file 1's entry.
        let mut t = Table::new(1, 1).unwrap();
        let w = write(&mut t, 1, 1, 10);
        t.open(2);
        assert_eq!(t.len(), 1);
        let again = t.open(1);
        assert_ne!(again.tcommit, w.tcommit, "node 1's Tlocal must not match");
        assert!(again.valid.is_empty());
        // A successor manager (another epoch) never matches either.
        let mut successor = Table::new(2, 16).unwrap();
        for f in 0..10 {
            assert_ne!(successor.open(f).tcommit, w.tcommit);
        }
    }

    #[test]
    fn record_fills_only_an_unknown_version_and_forget_clear_renew_tcommit() {
        let mut t = Table::new(1, 16).unwrap();
        assert_eq!(t.record(1, 5), None, "no entry");
        let first = t.open(1).tcommit;
        let o = t.record(1, 5).unwrap();
        assert_eq!((o.tcommit, o.version), (first, Some(5)));
        assert_eq!(t.record(1, 4).unwrap().version, Some(5), "known stays");
        t.forget(1);
        assert!(!t.contains(1));
        let again = t.open(1);
        assert_ne!(again.tcommit, first);
        assert_eq!(again.version, None);
        t.open(2);
        t.clear();
        assert!(t.is_empty());
        assert!(t.open(1).tcommit > again.tcommit, "the counter survives");
        // A commit without Topen races: no valid copy, no version.
        t.record(1, 7);
        let c = t.commit_without_open(1);
        assert!(!c.valid);
        assert_eq!(t.peek(1).unwrap().version, None);
        // Entries forgotten leave the recency order too: capacity 1 holds
        // a new file after a forget without dropping it.
        let mut one = Table::new(1, 1).unwrap();
        one.open(1);
        one.forget(1);
        one.open(2);
        one.open(2);
        assert!(one.contains(2));
    }

    #[test]
    fn a_member_that_leaves_leaves_every_valid_set() {
        let mut t = Table::new(1, 16).unwrap();
        for f in 0..4 {
            let o = t.open(f);
            t.commit(f, 9, o.tcommit, 1);
        }
        t.remove_member(9);
        assert!((0..4).all(|f| t.open(f).valid.is_empty()));
    }
}
