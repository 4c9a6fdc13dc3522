//! The valid-copy set (C2Cfs's `CVMap`): the nodes holding a file's latest
//! committed version.

use crate::coop::NodeId;

/// Most nodes a [`ValidCopies`] names. A reader that would be one more is
/// not recorded: fewer valid copies only send later readers to the others
/// or to the origin, never to a stale copy. Eight peers give a parallel
/// reader more sources than one link can use.
pub const MAX_VALID: usize = 8;

/// The nodes holding a file's latest version, at most [`MAX_VALID`], in
/// the order they joined. Fixed-size, so an open's answer is copied, never
/// allocated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ValidCopies {
    nodes: [NodeId; MAX_VALID],
    len: u8,
}

impl ValidCopies {
    /// The set of one node (a writer whose close met no other close).
    pub fn only(node: NodeId) -> ValidCopies {
        let mut v = ValidCopies::default();
        v.insert(node);
        v
    }

    /// The nodes, in the order they joined.
    pub fn as_slice(&self) -> &[NodeId] {
        &self.nodes[..usize::from(self.len)]
    }

    /// How many nodes.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether no node holds the latest version.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `node` holds the latest version.
    pub fn contains(&self, node: NodeId) -> bool {
        self.as_slice().contains(&node)
    }

    /// Adds `node`; false if the set is full (it is then not recorded) or
    /// already had it.
    pub fn insert(&mut self, node: NodeId) -> bool {
        if self.contains(node) || self.len() == MAX_VALID {
            return false;
        }
        self.nodes[self.len()] = node;
        self.len += 1;
        true
    }

    /// Removes `node`; false if it was not there.
    pub fn remove(&mut self, node: NodeId) -> bool {
        let Some(at) = self.as_slice().iter().position(|&n| n == node) else {
            return false;
        };
        let len = self.len();
        self.nodes.copy_within(at + 1..len, at);
        self.len -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_at_most_max_valid_nodes_in_joining_order() {
        let mut v = ValidCopies::default();
        for n in 0..20 {
            v.insert(n);
        }
        assert_eq!(v.len(), MAX_VALID);
        assert_eq!(v.as_slice(), &[0, 1, 2, 3, 4, 5, 6, 7]);
        assert!(!v.insert(3), "already there");
        assert!(v.remove(2));
        assert!(!v.remove(2));
        assert_eq!(v.as_slice(), &[0, 1, 3, 4, 5, 6, 7]);
        assert!(v.insert(19));
        assert_eq!(ValidCopies::only(5).as_slice(), &[5]);
    }
}
