//! Integrity failures: contents that did not match the digest their
//! block's manager recorded, and whom to blame.
//!
//! A mismatch alone does not say who lied. The contents came over the
//! sender's link, but the digest came from a record another node made (as
//! the manager says, and the manager may lie too). Blaming the sender, as
//! this node once did, named an honest holder whenever the record was the
//! bad one. So a reader keeps the dispute until its fall-back origin read
//! settles it: origin bytes that match the record convict the sender;
//! origin bytes that match the sender's contents convict the record (its
//! recorder or the manager that gave it). Held blocks are not read from
//! the origin: their report names both, unsettled.

use super::node::{Action, NodeProtocol};
use super::{Content, Digest, ProtocolKey, Recorded};
use crate::coop::{NodeId, SizeClassed};

/// Whom a failed check blames, once the origin's copy is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The origin's bytes match the record: the sender's contents were bad.
    Sender,
    /// The origin's bytes match the sender's contents: the record was bad
    /// (its recorder lied, or the manager that attributed it).
    Record,
    /// Not settled: no origin read (a held block), a failed one, or origin
    /// bytes that match neither.
    Unsettled,
}

impl Verdict {
    /// The node the verdict blames most directly: the sender, or the
    /// recorder of a bad record; the sender while unsettled.
    pub fn blamed(self, sender: NodeId, recorder: NodeId) -> NodeId {
        match self {
            Verdict::Record => recorder,
            Verdict::Sender | Verdict::Unsettled => sender,
        }
    }
}

/// The digest a read expects, with the manager that gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Expected {
    pub(super) recorded: Recorded,
    pub(super) manager: NodeId,
}

/// A failed check, waiting for the origin's copy to settle it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Dispute {
    /// The message that brought the contents.
    pub(super) message: &'static str,
    /// Their sender, as its link authenticated it.
    pub(super) sender: NodeId,
    /// What they hash to.
    pub(super) got: Digest,
    /// The digest they had to match, and who gave it.
    pub(super) expected: Expected,
}

impl Dispute {
    /// Whom the origin's digest of the block (`None` if it could not be
    /// read) blames.
    pub(super) fn settle(&self, origin: Option<Digest>) -> Verdict {
        match origin {
            Some(d) if d == self.expected.recorded.digest => Verdict::Sender,
            Some(d) if d == self.got => Verdict::Record,
            _ => Verdict::Unsettled,
        }
    }
}

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// Counts a failed check (at once, whenever it is settled).
    pub(super) fn integrity_failure(&mut self) {
        self.stats.integrity_failures += 1;
    }

    /// Reports `dispute` with its verdict, at most once a minute per
    /// blamed node (with how many there were since the last report).
    pub(super) fn report_integrity(
        &mut self,
        block: K,
        dispute: Dispute,
        verdict: Verdict,
        now: u64,
    ) {
        let recorder = dispute.expected.recorded.by;
        let blamed = verdict.blamed(dispute.sender, recorder);
        let Some(count) = self.report_due(blamed, now) else {
            return;
        };
        self.actions.push_back(Action::IntegrityFailure {
            block,
            message: dispute.message,
            sender: dispute.sender,
            manager: dispute.expected.manager,
            recorder,
            verdict,
            count,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(n: u8) -> Digest {
        Digest {
            hash: [n; 32],
            len: 7,
        }
    }

    #[test]
    fn the_origin_copy_blames_whichever_side_it_contradicts() {
        let dispute = Dispute {
            message: "Data",
            sender: 1,
            got: digest(1),
            expected: Expected {
                recorded: Recorded {
                    digest: digest(2),
                    by: 2,
                },
                manager: 3,
            },
        };
        assert_eq!(dispute.settle(Some(digest(2))), Verdict::Sender);
        assert_eq!(dispute.settle(Some(digest(1))), Verdict::Record);
        assert_eq!(dispute.settle(Some(digest(9))), Verdict::Unsettled);
        assert_eq!(dispute.settle(None), Verdict::Unsettled);
        assert_eq!(Verdict::Sender.blamed(1, 2), 1);
        assert_eq!(Verdict::Record.blamed(1, 2), 2);
        assert_eq!(Verdict::Unsettled.blamed(1, 2), 1);
    }
}
