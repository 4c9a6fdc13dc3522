//! Where a node keeps the data of the blocks it caches.

/// A node's block data, keyed like its cache. The state machines decide
/// which blocks to keep; the store only holds their bytes.
///
/// The simulator uses [`NoData`], which holds nothing and costs nothing, so
/// the same machines replay traces without carrying a byte; the daemon
/// plugs in a memory-budgeted store of real buffers.
pub trait BlockStore<K> {
    /// What a block's data is.
    type Data: Clone + std::fmt::Debug;

    /// Keeps `data` as `block`'s contents.
    fn put(&mut self, block: K, data: Self::Data);

    /// A copy of `block`'s contents, if stored.
    fn get(&self, block: K) -> Option<Self::Data>;

    /// Drops `block`'s contents and returns them, if stored.
    fn take(&mut self, block: K) -> Option<Self::Data>;

    /// Blocks and bytes held (nothing, for a store that holds nothing).
    fn usage(&self) -> StoreUsage {
        StoreUsage::default()
    }
}

/// What a store holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreUsage {
    /// Blocks held.
    pub blocks: usize,
    /// Bytes of their contents.
    pub bytes: usize,
}

impl std::ops::Add for StoreUsage {
    type Output = StoreUsage;

    fn add(self, o: StoreUsage) -> StoreUsage {
        StoreUsage {
            blocks: self.blocks + o.blocks,
            bytes: self.bytes + o.bytes,
        }
    }
}

/// The simulator's store: blocks have no contents, so every operation is
/// free. `get` answers for any block; the state machines only ask for
/// blocks they cache.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoData;

impl<K> BlockStore<K> for NoData {
    type Data = ();

    #[inline]
    fn put(&mut self, _: K, _: ()) {}

    #[inline]
    fn get(&self, _: K) -> Option<()> {
        Some(())
    }

    #[inline]
    fn take(&mut self, _: K) -> Option<()> {
        Some(())
    }
}
