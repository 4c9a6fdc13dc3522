//! How the live protocol names blocks, and which member manages each file.

use crate::coop::{NodeId, SizeClassed};
use crate::policy::BlockKey;

/// A block key the live protocol can route: the file it belongs to decides
/// its manager, so every block of one file has the same one.
pub trait ProtocolKey: BlockKey + Ord {
    /// The file (version) the block belongs to.
    fn file(&self) -> u64;

    /// What the block's manager is chosen by ([`manager_of`]): the same for
    /// every block of every version of one file, so that one member keeps
    /// a file's C2Cfs commit state and the directory of its blocks, and an
    /// open is answered and served in one round trip.
    fn route(&self) -> u64;
}

/// A block of one version of one file: the key of every cache and message
/// in a live cluster.
///
/// `file` names the file *and* its origin version (the daemon hashes the
/// path with the origin's ETag, or mtime, size and inode), so a copy of an
/// old version can never be taken for the new one: after a change the
/// blocks simply have other names. `route` names the file alone (every
/// version), and chooses the manager: C2Cfs's manager keeps a file's
/// `Tcommit` and the nodes holding its latest version together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId {
    /// The file version's id.
    pub file: u64,
    /// The block's index in the file.
    pub index: u32,
    /// The file's manager key: [`route_of`] of its path's key for a shared
    /// origin's file, the top half of `file` for an id that names no path
    /// (a private origin's salted id, a content id).
    pub route: u32,
}

impl BlockId {
    /// Block `index` of the file version `file` routed by `file` itself:
    /// for ids that name no path (a private origin's, a content id).
    pub fn new(file: u64, index: u32) -> BlockId {
        BlockId {
            file,
            index,
            route: (file >> 32) as u32,
        }
    }
}

/// The manager key of a file whose path has the 64-bit key `path_key`
/// ([`path_key`](crate::c2cfs::exclusive::path_key)): its top half, so a block
/// id carries it in four bytes. Files sharing a route share a manager,
/// nothing more.
pub fn route_of(path_key: u64) -> u32 {
    (path_key >> 32) as u32
}

impl ProtocolKey for BlockId {
    #[inline]
    fn file(&self) -> u64 {
        self.file
    }

    #[inline]
    fn route(&self) -> u64 {
        u64::from(self.route)
    }
}

impl SizeClassed for BlockId {
    /// The live cluster applies no size-class policies: one class.
    fn size_class(&self) -> usize {
        0
    }
}

/// A trace's block ids, each its own file (the simulator's keys).
impl ProtocolKey for u64 {
    #[inline]
    fn file(&self) -> u64 {
        *self
    }

    #[inline]
    fn route(&self) -> u64 {
        *self
    }
}

/// The member that manages the file of manager key `file` (a block's
/// [`ProtocolKey::route`]: keeps its directory and block digests, and in
/// C2Cfs `exclusive` mode its commit state): the highest-random-weight (rendezvous) choice among
/// `members`, so when a member leaves only its own files move, and every
/// node agrees without a coordinator. `None` if there are no members.
pub fn manager_of(file: u64, members: &[NodeId]) -> Option<NodeId> {
    members
        .iter()
        .copied()
        .max_by_key(|&m| (weight(file, m), m))
}

/// A well-mixed 64-bit weight of (file, member): splitmix64 of their
/// combination. Not cryptographic: members are authenticated, and a member
/// can only choose which files it manages by choosing its id.
fn weight(file: u64, member: NodeId) -> u64 {
    let mut z = file ^ u64::from(member).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendezvous_moves_only_the_leavers_files() {
        let all = [3, 8, 11, 20];
        let without_8 = [3, 11, 20];
        let mut owned = [0usize; 4];
        for file in 0..4000u64 {
            let before = manager_of(file, &all).unwrap();
            let after = manager_of(file, &without_8).unwrap();
            if before != 8 {
                assert_eq!(before, after, "file {file} moved though its manager stayed");
            }
            owned[all.iter().position(|&m| m == before).unwrap()] += 1;
        }
        // Balanced within a generous margin (each expects 1000).
        assert!(owned.iter().all(|&n| (800..1200).contains(&n)), "{owned:?}");
        assert_eq!(manager_of(1, &[]), None);
    }
}
