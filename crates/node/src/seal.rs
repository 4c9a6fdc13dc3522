//! Sealing a private origin's blocks before they are parked on a peer
//! (Netcache section 3.5; the protocol's side is the core's
//! `protocol/private.rs`).
//!
//! XChaCha20-Poly1305 under a key drawn at start that never leaves this
//! process's memory, with a random 192-bit nonce per block (no count of
//! blocks sealed under one key comes near a collision, unlike a 96-bit
//! random nonce), and the block's identity as associated data: its file
//! id, which names the file *and* its version (`block::private_file_id`),
//! its index and byte offset. So a host that returns another block's
//! sealed bytes (swapped), those of an older version of the file
//! (replayed), or bytes it altered, cut or made up, returns something
//! that does not open. The owner also checks what opens against the
//! digest it kept (the core's hash table), which catches what a sealer
//! alone would miss.
//!
//! A sealed block is `nonce (24 B) || ciphertext || tag (16 B)`.
//!
//! Unification (opt-in, `--unify-key`): a block of a file that is not
//! privacy-critical (`block::private_file_id`) is sealed under its
//! *content key*, a BLAKE3 hash of its bytes keyed with the cluster's
//! dedup key, and parked under its *content id*, a keyed hash of that
//! key: identical blocks of every owner holding the dedup key seal to the
//! same bytes under the same id, which a host keeps once. This is
//! Netcache's unification (section 3.5.1) with a keyed hash where the
//! paper used the plain MD5 of the block: plain convergent encryption
//! lets anyone who can guess a block confirm the guess (section 3.5.3);
//! keyed, only a holder of the dedup key can. A member holds it, so a
//! privacy-critical file (`--critical`) is never unified. A unified block
//! is `ciphertext || tag (16 B)`: its key seals nothing else, so its nonce
//! is fixed.

use crate::block::{Block, BlockId, UNIFIABLE};
use bytes::Bytes;
use chacha20poly1305::aead::{AeadCore, AeadInPlace, KeyInit, OsRng};
use chacha20poly1305::{Tag, XChaCha20Poly1305, XNonce};
use coopcache_core::protocol::{
    ContentKey, HostId, SEAL_OVERHEAD, Sealed, Sealer, UNIFIED_OVERHEAD,
};

const NONCE: usize = 24;
const TAG: usize = 16;
const _: () = assert!(NONCE + TAG == SEAL_OVERHEAD as usize);
const _: () = assert!(TAG == UNIFIED_OVERHEAD as usize);

/// The cluster-wide key unified blocks' content keys and ids are hashed
/// under (`coopcache cluster unify-key`).
pub type DedupKey = [u8; 32];

/// Seals and opens one private node's blocks.
pub struct BlockSealer {
    cipher: XChaCha20Poly1305,
    block_size: u32,
    /// Set when this node unifies the blocks of files that are not
    /// privacy-critical.
    dedup: Option<DedupKey>,
}

impl std::fmt::Debug for BlockSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("BlockSealer")
            .field("block_size", &self.block_size)
            .finish_non_exhaustive()
    }
}

impl BlockSealer {
    /// A sealer with a fresh random key, for blocks of `block_size` bytes.
    pub fn new(block_size: u32) -> BlockSealer {
        BlockSealer {
            cipher: XChaCha20Poly1305::new(&XChaCha20Poly1305::generate_key(&mut OsRng)),
            block_size,
            dedup: None,
        }
    }

    /// A sealer with a fresh random key that unifies the blocks of files
    /// that are not privacy-critical under the dedup key `dedup`.
    pub fn unifying(block_size: u32, dedup: DedupKey) -> BlockSealer {
        BlockSealer {
            dedup: Some(dedup),
            ..BlockSealer::new(block_size)
        }
    }
}

/// A block's content key under `dedup`: whoever has the same bytes and
/// the dedup key derives it, no one else can.
fn content_key(dedup: &DedupKey, bytes: &[u8]) -> ContentKey {
    let mut h = blake3::Hasher::new_keyed(dedup);
    h.update(b"coopcache unified key v1\0");
    h.update(bytes);
    *h.finalize().as_bytes()
}

/// The id a block sealed under `key` is parked under.
fn content_id(dedup: &DedupKey, key: &ContentKey) -> BlockId {
    let mut h = blake3::Hasher::new_keyed(dedup);
    h.update(b"coopcache unified id v1\0");
    h.update(key);
    BlockId::from_hash(h.finalize().as_bytes())
}

/// The associated data of a unified block: a label only (it belongs to
/// no one place).
const UNIFIED_AD: &[u8] = b"coopcache-u1";

/// A unified block's fixed nonce: each content key seals one plaintext.
fn unified_nonce() -> XNonce {
    XNonce::default()
}

