//! A node's locally managed cache: a replacement policy, the data of its
//! blocks, and the request paths every node type shares.

use super::{Addr, BlockStore, Level, Msg, NodeId, Outbox, ReadDone};
use crate::policy::{BLOCK, BlockKey, Lookup, Policy};
use std::marker::PhantomData;

/// A replacement policy and the data of the blocks it caches.
#[derive(Clone, Debug)]
pub(crate) struct LocalCache<K, P, S> {
    pub(crate) policy: P,
    pub(crate) store: S,
    key: PhantomData<fn() -> K>,
}

impl<K: BlockKey, P: Policy<K>, S: BlockStore<K>> LocalCache<K, P, S> {
    pub(crate) fn new(policy: P, store: S) -> Self {
        LocalCache {
            policy,
            store,
            key: PhantomData,
        }
    }

    /// Whether `block` is cached.
    #[inline]
    pub(crate) fn contains(&self, block: K) -> bool {
        self.policy.contains(block)
    }

    /// A reference to `block`: a hit, or the policy's miss.
    #[inline]
    pub(crate) fn lookup(&mut self, block: K) -> Lookup<P::Miss> {
        self.policy.lookup(block)
    }

    /// Makes room for the block of `miss`, handing each evicted block and
    /// its data (none if it never arrived) to `evicted`, then inserts
    /// `block`. The data arrives later (a read) or now (a write, a
    /// forwarded block).
    #[inline]
    pub(crate) fn admit(
        &mut self,
        block: K,
        miss: P::Miss,
        mut evicted: impl FnMut(K, Option<S::Data>),
    ) {
        while self.policy.needs_room(&miss, BLOCK) {
            if let Some(victim) = self.policy.evict(&miss, BLOCK) {
                evicted(victim, self.store.take(victim));
            }
        }
        self.policy.insert(block, BLOCK, miss);
    }

    /// Stores data that arrived for `block`, if it is still cached.
    #[inline]
    pub(crate) fn fill(&mut self, block: K, data: S::Data) {
        if self.policy.contains(block) {
            self.store.put(block, data);
        }
    }

    /// A copy of `block`'s data, if cached.
    #[inline]
    pub(crate) fn get(&self, block: K) -> Option<S::Data> {
        if self.policy.contains(block) {
            self.store.get(block)
        } else {
            None
        }
    }

    /// Drops `block` and returns its data, if it was cached.
    pub(crate) fn remove(&mut self, block: K) -> Option<S::Data> {
        if self.policy.remove(block) {
            self.store.take(block)
        } else {
            None
        }
    }

    /// Makes room for `block` greedily (each victim dropped, the manager
    /// told) and inserts it.
    #[inline]
    pub(crate) fn admit_dropping(
        &mut self,
        me: NodeId,
        block: K,
        miss: P::Miss,
        out: &mut Outbox<K, S::Data>,
    ) {
        self.admit(block, miss, |victim, _| notify_dropped(me, victim, out));
    }

    /// A write by node `me`'s user, managed greedily: the new data is
    /// cached (victims dropped) and written through to the manager.
    pub(crate) fn write_greedy(
        &mut self,
        me: NodeId,
        block: K,
        data: S::Data,
        out: &mut Outbox<K, S::Data>,
    ) {
        if let Lookup::Miss(miss) = self.lookup(block) {
            self.admit_dropping(me, block, miss, out);
        }
        self.fill(block, data.clone());
        write_through(me, block, data, out);
    }

    /// The data of node `me`'s read arrived: keep it and finish the read.
    #[inline]
    pub(crate) fn receive(
        &mut self,
        me: NodeId,
        block: K,
        data: S::Data,
        level: Level,
        hops: u8,
        out: &mut Outbox<K, S::Data>,
    ) {
        self.fill(block, data);
        complete(me, block, level, hops, out);
    }
}

/// Sends a node's piggybacked notice that it no longer caches `block`.
#[inline]
pub(crate) fn notify_dropped<K, D>(me: NodeId, block: K, out: &mut Outbox<K, D>) {
    out.send(Addr::Node(me), Addr::Manager, Msg::Dropped { block });
}

/// Completes a read at node `me`.
#[inline]
pub(crate) fn complete<K, D>(me: NodeId, block: K, level: Level, hops: u8, out: &mut Outbox<K, D>) {
    out.complete(ReadDone {
        node: me,
        block,
        level,
        hops,
    });
}

/// Serves a forwarded read from `data`, or hands it back to the manager if
/// this node no longer holds the block.
#[inline]
pub(crate) fn serve_forward<K, D>(
    me: NodeId,
    block: K,
    reader: NodeId,
    hops: u8,
    data: Option<D>,
    out: &mut Outbox<K, D>,
) {
    let hops = hops.saturating_add(1);
    match data {
        Some(data) => out.send(
            Addr::Node(me),
            Addr::Node(reader),
            Msg::Data {
                block,
                data,
                level: Level::RemoteNode,
                hops,
            },
        ),
        None => out.send(
            Addr::Node(me),
            Addr::Manager,
            Msg::NotHere {
                block,
                reader,
                hops,
            },
        ),
    }
}

/// Asks the manager for `block` on behalf of reader `me`.
#[inline]
pub(crate) fn ask_manager<K, D>(me: NodeId, block: K, out: &mut Outbox<K, D>) {
    out.send(
        Addr::Node(me),
        Addr::Manager,
        Msg::Read {
            block,
            reader: me,
            hops: 1,
        },
    );
}

/// Writes `block` through to the manager.
#[inline]
pub(crate) fn write_through<K, D>(me: NodeId, block: K, data: D, out: &mut Outbox<K, D>) {
    out.send(Addr::Node(me), Addr::Manager, Msg::Write { block, data });
}
