//! What a handle reads besides its open's version: a write handle's
//! draft or its writers' last commit, read-ahead for a sequential reader,
//! and the version a granted lock makes it read.

use super::*;

/// Bytes fetched ahead of a sequential reader (a quarter of the node's
/// stream budget, as a gateway stream reads ahead).
const READ_AHEAD: u64 = 2 << 20;

/// Where a handle's reader stands, for read-ahead.
#[derive(Default)]
pub(super) struct ReadAhead {
    /// End of the last read.
    last_end: AtomicU64,
    /// Blocks below this were fetched ahead already.
    fetched_to: AtomicU64,
}

impl CoopFs {
    /// What a granted lock does before its holder reads through `fh`
    /// (lock-to-unlock consistency, as NFS clients keep it): the handle
    /// reads the file's version at the origin now, which holds whatever
    /// the lock's previous holder wrote before it unlocked, on any node.
    /// Writes of these writers not yet committed are read as they are.
    pub(crate) fn refresh_after_lock(
        &self,
        fh: u64,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let handles = self.handles.clone();
        let node = self.node.clone();
        let (path, pending) = match self.handles().get(&fh) {
            Some(Open::File { path, .. }) => (Some(path.clone()), None),
            Some(Open::Write { pending, .. }) => (Some(pending.path()), Some(pending.clone())),
            _ => (None, None),
        };
        async move {
            let Some(path) = path else { return };
            let fresh = match node.stat_fresh(&path).await {
                Ok(v) => v,
                Err(e) => return tracing::debug!(%path, error = %e, "no fresh version at a lock"),
            };
            if let Some(p) = pending {
                p.refresh(fresh);
                return;
            }
            let mut handles = handles.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(Open::File { version, ahead, .. }) = handles.get_mut(&fh) {
                *version = fresh;
                *ahead = Arc::new(ReadAhead::default());
            }
        }
    }

    /// Reads through a write handle: the draft if something was written
    /// since the last commit, else the version its writers last committed,
    /// else the version the open saw (or, for a file created empty, the
    /// file as committed).
    pub(super) fn read_written(
        &self,
        p: &Pending,
        opened: Option<Arc<FileVersion>>,
        offset: u64,
        size: u32,
    ) -> Result<Vec<u8>, Errno> {
        let len = size.min(MAX_READ) as usize;
        if let Some(data) = self.writers.read(p, offset, len) {
            return data;
        }
        let path = p.path();
        let node = self.node.clone();
        // What these writers committed last is newer than what the open saw.
        let opened = p.committed().or(opened);
        crate::wait(&self.rt, async move {
            let version = match opened {
                Some(v) => v,
                None => node.stat(&path).await.map_err(|e| errno::of_node(&e))?,
            };
            let range = offset..offset.saturating_add(len as u64);
            let data = node.read_version(path, version, range).await;
            data.map(|d| d.to_vec()).map_err(|e| errno::of_node(&e))
        })
    }

    /// Read-ahead across peers: when a handle reads on from where it last
    /// stopped, the blocks up to [`READ_AHEAD`] bytes past this read are
    /// fetched into the node now, each once, so the kernel's next requests
    /// find them in memory instead of waiting a peer's round trip each.
    pub(super) fn prefetch(
        &self,
        ahead: &ReadAhead,
        path: &Arc<str>,
        version: &Arc<FileVersion>,
        offset: u64,
        end: u64,
    ) {
        let sequential = ahead.last_end.swap(end, Ordering::Relaxed) == offset;
        if !sequential {
            return;
        }
        let bs = u64::from(self.node.block_size());
        let from = ahead
            .fetched_to
            .load(Ordering::Relaxed)
            .max(end.div_ceil(bs));
        let to = (end + READ_AHEAD).min(version.size).div_ceil(bs);
        if from >= to {
            return;
        }
        ahead.fetched_to.store(to, Ordering::Relaxed);
        for index in from..to {
            let (node, path, version) = (self.node.clone(), path.clone(), version.clone());
            // Into the node's cache; a failure here is the later read's to
            // meet and report.
            self.rt.spawn(async move {
                let _ = node.read_block(&path, &version, index as u32).await;
            });
        }
    }
}
