//! The simulator's sealer ([`Sealer`] over digests): what the daemon's
//! AEAD does to bytes, done to the digest that stands for them.

use super::private::{ContentKey, HostId, SEAL_OVERHEAD, Sealed, Sealer, UNIFIED_OVERHEAD};
use super::{Digest, ProtocolKey};
use std::hash::{BuildHasher, Hash};

/// The simulator's sealer: contents are digests, so sealing XORs the
/// digest with a pad drawn from a key (a host sees no digest of the
/// owner's bytes, and a sealed form opens to garbage under any other id
/// or key) and adds an AEAD's bytes. It authenticates nothing itself: the
/// owner's hash table rejects what a host altered, as it does behind the
/// daemon's AEAD.
///
/// A block is parked under an id salted with the owner's key, as the
/// daemon's private file ids are; with a dedup key, a block of a file that
/// is not privacy-critical is unified instead: its content key is a keyed
/// hash of its contents and its id a keyed hash of that key, the same for
/// every owner with the dedup key.
#[derive(Clone, Debug)]
pub struct DigestSealer {
    key: u64,
    unify: Option<Unify>,
}

/// The cluster's dedup key, and which files are privacy-critical (by file
/// id), never unified.
type Unify = (u64, fn(u64) -> bool);

impl DigestSealer {
    /// A sealer under `key`, unifying nothing.
    pub fn new(key: u64) -> Self {
        DigestSealer { key, unify: None }
    }

    /// A sealer under `key` that unifies the blocks of every file but the
    /// `critical` ones under the dedup key `dedup`.
    pub fn unifying(key: u64, dedup: u64, critical: fn(u64) -> bool) -> Self {
        DigestSealer {
            key,
            unify: Some((dedup, critical)),
        }
    }
}

/// 32 bytes drawn from `seed` and `what`.
fn expand<T: Hash>(seed: u64, what: T) -> [u8; 32] {
    let mut state = foldhash::fast::FixedState::with_seed(seed).hash_one(what);
    let mut out = [0u8; 32];
    for chunk in out.chunks_mut(8) {
        chunk.copy_from_slice(&crate::policy::splitmix64(&mut state).to_le_bytes());
    }
    out
}

fn xor(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    std::array::from_fn(|i| a[i] ^ b[i])
}

impl<K: ProtocolKey + HostId + Send> Sealer<K, Digest> for DigestSealer {
    fn seal(&mut self, block: K, data: &Digest) -> Option<Sealed<K, Digest>> {
        if let Some((dedup, critical)) = self.unify
            && !critical(block.file())
        {
            let key: ContentKey = expand(dedup, data);
            return Some(Sealed {
                id: K::from_hash(&expand(dedup, key)),
                data: Digest {
                    hash: xor(&data.hash, &expand(0, key)),
                    len: data.len.checked_add(UNIFIED_OVERHEAD)?,
                },
                key: Some(key),
            });
        }
        Some(Sealed {
            id: K::from_hash(&expand(self.key, ("id", block))),
            data: self.seal_own(block, data)?,
            key: None,
        })
    }

    fn seal_own(&mut self, block: K, data: &Digest) -> Option<Digest> {
        Some(Digest {
            hash: xor(&data.hash, &expand(self.key, block)),
            len: data.len.checked_add(SEAL_OVERHEAD)?,
        })
    }

    fn open(&mut self, block: K, key: Option<&ContentKey>, sealed: &Digest) -> Option<Digest> {
        let (pad, overhead) = match key {
            Some(key) => (expand(0, key), UNIFIED_OVERHEAD),
            None => (expand(self.key, block), SEAL_OVERHEAD),
        };
        Some(Digest {
            hash: xor(&sealed.hash, &pad),
            len: sealed.len.checked_sub(overhead)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(n: u8) -> Digest {
        Digest {
            hash: [n; 32],
            len: 100,
        }
    }

    #[test]
    fn the_digest_sealer_hides_the_digest_and_binds_the_block() {
        let mut s = DigestSealer::new(7);
        let d = digest(3);
        let sealed: Sealed<u64, _> = s.seal(1, &d).unwrap();
        assert_ne!(sealed.hash(), d.hash);
        assert_ne!(sealed.id, 1, "the host sees a salted id");
        assert_eq!(sealed.data.len, 140);
        assert_eq!(s.open(1, None, &sealed.data), Some(d));
        let swapped = s.open(2, None, &sealed.data).unwrap();
        assert_ne!(swapped, d, "another block's sealed form opens to garbage");
        let short = Digest {
            hash: d.hash,
            len: 3,
        };
        assert_eq!(Sealer::<u64, _>::open(&mut s, 1, None, &short), None);
    }

    #[test]
    fn identical_blocks_unify_across_owners_unless_critical() {
        let critical = |file: u64| file >= 100;
        let mut a = DigestSealer::unifying(1, 9, critical);
        let mut b = DigestSealer::unifying(2, 9, critical);
        let (sa, sb): (Sealed<u64, _>, Sealed<u64, _>) = (
            a.seal(5, &digest(3)).unwrap(),
            b.seal(6, &digest(3)).unwrap(),
        );
        assert_eq!(sa, sb, "same contents: same id, bytes and key");
        assert_ne!(sa.hash(), digest(3).hash);
        assert_eq!(b.open(6, sa.key.as_ref(), &sa.data), Some(digest(3)));
        let other = a.seal(5, &digest(4)).unwrap();
        assert_ne!(other.id, sa.id, "other contents: another id");
        // Another dedup key: nothing in common.
        let mut c = DigestSealer::unifying(1, 10, critical);
        assert_ne!(c.seal(5, &digest(3)).unwrap().id, sa.id);
        // A privacy-critical file's blocks are sealed under the owner's key.
        let (ca, cb): (Sealed<u64, _>, Sealed<u64, _>) = (
            a.seal(100, &digest(3)).unwrap(),
            b.seal(100, &digest(3)).unwrap(),
        );
        assert!(ca.key.is_none() && cb.key.is_none());
        assert_ne!(ca.id, cb.id);
        assert_ne!(ca.data, cb.data);
    }

    impl<K> Sealed<K, Digest> {
        fn hash(&self) -> [u8; 32] {
            self.data.hash
        }
    }
}