fn seal_unified(dedup: &DedupKey, data: &Block) -> Option<Sealed<BlockId, Block>> {
    let key = content_key(dedup, &data.bytes);
    let cipher = XChaCha20Poly1305::new(&key.into());
    let mut sealed = Vec::with_capacity(data.bytes.len() + TAG);
    sealed.extend_from_slice(&data.bytes);
    let tag = cipher
        .encrypt_in_place_detached(&unified_nonce(), UNIFIED_AD, &mut sealed)
        .ok()?;
    sealed.extend_from_slice(&tag);
    Some(Sealed {
        id: content_id(dedup, &key),
        data: Block::new(Bytes::from(sealed)),
        key: Some(key),
    })
}

fn open_unified(key: &ContentKey, sealed: &Block) -> Option<Block> {
    let bytes = &sealed.bytes;
    let split = bytes.len().checked_sub(TAG)?;
    let (ciphertext, tag) = bytes.split_at(split);
    let mut plain = ciphertext.to_vec();
    XChaCha20Poly1305::new(&(*key).into())
        .decrypt_in_place_detached(
            &unified_nonce(),
            UNIFIED_AD,
            &mut plain,
            Tag::from_slice(tag),
        )
        .ok()?;
    Some(Block::new(Bytes::from(plain)))
}

/// 32 random bytes from the operating system (a private node's file id
/// salt, `block::private_file_id`).
pub fn random_salt() -> [u8; 32] {
    XChaCha20Poly1305::generate_key(&mut OsRng).into()
}

/// What binds a sealed block to its place: file id (path and version),
/// index, byte offset and block size, after a label.
fn associated_data(block: BlockId, block_size: u32) -> [u8; 40] {
    let mut ad = [0u8; 40];
    ad[..12].copy_from_slice(b"coopcache-p1");
    ad[12..20].copy_from_slice(&block.file.to_le_bytes());
    ad[20..24].copy_from_slice(&block.index.to_le_bytes());
    let offset = u64::from(block.index) * u64::from(block_size);
    ad[24..32].copy_from_slice(&offset.to_le_bytes());
    ad[32..36].copy_from_slice(&block_size.to_le_bytes());
    ad
}

impl Sealer<BlockId, Block> for BlockSealer {
    fn seal(&mut self, block: BlockId, data: &Block) -> Option<Sealed<BlockId, Block>> {
        if let Some(dedup) = &self.dedup
            && block.file & UNIFIABLE != 0
        {
            return seal_unified(dedup, data);
        }
        Some(Sealed {
            id: block,
            data: self.seal_own(block, data)?,
            key: None,
        })
    }

