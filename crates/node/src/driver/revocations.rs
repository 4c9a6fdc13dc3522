//! Revocation lists arriving from a peer or from this node's CA directory:
//! verified against the cluster CA here, taken if the core's membership
//! finds them newer (`Membership::handle_revocation`, which also decides
//! whom to pass them to), kept, and put in force for every link
//! (`crate::revocation`).

use super::*;
use crate::revocation::{self, Revocations};

impl Driver {
    /// A revocation list, from member `from` or (`None`) from this node's
    /// own CA directory.
    pub(super) fn on_revoked(&mut self, from: Option<NodeId>, der: Bytes) {
        let r = match Revocations::verified(&der, &self.ctx.identity.ca) {
            Ok(r) => r,
            Err(e) => {
                if from.is_some() {
                    self.metrics.peer_errors.inc();
                }
                tracing::warn!(peer = ?from, error = %e, "revocation list refused");
                return;
            }
        };
        // Whether it is newer, and whom to pass it to, is the core's call.
        if !self.members.handle_revocation(r.number, from) {
            return; // known already, or older
        }
        tracing::warn!(
            number = r.number,
            certificates = r.len(),
            peer = ?from,
            "revocation list in force: links of the certificates it names are closed and refused"
        );
        if let Err(e) = revocation::store(&self.ctx.identity.dir, &r) {
            tracing::warn!(error = %e, "revocation list not kept (a restart would forget it until a peer sends it again)");
        }
        self.ctx.revoked.send_replace(Arc::new(r));
        self.apply_members();
    }

    /// Passes member `to` the revocation list in force.
    pub(super) fn pass_revocation(&mut self, to: NodeId) {
        let der = self.ctx.revoked.borrow().der.clone();
        self.send(to, Wire::Revoked(der));
    }
}
