//! The opener's side of C2Cfs: where an open's bytes come from.

use super::{Opened, Tcommit};
use crate::coop::NodeId;

/// Where an open reads the file from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Its own copy: its `Tlocal` equals `Tcommit`.
    Local,
    /// A peer holding the latest version.
    Peer(NodeId),
    /// The origin (no valid copy, or the origin changed outside the
    /// cluster): always safe.
    Origin,
}

impl<V: Eq> Opened<V> {
    /// Where node `me`, whose copy (if any) holds `tlocal`, reads the file
    /// from. `origin` is the origin's own version in `shared` mode (writers
    /// outside the cluster may exist), `None` in `exclusive` mode. Among
    /// several valid peers, `spread` picks one (`spread % n`), so readers
    /// that pass different values share the load.
    pub fn source(
        &self,
        me: NodeId,
        tlocal: Option<Tcommit>,
        origin: Option<&V>,
        spread: usize,
    ) -> Source {
        if let Some(theirs) = origin
            && self.version.as_ref() != Some(theirs)
        {
            return Source::Origin;
        }
        if tlocal == Some(self.tcommit) {
            return Source::Local;
        }
        let peers = self.peers(me);
        let n = peers.clone().count();
        match peers.clone().nth(spread.checked_rem(n).unwrap_or(0)) {
            Some(peer) => Source::Peer(peer),
            None => Source::Origin,
        }
    }

    /// The valid copies other than `me`'s: the holders a parallel reader
    /// takes segments from.
    pub fn peers(&self, me: NodeId) -> impl Iterator<Item = NodeId> + Clone + '_ {
        self.valid
            .as_slice()
            .iter()
            .copied()
            .filter(move |&n| n != me)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{CommitTable, ValidCopies};
    use super::*;

    #[test]
    fn local_then_peer_then_origin() {
        let mut t = CommitTable::<u64, u32>::new(1, 8).unwrap();
        let o = t.open(1);
        assert_eq!(
            o.source(1, None, None, 0),
            Source::Origin,
            "nobody holds it"
        );
        let w = t.commit(1, 1, o.tcommit, 10);
        let o = t.open(1);
        assert_eq!(o.source(1, Some(w.tcommit), None, 0), Source::Local);
        assert_eq!(o.source(2, None, None, 0), Source::Peer(1));
        // A stale copy of its own does not count.
        assert_eq!(
            o.source(2, Some(o.tcommit.clone_older()), None, 0),
            Source::Peer(1)
        );
        assert_eq!(
            o.source(1, Some(o.tcommit.clone_older()), None, 0),
            Source::Origin
        );
    }

    #[test]
    fn shared_mode_reads_the_origin_when_its_version_moved() {
        let o = Opened {
            tcommit: Tcommit {
                epoch: 1,
                serial: 4,
            },
            version: Some(10u32),
            valid: ValidCopies::only(1),
        };
        assert_eq!(o.source(2, None, Some(&10), 0), Source::Peer(1));
        assert_eq!(o.source(2, None, Some(&11), 0), Source::Origin);
        assert_eq!(o.source(1, Some(o.tcommit), Some(&11), 0), Source::Origin);
        let unknown = Opened { version: None, ..o };
        assert_eq!(unknown.source(2, None, Some(&10), 0), Source::Origin);
        assert_eq!(unknown.source(2, None, None, 0), Source::Peer(1));
    }

    #[test]
    fn spread_shares_readers_among_valid_peers() {
        let mut valid = ValidCopies::only(1);
        valid.insert(2);
        valid.insert(3);
        let o = Opened {
            tcommit: Tcommit {
                epoch: 1,
                serial: 4,
            },
            version: Some(10u32),
            valid,
        };
        let picked: Vec<_> = (0..4).map(|s| o.source(2, None, None, s)).collect();
        assert_eq!(
            picked,
            [
                Source::Peer(1),
                Source::Peer(3),
                Source::Peer(1),
                Source::Peer(3)
            ]
        );
    }

    impl Tcommit {
        fn clone_older(self) -> Tcommit {
            Tcommit {
                serial: self.serial - 1,
                ..self
            }
        }
    }
}
