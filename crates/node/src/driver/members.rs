//! Membership: links dialled and lost, SWIM's verdicts, the live members
//! the protocol is told of, and the frames that are not the protocol's.

use super::*;
use crate::link::{link_channels, run_link};
use crate::membership::{Change, Effects, GossipError};
use coopcache_core::members::{LinkDown, LinkUp, NoDial};

impl Driver {
    /// What the driver keeps for linked member `id`.
    pub(super) fn peer(&self, id: NodeId) -> Option<&Member> {
        self.view.member(id).map(|m| &m.link)
    }

    pub(super) fn dial(&mut self, addr: String) {
        self.dial_as(addr, false);
    }

    /// Dials an address a peer named: tried a few times
    /// ([`HINT_ATTEMPTS`](coopcache_core::members::HINT_ATTEMPTS)), then
    /// forgotten unless it answered as a member.
    pub(super) fn dial_hint(&mut self, addr: String) {
        self.dial_as(addr, true);
    }

    fn dial_as(&mut self, addr: String, hinted: bool) {
        match self.view.may_dial(&addr) {
            Ok(()) => {}
            Err(NoDial::Needless) => return,
            Err(NoDial::Full) => {
                self.metrics.dropped_messages.inc();
                tracing::warn!(%addr, "not dialled: {MAX_LINKS} links already");
                return;
            }
        }
        let (tx, rx) = link_channels();
        self.view.dialled(addr.clone(), tx, hinted);
        tokio::spawn(run_link(addr, self.ctx.clone(), rx));
    }

    pub(super) fn link_up(&mut self, addr: String, id: NodeId, name: String, listen: String) {
        let member = |link: &LinkTx| Member {
            name: name.clone(),
            queue: link.frames.clone(),
            gossip: link.gossip.clone(),
        };
        match self.view.link_up(&addr, id, listen.clone(), member) {
            LinkUp::Unknown | LinkUp::Duplicate => return,
            LinkUp::Joined { was_down } => {
                tracing::info!(peer = %name, id, %listen, down = was_down, "member linked");
            }
        }
        self.membership_changed();
        let list = self.view.advertised();
        for frame in crate::frame::members_frames(&list, self.cfg.block_size) {
            self.send(id, frame);
        }
        self.send_revocations(id);
        // Bring SWIM in: the peer adds us and sends its member list.
        let effects = self.swim.announce(id, listen, crate::clock::now());
        self.swim_effects(effects);
    }

    pub(super) fn link_down(&mut self, addr: &str, id: Option<NodeId>) {
        match self.view.link_down(addr, id) {
            LinkDown::Nothing => {}
            LinkDown::Forgotten => {
                tracing::debug!(%addr, "address named by a peer never answered: forgotten");
            }
            LinkDown::Lost(m) => {
                tracing::warn!(peer = %m.link.name, id, "member down: link lost");
                self.membership_changed();
            }
        }
    }

    pub(super) fn membership_changed(&mut self) {
        let live = self.view.live();
        let now = self.clock.micros();
        self.node.set_members(&live, now);
        self.metrics.members.set(live.len() as i64);
        self.apply();
    }

    /// Fires SWIM's due timers (probes, suspicion, gossip).
    pub(super) fn swim_tick(&mut self) {
        if self.view.is_stopping() {
            return;
        }
        let effects = self.swim.tick(crate::clock::now());
        self.swim_effects(effects);
    }

    pub(super) fn on_gossip(&mut self, from: NodeId, data: &[u8]) {
        match self.swim.receive(from, data, crate::clock::now()) {
            Ok(effects) => self.swim_effects(effects),
            Err(e @ (GossipError::Spoofed { .. } | GossipError::Undecodable(_))) => {
                self.metrics.peer_errors.inc();
                tracing::warn!(peer = from, error = %e, "gossip frame refused");
            }
            // Routine after a rejoin: datagrams to our old incarnation.
            Err(e) => tracing::debug!(peer = from, error = %e, "gossip frame refused"),
        }
    }

    /// Carries out what SWIM asked for.
    pub(super) fn swim_effects(&mut self, effects: Effects) {
        if effects.dropped_timers > 0 {
            tracing::warn!(dropped = effects.dropped_timers, "swim timers dropped");
        }
        for (to, listen, data) in effects.send {
            if let Some(m) = self.peer(to) {
                if m.gossip.try_send(Wire::Gossip(data)).is_err() {
                    self.metrics.dropped_messages.inc();
                }
            } else if !self.view.has_left(to) {
                // No link yet: this datagram is lost (SWIM expects loss)
                // and the link will carry the next ones. (One that left
                // is not dialled: SWIM, not yet told, probes it until it
                // declares it down.)
                self.dial(listen);
            }
        }
        if effects.dropped_updates > 0 {
            self.metrics
                .gossip_screened
                .inc_by(effects.dropped_updates as u64);
        }
        for (node, listen) in effects.hints {
            if self.view.worth_hint(node) {
                self.dial_hint(listen);
            }
        }
        for change in effects.changes {
            match change {
                Change::Up { node, listen } => {
                    let (was_down, dial) = self.view.detected_up(node);
                    if was_down {
                        tracing::info!(id = node, "member up again (swim)");
                        self.membership_changed();
                    }
                    if dial {
                        self.dial(listen);
                    }
                }
                Change::Down { node } => self.declare_down(node, false),
            }
        }
    }

    /// SWIM declared `id` down (or, with `left`, it said it is stopping):
    /// treated as a lost link even if its TCP connection still looks open
    /// (a partition or blackhole hangs TCP silently), and that connection
    /// is dropped. One that left is dropped as a member that left (not one
    /// that failed: no warning), and not dialled again until SWIM sees it
    /// back.
    pub(super) fn declare_down(&mut self, id: NodeId, left: bool) {
        match self.view.declare_down(id, left) {
            Some(m) if left => tracing::info!(peer = %m.link.name, id, "member left the cluster"),
            Some(m) => tracing::warn!(peer = %m.link.name, id, "member down: swim"),
            None if id == self.cfg.id => return,
            None => tracing::info!(id, left, "member down: swim"),
        }
        self.membership_changed();
    }

    /// This node is stopping: every member is told, and every link is
    /// dropped, so its task writes what it holds (the `Leaving` last) and
    /// closes its TLS session instead of being cut off.
    pub(super) fn leave(&mut self) {
        for m in self.view.leave() {
            // Behind what is queued: the peer must not drop this node
            // while frames it sent are still on their way.
            let last = crate::link::Outgoing {
                wire: Wire::Leaving,
                held: None,
            };
            if m.link.queue.try_send(last).is_err() {
                self.metrics.dropped_messages.inc();
            }
        }
        tracing::info!("left the cluster");
    }

    /// A frame that is not a protocol message.
    pub(super) fn on_frame(&mut self, from: NodeId, wire: Wire) {
        match wire {
            Wire::Gossip(data) => self.on_gossip(from, &data),
            Wire::Leaving => self.declare_down(from, true),
            Wire::Revoked(der) => self.on_revoked(Some(from), der),
            Wire::Commit(msg) => self.on_commit_msg(from, msg),
            Wire::Lock(msg) => self.on_lock_msg(from, msg),
            Wire::Members(list) => {
                for (id, listen) in list {
                    if self.view.worth_hint(id) {
                        self.dial_hint(listen);
                    }
                }
            }
            // A second Hello, or a protocol message the link should have
            // passed as one: a confused peer.
            Wire::Hello { .. } | Wire::Peer(_) => {
                self.metrics.peer_errors.inc();
            }
        }
    }
}
