//! A private origin (Netcache section 3.5): one the other members cannot
//! read, such as a node's own directory or a bucket only it has
//! credentials for.
//!
//! Its blocks never enter the shared directory: nothing about them goes
//! to a manager, a miss goes straight to the origin, and no peer is ever
//! served one. What the node evicts is parked on idle peers sealed
//! ([`Sealer`]: an AEAD in the daemon, under a key that never leaves the
//! owner), and the owner keeps each parked block's digest in its own hash
//! table: what comes back is opened and checked against that digest, and
//! anything else (flipped, truncated, replayed, swapped or forged) is
//! rejected and read from the origin. A host sees only sealed contents
//! and block ids it cannot link to files.

use super::integrity::Expected;
use super::node::NodeProtocol;
use super::parked::Notes;
use super::{Content, Digest, PeerMsg, ProtocolKey, Recorded};
use crate::coop::{Msg, NodeId, SizeClassed};

/// How a private node seals a block before parking it on a peer, and
/// opens what the peer returns.
pub trait Sealer<K, D>: Send {
    /// What the host keeps of `block`'s `data`: sealed so that it reveals
    /// nothing of the bytes, and bound to `block`; `None` if it cannot be
    /// sealed (the block is then dropped, never parked in the clear).
    fn seal(&mut self, block: K, data: &D) -> Option<D>;

    /// The contents `sealed` holds, if it was sealed by this sealer for
    /// `block` and not altered since; `None` otherwise.
    fn open(&mut self, block: K, sealed: &D) -> Option<D>;
}

/// A private node's sealer and its hash table of parked blocks.
pub(super) struct Private<K, D> {
    sealer: Box<dyn Sealer<K, D>>,
    /// The digest of each parked block's contents, as they left: what a
    /// returned block must open to. Only the owner keeps it. A block
    /// taken back leaves it at once (its digest goes with the read).
    hashes: Notes<K, Digest>,
    /// Most entries of `hashes`. Beyond, the oldest goes: parked blocks
    /// are never touched until taken back, so the oldest note is a block
    /// the remote cache drops next, or one it dropped unannounced (its
    /// host left); a block without a note is read from the origin.
    max: usize,
}

impl<K: ProtocolKey, D> Private<K, D> {
    /// Forgets `block`'s digest (invalidated: never parked again as is).
    pub(super) fn forget(&mut self, block: K) {
        self.hashes.forget(block);
    }
}

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// Makes this node's origin private: its blocks are sealed with
    /// `sealer` when parked, and the digests of at most `max_parked`
    /// parked blocks are kept to check them on return (beyond, the
    /// oldest are forgotten, and read from the origin when needed). Only Direct parks blocks; with any other
    /// algorithm a private node keeps its blocks to itself.
    pub fn set_private(&mut self, sealer: Box<dyn Sealer<K, D>>, max_parked: usize) {
        self.private = Some(Private {
            sealer,
            hashes: Notes::default(),
            max: max_parked,
        });
    }

    /// Whether this node's origin is private.
    pub fn is_private(&self) -> bool {
        self.private.is_some()
    }

    /// Blocks parked by this private node whose digests it keeps.
    pub fn private_parked(&self) -> usize {
        self.private.as_ref().map_or(0, |p| p.hashes.len())
    }

    /// The node machine's message to `block`'s manager, on a private
    /// node: a read goes to the origin (`true`: nothing to send), and a
    /// dropped block leaves the hash table. Anything else, and anything on
    /// a node that is not private, goes on to [`Self::send_to_manager`],
    /// which tells a manager nothing of a private node's blocks.
    pub(super) fn private_to_manager(&mut self, block: K, msg: &Msg<K, D>, now: u64) -> bool {
        let Some(p) = &mut self.private else {
            return false;
        };
        match msg {
            Msg::Read { reader, .. } if *reader == self.me => {
                self.read_origin(block, now);
                true
            }
            Msg::Dropped { .. } => {
                p.hashes.forget(block);
                false
            }
            _ => false,
        }
    }

    /// Parks `block` at `host` sealed, noting its digest; `false` if the
    /// node is not private.
    pub(super) fn park_sealed(&mut self, host: NodeId, block: K, data: &D) -> bool {
        let Some(p) = &mut self.private else {
            return false;
        };
        let data_digest = data.digest();
        let Some(data) = p.sealer.seal(block, data) else {
            self.stats.dropped += 1;
            return true;
        };
        p.hashes.note(block, data_digest, p.max);
        self.stats.sealed += 1;
        self.send(host, PeerMsg::Place { block, data });
        true
    }

    /// Asks `host` for `block`, parked there sealed, to be checked against
    /// this node's own digest (no manager is asked); with no digest kept,
    /// the origin. `false` if the node is not private.
    pub(super) fn reclaim_sealed(&mut self, host: NodeId, block: K, now: u64) -> bool {
        let Some(p) = &mut self.private else {
            return false;
        };
        let Some(digest) = p.hashes.forget(block) else {
            self.read_origin(block, now);
            return true;
        };
        self.asked(block, host);
        self.send(host, PeerMsg::Reclaim { block });
        let expected = Expected {
            recorded: Recorded {
                digest,
                by: self.me,
            },
            manager: self.me,
        };
        self.read_expect(block, expected, host, now);
        true
    }

    /// Opens what `from` returned for `block`: the contents, if they were
    /// sealed for this block by this node (the caller then checks them
    /// against the digest kept); otherwise a failure blamed on `from` once
    /// the origin's copy settles it, and `None`.
    pub(super) fn open_sealed(
        &mut self,
        block: K,
        from: NodeId,
        data: D,
        expect: Expected,
    ) -> Option<D> {
        let p = self.private.as_mut()?;
        if let Some(plain) = p.sealer.open(block, &data) {
            return Some(plain);
        }
        self.integrity_failure();
        self.dispute(block, from, data.digest(), expect);
        None
    }
}

