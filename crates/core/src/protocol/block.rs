//! How the live protocol names blocks, and which member manages each file.

use crate::coop::{ClassPolicies, MAX_CLASSES, NodeId, SizeClassed};
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

    /// The same block named in size class `class` (for a key that carries
    /// its class, [`SizeClassed`]); a key that carries none is itself.
    fn in_class(self, class: usize) -> Self {
        let _ = class;
        self
    }
}

/// `block`, the block of a file version of `size` bytes, named in that
/// size's class under `classes`; with one class (no class policies) the
/// name is left as it is, so a cluster without policies names files as
/// every earlier release did. Every member names a file alike (the reader,
/// and a manager serving an open its first block) as long as all run the
/// same classes.
pub fn classed<K: ProtocolKey>(classes: &ClassPolicies, block: K, size: u64) -> K {
    match classes.classes().len() {
        1 => block,
        _ => block.in_class(classes.class_of_size(size)),
    }
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

    /// The class replaces three bits of the file id's hash (61 bits left:
    /// with a million live file versions, a collision's chance stays below
    /// 10^-6), never the route: a file's versions of any size share their
    /// manager.
    fn in_class(self, class: usize) -> Self {
        let class = (class.min(MAX_CLASSES - 1) as u64) << FILE_CLASS_SHIFT;
        BlockId {
            file: (self.file & !FILE_CLASS_MASK) | class,
            ..self
        }
    }
}

/// Bits of [`BlockId::file`] below its size class: the class sits in bits
/// 60-62, under a private file id's top bit (the node's `UNIFIABLE`).
const FILE_CLASS_SHIFT: u32 = 60;

/// The size class's bits in [`BlockId::file`].
const FILE_CLASS_MASK: u64 = (MAX_CLASSES as u64 - 1) << FILE_CLASS_SHIFT;

impl SizeClassed for BlockId {
    /// The class a file's id was named in ([`classed`]); without class
    /// policies those bits are the hash's, and every value is the one
    /// class's.
    #[inline]
    fn size_class(&self) -> usize {
        ((self.file & FILE_CLASS_MASK) >> FILE_CLASS_SHIFT) as usize
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

    #[test]
    fn a_file_is_named_in_its_size_class_only_under_class_policies() {
        use crate::coop::{ClassPolicy, SizeClass};
        let block = BlockId {
            file: u64::MAX,
            index: 7,
            route: 42,
        };
        // One class: every earlier release's name, whatever the size.
        assert_eq!(classed(&ClassPolicies::uniform(), block, 5), block);
        let webstone = ClassPolicies::webstone(ClassPolicy::default());
        for (size, class) in [(10, 0), (5_000, 1), (50_000, 2), (1 << 30, 3)] {
            let named = classed(&webstone, block, size);
            assert_eq!(named.size_class(), class, "{size} B");
            assert_eq!(
                (named.index, named.route),
                (7, 42),
                "only the file id changes"
            );
            // The top bit (a private id's unifiable mark) and the hash's
            // low 60 bits stay.
            assert_eq!(named.file | FILE_CLASS_MASK, u64::MAX);
        }
        let two = ClassPolicies::new(vec![
            SizeClass {
                name: "a".into(),
                below: Some(100),
                policy: ClassPolicy::default(),
            },
            SizeClass {
                name: "b".into(),
                below: None,
                policy: ClassPolicy::default(),
            },
        ])
        .unwrap();
        assert_ne!(classed(&two, block, 99), classed(&two, block, 100));
    }
}
