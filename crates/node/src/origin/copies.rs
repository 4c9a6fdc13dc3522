//! Files the origin was just given: a writer's copy of each version it
//! put to an object store, kept until the writer's node has taken that
//! version into its memory.
//!
//! A writer's node reads the version it committed right after the commit
//! (`NodeHandle::take_in`), to be the copy the next readers are forwarded
//! to (C2Cfs: the writer's copy is the valid one). Its spool file holds
//! exactly the bytes the put stored under that version's ETag, so those
//! reads come from it instead of a GET of every block back from S3. Only
//! exact (path, version) matches are served, and the table is bounded.

use std::collections::VecDeque;
use std::fs::File;
use std::sync::{Arc, Mutex};

/// Copies kept at most; the oldest goes first (its version is then read
/// from the store, as any other).
const MAX_COPIES: usize = 16;

#[derive(Debug, Default)]
pub(crate) struct Copies {
    kept: Mutex<VecDeque<Kept>>,
}

#[derive(Debug)]
struct Kept {
    path: String,
    version: String,
    file: Arc<File>,
}

impl Copies {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Kept>> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `file` as the bytes of `path` at `version`.
    pub(crate) fn keep(&self, path: &str, version: &str, file: File) {
        let mut kept = self.lock();
        kept.retain(|k| k.path != path);
        if kept.len() >= MAX_COPIES {
            kept.pop_front();
        }
        kept.push_back(Kept {
            path: path.to_owned(),
            version: version.to_owned(),
            file: Arc::new(file),
        });
    }

    /// The copy of `path` at exactly `version`, if kept.
    pub(crate) fn get(&self, path: &str, version: &str) -> Option<Arc<File>> {
        let kept = self.lock();
        let k = kept
            .iter()
            .find(|k| k.path == path && k.version == version)?;
        Some(k.file.clone())
    }

    /// Forgets the copy of `path` at `version`.
    pub(crate) fn forget(&self, path: &str, version: &str) {
        self.lock()
            .retain(|k| !(k.path == path && k.version == version));
    }
}