/// The simulator's sealer: contents are digests, so sealing XORs the
/// digest with a pad drawn from the key and the block (a host sees no
/// digest of the owner's bytes, and a block's sealed form opens to
/// garbage under any other block id) and adds an AEAD's 40 bytes. It
/// authenticates nothing itself: the owner's hash table rejects what a
/// host altered, as it does behind the daemon's AEAD.
#[derive(Clone, Debug)]
pub struct DigestSealer {
    key: u64,
}

/// Bytes an AEAD adds to each sealed block (XChaCha20-Poly1305's 24-byte
/// nonce and 16-byte tag).
pub const SEAL_OVERHEAD: u32 = 40;

impl DigestSealer {
    /// A sealer under `key`.
    pub fn new(key: u64) -> Self {
        DigestSealer { key }
    }

    fn pad<K: std::hash::Hash>(&self, block: K) -> [u8; 32] {
        use std::hash::BuildHasher;
        let mut state = foldhash::fast::FixedState::with_seed(self.key).hash_one(block);
        let mut pad = [0u8; 32];
        for chunk in pad.chunks_mut(8) {
            chunk.copy_from_slice(&crate::policy::splitmix64(&mut state).to_le_bytes());
        }
        pad
    }

    fn xor<K: std::hash::Hash>(&self, block: K, d: &Digest) -> [u8; 32] {
        let pad = self.pad(block);
        std::array::from_fn(|i| d.hash[i] ^ pad[i])
    }
}

impl<K: std::hash::Hash + Send> Sealer<K, Digest> for DigestSealer {
    fn seal(&mut self, block: K, data: &Digest) -> Option<Digest> {
        Some(Digest {
            hash: self.xor(block, data),
            len: data.len.checked_add(SEAL_OVERHEAD)?,
        })
    }

    fn open(&mut self, block: K, sealed: &Digest) -> Option<Digest> {
        Some(Digest {
            hash: self.xor(block, sealed),
            len: sealed.len.checked_sub(SEAL_OVERHEAD)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_sealer_hides_the_digest_and_binds_the_block() {
        let mut s = DigestSealer::new(7);
        let d = Digest {
            hash: [3; 32],
            len: 100,
        };
        let sealed = Sealer::<u64, _>::seal(&mut s, 1, &d).unwrap();
        assert_ne!(sealed.hash, d.hash);
        assert_eq!(sealed.len, 140);
        assert_eq!(Sealer::<u64, _>::open(&mut s, 1, &sealed), Some(d));
        let swapped = Sealer::<u64, _>::open(&mut s, 2, &sealed).unwrap();
        assert_ne!(swapped, d, "another block's sealed form opens to garbage");
        let short = Digest {
            hash: d.hash,
            len: 3,
        };
        assert_eq!(Sealer::<u64, _>::open(&mut s, 1, &short), None);
    }
}
