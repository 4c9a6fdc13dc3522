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
//!
//! Unification (Netcache sections 2.5 and 3.5, opt-in): a block the
//! sealer seals under its content ([`Sealed::key`]) is parked under a
//! content id, the same for identical blocks of every owner holding the
//! cluster's dedup key, so a host keeps one copy for all of them
//! (parked.rs). The owner notes the id and the content key beside the
//! digest; the host still sees only ciphertext.

use super::integrity::Expected;
use super::node::NodeProtocol;
use super::parked::Notes;
use super::{Content, Digest, PeerMsg, ProtocolKey, Recorded, manager_of};
use crate::coop::{Msg, NodeId, SizeClassed};

/// The key a unified block is sealed under, derived from its contents
/// (and the cluster's dedup key): whoever holds it can open the block.
pub type ContentKey = [u8; 32];

/// A block as a [`Sealer`] sealed it for parking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sealed<K, D> {
    /// The id the host keeps it under: one that tells the host nothing of
    /// the owner's files (the daemon's private block ids already do not),
    /// or, unified, the content id identical blocks share.
    pub id: K,
    /// What the host keeps.
    pub data: D,
    /// Unified: the key that opens it, kept by the owner only.
    pub key: Option<ContentKey>,
}

/// How a private node seals a block before parking it on a peer, and
/// opens what the peer returns.
pub trait Sealer<K, D>: Send {
    /// What the host keeps of `block`'s `data`: sealed so that it reveals
    /// nothing of the bytes, and bound to `block` (or, unified, to its
    /// contents); `None` if it cannot be sealed (the block is then
    /// dropped, never parked in the clear).
    fn seal(&mut self, block: K, data: &D) -> Option<Sealed<K, D>>;

    /// `block`'s `data` sealed under the owner's key alone, never unified:
    /// what the node writes to its own disk tier, opened with
    /// [`Sealer::open`] and no content key. `None` if it cannot be sealed
    /// (the block is then not written).
    fn seal_own(&mut self, block: K, data: &D) -> Option<D>;

    /// The contents `sealed` holds, if it was sealed by this sealer for
    /// `block` (unified: under `key`) and not altered since; `None`
    /// otherwise.
    fn open(&mut self, block: K, key: Option<&ContentKey>, sealed: &D) -> Option<D>;
}

/// Bytes an AEAD adds to each block sealed under the owner's key
/// (XChaCha20-Poly1305's 24-byte random nonce and 16-byte tag).
pub const SEAL_OVERHEAD: u32 = 40;

/// Bytes an AEAD adds to each unified block: its 16-byte tag only (its
/// key seals nothing else, so its nonce is fixed).
pub const UNIFIED_OVERHEAD: u32 = 16;

/// A block id made from a hash: the content id a unified block is parked
/// under (or a simulated owner's salted id), random to whoever lacks the
/// key behind the hash.
pub trait HostId: Sized {
    /// The id taken from the first bytes of `hash`.
    fn from_hash(hash: &[u8; 32]) -> Self;
}

impl HostId for u64 {
    fn from_hash(hash: &[u8; 32]) -> Self {
        let mut b = [0u8; 8];
        b.copy_from_slice(&hash[..8]);
        u64::from_le_bytes(b)
    }
}

impl HostId for super::BlockId {
    fn from_hash(hash: &[u8; 32]) -> Self {
        let mut index = [0u8; 4];
        index.copy_from_slice(&hash[8..12]);
        super::BlockId::new(u64::from_hash(hash), u32::from_le_bytes(index))
    }
}

/// What a private owner keeps of a block it parked.
#[derive(Clone, Copy, Debug)]
pub(super) struct Note<K> {
    /// The id the host keeps it under.
    id: K,
    /// The digest of its contents, as they left.
    digest: Digest,
    /// Unified: the key that opens it.
    key: Option<ContentKey>,
    /// The node it was parked on.
    host: NodeId,
}

/// Most bytes one note of a daemon's hash table takes (block ids
/// [`BlockId`](super::BlockId)): its map slot and control byte at the
/// lowest load a bounded table reaches (buckets are a power of two, at
/// most 7/8 full, so down to 7/16 after growing), and four order entries
/// (the order queue holds up to twice the notes, in a buffer up to twice
/// as long). The memory budget counts this per note.
pub const NOTE_BYTES: usize = note_bytes::<Note<super::BlockId>>();

/// Most bytes a daemon's private node keeps per read of a parked block in
/// flight: the block its answer is for, and a unified block's key.
pub const RECLAIM_BYTES: usize = note_bytes::<super::BlockId>() + note_bytes::<ContentKey>();

/// Most bytes of one note with a value of type `V` in a [`Notes`] table
/// of block ids.
const fn note_bytes<V>() -> usize {
    let slot = size_of::<(super::BlockId, (V, u64))>() + 1;
    slot * 16 / 7 + 4 * size_of::<(super::BlockId, u64)>()
}

