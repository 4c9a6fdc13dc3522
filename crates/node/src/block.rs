//! How the daemon names blocks (the core's [`BlockId`], with a file id
//! from the path and the origin's version) and carries their bytes.

use bytes::Bytes;
use coopcache_core::c2cfs::exclusive::path_key;
pub use coopcache_core::protocol::{BlockId, manager_of};
use coopcache_core::protocol::{Content, Digest, route_of};

/// The id of version `version` of the file at `path` (64 bits of a BLAKE3
/// hash: with a million live file versions, the chance of any collision is
/// below 10^-7).
pub fn file_id(path: &str, version: &str) -> u64 {
    id_of(blake3::Hasher::new(), b"coopcache file v1\0", path, version)
}

/// Block 0 of version `version` of the file at `path` in a shared origin
/// (its others are `BlockId { index, ..first }`), routed by the path: every
/// version of a file has the same manager, which in C2Cfs `exclusive` mode
/// keeps its commit state too (`coopcache_core::c2cfs::exclusive`).
pub fn first_block(path: &str, version: &str) -> BlockId {
    BlockId {
        file: file_id(path, version),
        index: 0,
        route: route_of(path_key(path)),
    }
}

/// The id of version `version` of the file at `path` in a private origin:
/// keyed by `salt`, a secret drawn when the node starts, so the block ids
/// it parks on peers tell them nothing (no one without the salt can tell
/// which file, or which version, a parked block belongs to), and never
/// meet the ids of a shared origin's files. Its top bit ([`UNIFIABLE`])
/// says whether the file's blocks may be unified (`unifiable`: the node
/// unifies, and the file is not privacy-critical).
pub fn private_file_id(salt: &[u8; 32], path: &str, version: &str, unifiable: bool) -> u64 {
    let label = b"coopcache private file v1\0";
    let id = id_of(blake3::Hasher::new_keyed(salt), label, path, version);
    match unifiable {
        true => id | UNIFIABLE,
        false => id & !UNIFIABLE,
    }
}

/// The bit of a private file id set when its blocks may be unified
/// (`seal.rs`): the sealer reads it from the block it seals.
pub const UNIFIABLE: u64 = 1 << 63;

/// The first 64 bits of `hasher`'s hash of `label`, `path`, a separator and
/// `version`.
fn id_of(mut hasher: blake3::Hasher, label: &[u8], path: &str, version: &str) -> u64 {
    hasher.update(label);
    hasher.update(path.as_bytes());
    hasher.update(b"\0");
    hasher.update(version.as_bytes());
    let mut id = [0u8; 8];
    id.copy_from_slice(&hasher.finalize().as_bytes()[..8]);
    u64::from_le_bytes(id)
}

/// A block's bytes with their BLAKE3 digest, computed where the bytes
/// arrived (the origin read's task, the link's reader task), so the
/// protocol compares digests without hashing on its own task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// The bytes.
    pub bytes: Bytes,
    digest: Digest,
}

impl Block {
    /// `bytes`, hashed.
    pub fn new(bytes: Bytes) -> Block {
        let digest = Digest {
            hash: *blake3::hash(&bytes).as_bytes(),
            len: bytes.len() as u32,
        };
        Block { bytes, digest }
    }
}

impl Content for Block {
    fn digest(&self) -> Digest {
        self.digest
    }

    fn size(&self) -> usize {
        self.bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_version_is_a_new_file() {
        assert_ne!(file_id("a/b", "v1"), file_id("a/b", "v2"));
        assert_ne!(file_id("a/b", "v1"), file_id("a/c", "v1"));
        assert_eq!(file_id("a/b", "v1"), file_id("a/b", "v1"));
        // The separator keeps ("ab", "c") apart from ("a", "bc").
        assert_ne!(file_id("ab", "c"), file_id("a", "bc"));
    }

    #[test]
    fn every_version_of_a_file_has_one_route_that_of_its_commit_manager() {
        let (a, b) = (first_block("d/f", "v1"), first_block("d/f", "v2"));
        assert_ne!(a.file, b.file);
        assert_eq!((a.route, a.index), (b.route, 0));
        let key = coopcache_core::c2cfs::exclusive::manager_key("d/f");
        assert_eq!(u64::from(a.route), key);
        assert_ne!(first_block("d/g", "v1").route, a.route);
    }

    #[test]
    fn a_private_file_id_depends_on_the_salt() {
        let (a, b) = ([1; 32], [2; 32]);
        assert_ne!(
            private_file_id(&a, "f", "v", false),
            private_file_id(&b, "f", "v", false)
        );
        assert_ne!(private_file_id(&a, "f", "v", false), file_id("f", "v"));
        assert_ne!(
            private_file_id(&a, "f", "v1", false),
            private_file_id(&a, "f", "v2", false)
        );
        assert_eq!(
            private_file_id(&a, "f", "v", false),
            private_file_id(&a, "f", "v", false)
        );
    }

    #[test]
    fn a_block_digest_is_its_bytes_blake3_and_length() {
        let b = Block::new(Bytes::from_static(b"abc"));
        assert_eq!(b.digest().len, 3);
        assert_eq!(&b.digest().hash, blake3::hash(b"abc").as_bytes());
        assert_ne!(b.digest(), Block::new(Bytes::from_static(b"abd")).digest());
    }
}
