//! What an operator reads when a peer's contents fail their check: who
//! sent them, who recorded the digest they failed, and which of the two
//! the origin's copy convicts (the core decides; this only says it).

use super::Driver;
use crate::block::BlockId;
use coopcache_core::coop::NodeId;
use coopcache_core::protocol::Verdict;

impl Driver {
    /// A member's name for a log line (`?` once it is gone).
    pub(super) fn member_name(&self, id: NodeId) -> &str {
        self.peer(id).map_or("?", |m| m.name.as_str())
    }

    /// Logs an integrity failure, naming both sides of it.
    pub(super) fn report_integrity(
        &self,
        block: BlockId,
        message: &'static str,
        [sender, manager, recorder]: [NodeId; 3],
        verdict: Verdict,
        count: u64,
    ) {
        let (s, m, r) = (
            self.member_name(sender),
            self.member_name(manager),
            self.member_name(recorder),
        );
        let why = match verdict {
            Verdict::Sender => {
                format!("the origin's copy matches the digest: {s} sent bad contents")
            }
            Verdict::Record => format!(
                "the origin's copy matches the contents: the digest is bad (recorded by {r}, as {m}, the block's manager, says; one of the two lied)"
            ),
            Verdict::Unsettled => format!(
                "not settled by the origin: either {s} sent bad contents or the digest is bad (recorded by {r}, as {m}, the block's manager, says)"
            ),
        };
        tracing::warn!(
            sender = %s,
            recorder = %r,
            manager = %m,
            file = block.file,
            index = block.index,
            message,
            count,
            "integrity failure: {message} from {s} did not match the digest {r} recorded; {why}"
        );
    }
}
