//! Revocation lists arriving from a peer or from this node's CA directory:
//! taken if the cluster CA signed them and they are newer, kept, passed on
//! to every member, and put in force for every link (`crate::revocation`).

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
        if r.number <= self.ctx.revoked.borrow().number {
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
        let frame = Wire::Revoked(r.der.clone());
        self.ctx.revoked.send_replace(Arc::new(r));
        let ids: Vec<NodeId> = self.members.view().linked().collect();
        for id in ids {
            self.send(id, frame.clone());
        }
    }

    /// Tells a member just linked the revocation list in force, if any.
    pub(super) fn send_revocations(&mut self, to: NodeId) {
        let der = {
            let r = self.ctx.revoked.borrow();
            (r.number > 0).then(|| r.der.clone())
        };
        if let Some(der) = der {
            self.send(to, Wire::Revoked(der));
        }
    }
}
