//! Inode numbers for origin paths: the kernel names files by number, the
//! origin by path.
//!
//! A number is handed out on `lookup` and kept until the kernel forgets it
//! as many times as it looked it up (FUSE's reference counting), so the
//! table holds what the kernel holds, bounded by [`MAX_INODES`]. The root is
//! number 1 and path `""`. Numbers are never reused while the mount lives.

use std::collections::HashMap;
use std::sync::Arc;

/// Inodes the table holds at most; a lookup beyond it fails with `ENFILE`
/// until the kernel forgets some (it does under memory pressure, and on
/// `echo 2 > /proc/sys/vm/drop_caches`).
pub const MAX_INODES: usize = 1_000_000;

/// The root's number, as FUSE fixes it.
pub(crate) const ROOT: u64 = 1;

struct Inode {
    path: Arc<str>,
    lookups: u64,
    /// The file's version at its last open: the kernel's pages of it are
    /// kept only while it stays the same.
    opened: Option<Arc<str>>,
    /// Whether it was a regular file when last looked up.
    file: bool,
}

/// The table.
pub(crate) struct Inodes {
    by_ino: HashMap<u64, Inode>,
    by_path: HashMap<Arc<str>, u64>,
    next: u64,
}

impl Default for Inodes {
    fn default() -> Self {
        let root: Arc<str> = Arc::from("");
        let mut by_ino = HashMap::new();
        by_ino.insert(
            ROOT,
            Inode {
                path: root.clone(),
                lookups: 1,
                opened: None,
                file: false,
            },
        );
        Inodes {
            by_ino,
            by_path: HashMap::from([(root, ROOT)]),
            next: ROOT + 1,
        }
    }
}

impl Inodes {
    /// The path of `ino`, if the kernel still holds it.
    pub(crate) fn path(&self, ino: u64) -> Option<Arc<str>> {
        self.by_ino.get(&ino).map(|i| i.path.clone())
    }

    /// The number for `path`, counting one more lookup; `None` when the
    /// table is full.
    pub(crate) fn lookup(&mut self, path: &str) -> Option<u64> {
        if let Some(&ino) = self.by_path.get(path) {
            if let Some(i) = self.by_ino.get_mut(&ino) {
                i.lookups += 1;
            }
            return Some(ino);
        }
        if self.by_ino.len() >= MAX_INODES {
            return None;
        }
        let ino = self.next;
        self.next += 1;
        let path: Arc<str> = Arc::from(path);
        self.by_path.insert(path.clone(), ino);
        self.by_ino.insert(
            ino,
            Inode {
                path,
                lookups: 1,
                opened: None,
                file: false,
            },
        );
        Some(ino)
    }

    /// Records whether `ino` is a regular file, as a lookup just found.
    pub(crate) fn set_file(&mut self, ino: u64, file: bool) {
        if let Some(i) = self.by_ino.get_mut(&ino) {
            i.file = file;
        }
    }

    /// Whether `ino` was a regular file when last looked up.
    pub(crate) fn is_file(&self, ino: u64) -> bool {
        self.by_ino.get(&ino).is_some_and(|i| i.file)
    }

    /// The number `path` has now, if the kernel still holds it.
    pub(crate) fn number(&self, path: &str) -> Option<u64> {
        self.by_path.get(path).copied()
    }

    /// Records that `ino` was opened at `version`; true if its previous
    /// open saw the same version (the kernel may keep its cached pages).
    pub(crate) fn opened(&mut self, ino: u64, version: &str) -> bool {
        let Some(i) = self.by_ino.get_mut(&ino) else {
            return false;
        };
        let same = i.opened.as_deref() == Some(version);
        if !same {
            i.opened = Some(Arc::from(version));
        }
        same
    }

    /// `path` was removed: its number keeps naming the removed file until
    /// the kernel forgets it, and the path is free for a new one.
    pub(crate) fn unlink(&mut self, path: &str) {
        self.by_path.remove(path);
    }