    fn seal_own(&mut self, block: BlockId, data: &Block) -> Option<Block> {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let mut sealed = Vec::with_capacity(NONCE + data.bytes.len() + TAG);
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&data.bytes);
        let ad = associated_data(block, self.block_size);
        let tag = self
            .cipher
            .encrypt_in_place_detached(&nonce, &ad, &mut sealed[NONCE..])
            .ok()?;
        sealed.extend_from_slice(&tag);
        Some(Block::new(Bytes::from(sealed)))
    }

    fn open(&mut self, block: BlockId, key: Option<&ContentKey>, sealed: &Block) -> Option<Block> {
        if let Some(key) = key {
            return open_unified(key, sealed);
        }
        let bytes = &sealed.bytes;
        if bytes.len() < NONCE + TAG {
            return None;
        }
        let (nonce, rest) = bytes.split_at(NONCE);
        let (ciphertext, tag) = rest.split_at(rest.len() - TAG);
        let mut plain = ciphertext.to_vec();
        let ad = associated_data(block, self.block_size);
        self.cipher
            .decrypt_in_place_detached(
                XNonce::from_slice(nonce),
                &ad,
                &mut plain,
                Tag::from_slice(tag),
            )
            .ok()?;
        Some(Block::new(Bytes::from(plain)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BS: u32 = 4096;

    fn block(file: u64, index: u32) -> BlockId {
        BlockId::new(file, index)
    }

    fn plain(n: u8) -> Block {
        Block::new(Bytes::from(vec![n; BS as usize]))
    }

    fn altered(sealed: &Block, f: impl FnOnce(&mut Vec<u8>)) -> Block {
        let mut bytes = sealed.bytes.to_vec();
        f(&mut bytes);
        Block::new(Bytes::from(bytes))
    }

    #[test]
    fn a_sealed_block_opens_to_its_bytes_and_shows_none_of_them() {
        let mut s = BlockSealer::new(BS);
        let b = block(7, 3);
        let data = Block::new(Bytes::from(
            (0..BS).map(|i| (i % 251) as u8).collect::<Vec<_>>(),
        ));
        let sealed = s.seal(b, &data).unwrap().data;
        assert_eq!(
            sealed.bytes.len(),
            data.bytes.len() + SEAL_OVERHEAD as usize
        );
        // No 16-byte run of the plaintext appears in the sealed bytes.
        for run in data.bytes.chunks(16) {
            assert!(!sealed.bytes.windows(16).any(|w| w == run));
        }
        assert_eq!(s.open(b, None, &sealed), Some(data.clone()));
        // Random nonces: sealing twice gives different bytes.
        assert_ne!(s.seal(b, &data).unwrap().data.bytes, sealed.bytes);
    }

    /// Each way a host can alter what it returns, without the owner's
    /// hash table: the AEAD alone rejects it.
    #[test]
    fn every_alteration_fails_to_open() {
        let mut s = BlockSealer::new(BS);
        let b = block(7, 3);
        let sealed = s.seal(b, &plain(1)).unwrap().data;
        let flipped = altered(&sealed, |v| v[100] ^= 0x01);
        let flipped_tag = altered(&sealed, |v| *v.last_mut().unwrap() ^= 0x80);
        let flipped_nonce = altered(&sealed, |v| v[0] ^= 0x01);
        let truncated = altered(&sealed, |v| v.truncate(v.len() - 1));
        let short = altered(&sealed, |v| v.truncate(NONCE + TAG - 1));
        let forged = Block::new(Bytes::from(vec![0xab; sealed.bytes.len()]));
        for (what, bad) in [
            ("flipped", flipped),
            ("flipped tag", flipped_tag),
            ("flipped nonce", flipped_nonce),
            ("truncated", truncated),
            ("too short", short),
            ("forged", forged),
        ] {
            assert_eq!(s.open(b, None, &bad), None, "{what} opened");
        }
        // Another sealer's (another owner's, or this node before a
        // restart) block under the same id.
        let other = BlockSealer::new(BS).seal(b, &plain(1)).unwrap().data;
        assert_eq!(s.open(b, None, &other), None, "another key's block opened");
    }

    #[test]
    fn a_block_sealed_for_another_place_fails_to_open() {
        let mut s = BlockSealer::new(BS);
        let b = block(7, 3);
        // Swapped: another block of the same file, or of another file.
        let swapped = s.seal(block(7, 4), &plain(1)).unwrap().data;
        assert_eq!(s.open(b, None, &swapped), None, "another index opened");
        let other_file = s.seal(block(8, 3), &plain(1)).unwrap().data;
        assert_eq!(s.open(b, None, &other_file), None, "another file opened");
        // Replayed: the same block of an older version of the file (its
        // file id differs: the version is part of it).
        let old_version = crate::block::private_file_id(&[1; 32], "f", "v1", false);
        let new_version = crate::block::private_file_id(&[1; 32], "f", "v2", false);
        let replayed = s.seal(block(old_version, 3), &plain(1)).unwrap().data;
        assert_eq!(s.open(block(new_version, 3), None, &replayed), None);
        // Sealed with another block size: another offset.
        let mut wide = BlockSealer {
            cipher: s.cipher.clone(),
            block_size: BS * 2,
            dedup: None,
        };
        let shifted = wide.seal(b, &plain(1)).unwrap().data;
        assert_eq!(s.open(b, None, &shifted), None, "another offset opened");
        assert!(wide.open(b, None, &shifted).is_some());
    }

    /// Unified blocks: identical bytes seal alike under one dedup key and
    /// share nothing under another; only the noted content key opens
    /// one, and a privacy-critical file's blocks are sealed as without
    /// unification.
    #[test]
    fn unified_blocks_need_the_dedup_key() {
        let data = Block::new(Bytes::from(
            (0..BS).map(|i| (i % 251) as u8).collect::<Vec<_>>(),
        ));
        let (mut a, mut b) = (
            BlockSealer::unifying(BS, [1; 32]),
            BlockSealer::unifying(BS, [1; 32]),
        );
        let shared = 5 | UNIFIABLE;
        let sa = a.seal(block(shared, 0), &data).unwrap();
        let sb = b.seal(block(shared ^ 2, 9), &data).unwrap();
        assert_eq!(sa, sb, "two owners, one content: one id, one ciphertext");
        assert_eq!(sa.data.bytes.len(), data.bytes.len() + TAG);
        for run in data.bytes.chunks(16) {
            assert!(!sa.data.bytes.windows(16).any(|w| w == run));
        }
        let key = sa.key.unwrap();
        assert_eq!(
            b.open(block(shared ^ 2, 9), Some(&key), &sa.data),
            Some(data.clone())
        );
        // Another dedup key: another id, other bytes, and its key opens
        // nothing sealed under this one.
        let mut c = BlockSealer::unifying(BS, [2; 32]);
        let sc = c.seal(block(shared, 0), &data).unwrap();
        assert_ne!(sc.id, sa.id);
        assert_ne!(sc.data.bytes, sa.data.bytes);
        assert_eq!(a.open(block(shared, 0), sc.key.as_ref(), &sa.data), None);
        // Altered: refused.
        let flipped = altered(&sa.data, |v| v[7] ^= 0x01);
        assert_eq!(a.open(block(shared, 0), Some(&key), &flipped), None);
        let short = altered(&sa.data, |v| v.truncate(TAG - 1));
        assert_eq!(a.open(block(shared, 0), Some(&key), &short), None);
        // Not unifiable (a critical file): the owner's key, a random nonce.
        let critical = a.seal(block(5, 0), &data).unwrap();
        assert!(critical.key.is_none());
        assert_eq!(critical.id, block(5, 0));
        assert_ne!(
            critical.data.bytes,
            b.seal(block(5, 0), &data).unwrap().data.bytes
        );
    }
}
