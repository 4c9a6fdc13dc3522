//! The origin: files with versions, a block's contents a function of its
//! id (so every node agrees on them without carrying bytes), and a strong
//! version check: a read of a version that is no longer current fails.

use super::BLOCK_SIZE;
use crate::protocol::content_of;
use coopcache_core::protocol::{BlockId, Digest};
use std::collections::BTreeMap;
use std::hash::BuildHasher;

/// The origin's files.
pub(super) struct Origin {
    /// Per path: its current version and its length in blocks.
    files: Vec<(u32, u32)>,
    /// Current file ids, to their path.
    current: BTreeMap<u64, u32>,
}

/// The id of `path` at `version`, as the daemon hashes a path with its
/// origin version.
fn file_id(path: u32, version: u32) -> u64 {
    foldhash::fast::FixedState::with_seed(0x6f72_6967).hash_one((path, version))
}

impl Origin {
    /// `lengths[i]` blocks in file `i`, each at version 0.
    pub(super) fn new(lengths: impl IntoIterator<Item = u32>) -> Origin {
        let files: Vec<(u32, u32)> = lengths.into_iter().map(|n| (0, n.max(1))).collect();
        let current = (0..files.len() as u32)
            .map(|p| (file_id(p, 0), p))
            .collect();
        Origin { files, current }
    }

    /// Files.
    pub(super) fn len(&self) -> u32 {
        self.files.len() as u32
    }

    /// Opens `path`: its current file id and length in blocks.
    pub(super) fn open(&self, path: u32) -> (u64, u32) {
        let (version, blocks) = self.files[path as usize];
        (file_id(path, version), blocks)
    }

    /// Whether `file` is the id of some version `path` has had.
    pub(super) fn had(&self, path: u32, file: u64) -> bool {
        let Some(&(current, _)) = self.files.get(path as usize) else {
            return false;
        };
        (0..=current).any(|v| file_id(path, v) == file)
    }

    /// `path` is rewritten: a new version of `blocks` blocks.
    pub(super) fn change(&mut self, path: u32, blocks: u32) {
        let (version, _) = self.files[path as usize];
        self.current.remove(&file_id(path, version));
        self.files[path as usize] = (version + 1, blocks.max(1));
        self.current.insert(file_id(path, version + 1), path);
    }

    /// What a read of `block` returns: its contents if its version is
    /// current and the block exists. A private node names the file by an
    /// id of its own: `file` is then the origin's (and the contents are
    /// the origin file's, alike for every private node reading it, as
    /// copies of one base image are).
    pub(super) fn read(&self, block: BlockId, file: Option<u64>) -> Option<Digest> {
        let file = file.unwrap_or(block.file);
        let path = *self.current.get(&file)?;
        (block.index < self.files[path as usize].1).then(|| content(BlockId { file, ..block }))
    }
}

/// The contents of `block` at the origin, for the version it names.
pub(super) fn content(block: BlockId) -> Digest {
    content_of(&block, BLOCK_SIZE)
}