/// A private node's sealer and its hash table of parked blocks.
pub(super) struct Private<K, D> {
    sealer: Box<dyn Sealer<K, D>>,
    /// The note of each parked block: its id at the host, the digest of
    /// its contents as they left (what a returned block must open to) and,
    /// unified, its key. Only the owner keeps it. A block taken back
    /// leaves it at once (its digest goes with the read).
    hashes: Notes<K, Note<K>>,
    /// The reads of parked blocks in flight, by the id asked of the host:
    /// the block each answers. At most `in_flight` (an entry left by a
    /// host that never answered is pushed out by later ones).
    reclaims: Notes<K, K>,
    /// The keys of the unified blocks being taken back, by block; at
    /// most `in_flight`.
    keys: Notes<K, ContentKey>,
    /// Reads this node has in flight at most.
    in_flight: usize,
    /// Most entries of each table. Beyond, the oldest goes: parked blocks
    /// are never touched until taken back, so the oldest note is a block
    /// the remote cache drops next, or one it dropped unannounced (its
    /// host left); a block without a note is read from the origin.
    max: usize,
}

impl<K: ProtocolKey, D> Private<K, D> {
    /// `block`'s `data` sealed for this node's disk tier
    /// ([`Sealer::seal_own`]).
    pub(super) fn seal_own(&mut self, block: K, data: &D) -> Option<D> {
        self.sealer.seal_own(block, data)
    }

    /// What a slot of this node's disk tier held for `block`, opened;
    /// `None` if it does not open (another block's, altered, or sealed by
    /// an earlier run's key).
    pub(super) fn open_own(&mut self, block: K, sealed: &D) -> Option<D> {
        self.sealer.open(block, None, sealed)
    }

    /// Forgets `block`'s note (invalidated: never parked again as is).
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
            reclaims: Notes::default(),
            keys: Notes::default(),
            in_flight: self.cfg.max_reads,
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
    /// node is not private. A unified block goes instead to the lender its
    /// content id picks (rendezvous, as managers are picked), so identical
    /// blocks of every owner meet on one host: parked at random, they
    /// would unify only by chance.
    pub(super) fn park_sealed(&mut self, host: NodeId, block: K, data: &D) -> bool {
        let Some(p) = &mut self.private else {
            return false;
        };
        let digest = data.digest();
        let Some(Sealed { id, data, key }) = p.sealer.seal(block, data) else {
            self.stats.dropped += 1;
            return true;
        };
        let host = match key {
            Some(_) => manager_of(id.route(), self.peers.lenders()).unwrap_or(host),
            None => host,
        };
        let note = Note {
            id,
            digest,
            key,
            host,
        };
        p.hashes.note(block, note, p.max);
        self.stats.sealed += 1;
        self.stats.unified += u64::from(key.is_some());
        self.send(host, PeerMsg::Place { block: id, data });
        true
    }

    /// Asks the host of `block`, parked there sealed, for it, to be
    /// checked against this node's own digest (no manager is asked); with
    /// no note kept, the host gone, or another read of the same id from
    /// the host still waiting (two of this node's blocks unified), the
    /// origin. `false` if the node is not private.
    pub(super) fn reclaim_sealed(&mut self, block: K, now: u64) -> bool {
        let Some(p) = &mut self.private else {
            return false;
        };
        let note = p.hashes.forget(block);
        let Some(note) = note.filter(|n| self.live.contains(&n.host)) else {
            self.read_origin(block, now);
            return true;
        };
        let host = note.host;
        let other = p.reclaims.get(note.id).filter(|&b| b != block);
        if other.is_some_and(|b| self.reads.asks(b, host)) {
            self.read_origin(block, now);
            return true;
        }
        let Some(p) = &mut self.private else {
            return true;
        };
        p.reclaims.note(note.id, block, p.in_flight);
        if let Some(key) = note.key {
            p.keys.note(block, key, p.in_flight);
        }
        self.asked(block, host);
        self.send(host, PeerMsg::Reclaim { block: note.id });
        let expected = Expected {
            recorded: Recorded {
                digest: note.digest,
                by: self.me,
            },
            manager: self.me,
        };
        self.read_expect(block, expected, host, now);
        true
    }

    /// The block a host's answer about `id` is for: on a private node, the
    /// one being taken back under that id (the answer leaves the table);
    /// otherwise `id` itself.
    pub(super) fn reclaimed(&mut self, id: K) -> K {
        match &mut self.private {
            Some(p) => p.reclaims.forget(id).unwrap_or(id),
            None => id,
        }
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
        let key = p.keys.forget(block);
        if let Some(plain) = p.sealer.open(block, key.as_ref(), &data) {
            return Some(plain);
        }
        self.integrity_failure();
        self.dispute(block, from, data.digest(), expect);
        None
    }
}