    /// `from` was renamed to `to`: its number, and those of everything
    /// under it, follow (a number replaced at `to` is unlinked).
    pub(crate) fn rename(&mut self, from: &str, to: &str) {
        self.unlink(to);
        let prefix = format!("{from}/");
        let moved: Vec<(u64, Arc<str>)> = self
            .by_ino
            .iter()
            .filter(|(_, i)| &*i.path == from || i.path.starts_with(&prefix))
            .map(|(&n, i)| (n, i.path.clone()))
            .collect();
        for (n, old) in moved {
            if self.by_path.get(&old) == Some(&n) {
                self.by_path.remove(&old);
            }
            let new: Arc<str> = Arc::from(format!("{to}{}", &old[from.len()..]));
            self.by_path.insert(new.clone(), n);
            if let Some(i) = self.by_ino.get_mut(&n) {
                i.path = new;
            }
        }
    }

    /// The kernel dropped `n` of its lookups of `ino`.
    pub(crate) fn forget(&mut self, ino: u64, n: u64) {
        if ino == ROOT {
            return;
        }
        let Some(i) = self.by_ino.get_mut(&ino) else {
            return;
        };
        i.lookups = i.lookups.saturating_sub(n);
        if i.lookups == 0
            && let Some(i) = self.by_ino.remove(&ino)
            && self.by_path.get(&i.path) == Some(&ino)
        {
            self.by_path.remove(&i.path);
        }
    }

    /// Inodes held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_ino.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_live_as_long_as_the_kernels_lookups() {
        let mut t = Inodes::default();
        assert_eq!(t.path(ROOT).as_deref(), Some(""));
        let a = t.lookup("a").unwrap();
        assert_eq!(t.lookup("a"), Some(a), "the same path, the same number");
        let b = t.lookup("d/b").unwrap();
        assert_ne!(a, b);
        t.forget(a, 1);
        assert_eq!(t.path(a).as_deref(), Some("a"), "one lookup still held");
        t.forget(a, 1);
        assert_eq!(t.path(a), None);
        let a2 = t.lookup("a").unwrap();
        assert_ne!(a2, a, "numbers are not reused");
        t.forget(ROOT, 5);
        assert_eq!(t.path(ROOT).as_deref(), Some(""), "the root stays");
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn renames_carry_numbers_and_everything_under_them() {
        let mut t = Inodes::default();
        let d = t.lookup("d").unwrap();
        let f = t.lookup("d/f").unwrap();
        let other = t.lookup("dx").unwrap();
        let gone = t.lookup("e").unwrap();
        t.rename("d", "e");
        assert_eq!(t.path(d).as_deref(), Some("e"));
        assert_eq!(t.path(f).as_deref(), Some("e/f"));
        assert_eq!(
            t.path(other).as_deref(),
            Some("dx"),
            "a prefix, not a child"
        );
        assert_eq!(t.lookup("e/f"), Some(f));
        assert_eq!(t.lookup("e"), Some(d), "the renamed number took the path");
        assert_ne!(t.lookup("d"), Some(d), "the old path is free");
        // Forgetting the replaced number leaves the new one in place.
        t.forget(gone, 1);
        assert_eq!(t.lookup("e"), Some(d));
    }

    #[test]
    fn the_kernels_pages_are_kept_only_while_the_version_stays() {
        let mut t = Inodes::default();
        let a = t.lookup("a").unwrap();
        assert!(!t.opened(a, "v1"), "first open: nothing to keep");
        assert!(t.opened(a, "v1"));
        assert!(!t.opened(a, "v2"), "changed: drop the pages");
        assert!(t.opened(a, "v2"));
        assert!(!t.opened(999, "v2"), "unknown inode");
    }

    #[test]
    fn kinds_are_those_of_the_last_lookup() {
        let mut t = Inodes::default();
        let a = t.lookup("a").unwrap();
        assert!(!t.is_file(a), "unknown until a lookup says");
        t.set_file(a, true);
        assert!(t.is_file(a));
        t.set_file(a, false);
        assert!(!t.is_file(a) && !t.is_file(999) && !t.is_file(ROOT));
    }
}
