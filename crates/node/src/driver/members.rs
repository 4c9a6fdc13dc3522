//! Membership: links dialled and lost, SWIM's verdicts, the live members
//! the protocol is told of, and the frames that are not the protocol's.

use super::*;
use crate::link::{link_channels, run_link};
use crate::membership::{Change, Effects, GossipError};

impl Driver {
    pub(super) fn dial(&mut self, addr: String) {
        if self.stopping || addr == self.ctx.listen || self.links.contains_key(&addr) {
            return;
        }
        // Addresses come from seeds, peers and gossip; each link retries
        // until dropped, so their number is bounded.
        if self.links.len() >= MAX_LINKS {
            self.metrics.dropped_messages.inc();
            tracing::warn!(%addr, "not dialled: {MAX_LINKS} links already");
            return;
        }
        if self.members.values().any(|m| m.listen == addr) {
            return;
        }
        let (tx, rx) = link_channels();
        self.links.insert(addr.clone(), tx);
        tokio::spawn(run_link(addr, self.ctx.clone(), rx));
    }

    /// Dials an address a peer named: tried [`HINT_ATTEMPTS`] times, then
    /// forgotten unless it answered as a member.
    pub(super) fn dial_hint(&mut self, addr: String) {
        if self.links.contains_key(&addr) {
            return;
        }
        self.dial(addr.clone());
        if self.links.contains_key(&addr) {
            self.hinted.insert(addr, 0);
        }
    }

    pub(super) fn link_up(&mut self, addr: String, id: NodeId, name: String, listen: String) {
        let Some(link) = self.links.get(&addr).cloned() else {
            return;
        };
        self.hinted.remove(&addr);
        if self.members.contains_key(&id) {
            // Dialled twice under two addresses: keep the first link.
            self.links.remove(&addr);
            return;
        }
        tracing::info!(peer = %name, id, %listen, down = self.down.contains(&id), "member linked");
        self.members.insert(
            id,
            Member {
                name,
                listen: listen.clone(),
                queue: link.frames,
                gossip: link.gossip,
            },
        );
        self.membership_changed();
        let list: Vec<(NodeId, String)> = std::iter::once((self.cfg.id, self.ctx.listen.clone()))
            .chain(
                self.members
                    .iter()
                    .filter(|(i, _)| !self.down.contains(i))
                    .map(|(&i, m)| (i, m.listen.clone())),
            )
            .collect();
        for frame in crate::frame::members_frames(&list, self.cfg.block_size) {
            self.send(id, frame);
        }
        self.send_revocations(id);
        // Bring SWIM in: the peer adds us and sends its member list.
        let effects = self.swim.announce(id, listen, crate::clock::now());
        self.swim_effects(effects);
    }

    pub(super) fn link_down(&mut self, addr: &str, id: Option<NodeId>) {
        let Some(id) = id else {
            if let Some(failed) = self.hinted.get_mut(addr) {
                *failed += 1;
                if *failed >= HINT_ATTEMPTS {
                    tracing::debug!(%addr, "address named by a peer never answered: forgotten");
                    self.hinted.remove(addr);
                    self.links.remove(addr);
                }
            }
            return;
        };
        if self.members.get(&id).is_some_and(|m| {
            self.links
                .get(addr)
                .is_some_and(|l| l.frames.same_channel(&m.queue))
        }) {
            if let Some(m) = self.members.remove(&id) {
                tracing::warn!(peer = %m.name, id, "member down: link lost");
            }
            self.forget(id);
        }
    }

    /// `id` is no longer live: the protocol forgets it (its directory
    /// entries, reads waiting on it).
    pub(super) fn forget(&mut self, id: NodeId) {
        tracing::info!(id, "member forgotten");
        self.membership_changed();
    }

    pub(super) fn membership_changed(&mut self) {
        let live: Vec<NodeId> = std::iter::once(self.cfg.id)
            .chain(
                self.members
                    .keys()
                    .copied()
                    .filter(|i| !self.down.contains(i)),
            )
            .collect();
        let now = self.clock.micros();
        self.protocol.set_members(&live, now);
        self.commits.set_members(&live, now);
        self.metrics.members.set(live.len() as i64);
        self.apply();
    }

    /// Fires SWIM's due timers (probes, suspicion, gossip).
    pub(super) fn swim_tick(&mut self) {
        if self.stopping {
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
            if let Some(m) = self.members.get(&to) {
                if m.gossip.try_send(Wire::Gossip(data)).is_err() {
                    self.metrics.dropped_messages.inc();
                }
            } else if !self.left.contains(&to) {
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
            if node != self.cfg.id
                && !self.members.contains_key(&node)
                && !self.left.contains(&node)
            {
                self.dial_hint(listen);
            }
        }
        for change in effects.changes {
            match change {
                Change::Up { node, listen } => {
                    self.left.remove(&node);
                    if self.down.remove(&node) {
                        tracing::info!(id = node, "member up again (swim)");
                        self.membership_changed();
                    }
                    if node != self.cfg.id && !self.members.contains_key(&node) {
                        self.dial(listen);
                    }
                }
                Change::Down { node } => self.declare_down(node),
            }
        }
    }

    /// SWIM declared `id` down: treated as a lost link even if its TCP
    /// connection still looks open (a partition or blackhole hangs TCP
    /// silently), and that connection is dropped.
    pub(super) fn declare_down(&mut self, id: NodeId) {
        if id == self.cfg.id {
            return;
        }
        if self.down.len() >= MAX_DOWN {
            self.down.pop_first();
        }
        self.down.insert(id);
        if let Some(m) = self.members.remove(&id) {
            tracing::warn!(peer = %m.name, id, "member down: swim");
            self.links.retain(|_, l| !l.frames.same_channel(&m.queue));
        } else {
            tracing::info!(id, "member down: swim");
        }
        self.forget(id);
    }

    /// `id` said it is stopping: dropped at once, as a member that left
    /// (not one that failed: no warning), and not dialled again until SWIM
    /// sees it back.
    pub(super) fn member_left(&mut self, id: NodeId) {
        if self.left.len() >= MAX_DOWN {
            self.left.pop_first();
        }
        self.left.insert(id);
        if self.down.len() >= MAX_DOWN {
            self.down.pop_first();
        }
        self.down.insert(id);
        if let Some(m) = self.members.remove(&id) {
            tracing::info!(peer = %m.name, id, "member left the cluster");
            self.links.retain(|_, l| !l.frames.same_channel(&m.queue));
        }
        self.forget(id);
    }

    /// This node is stopping: every member is told, and every link is
    /// dropped, so its task writes what it holds (the `Leaving` last) and
    /// closes its TLS session instead of being cut off.
    pub(super) fn leave(&mut self) {
        self.stopping = true;
        for m in self.members.values() {
            // Behind what is queued: the peer must not drop this node
            // while frames it sent are still on their way.
            let last = crate::link::Outgoing {
                wire: Wire::Leaving,
                held: None,
            };
            if m.queue.try_send(last).is_err() {
                self.metrics.dropped_messages.inc();
            }
        }
        self.members.clear();
        self.links.clear();
        tracing::info!("left the cluster");
    }

    /// A frame that is not a protocol message.
    pub(super) fn on_frame(&mut self, from: NodeId, wire: Wire) {
        match wire {
            Wire::Gossip(data) => self.on_gossip(from, &data),
            Wire::Leaving => self.member_left(from),
            Wire::Revoked(der) => self.on_revoked(Some(from), der),
            Wire::Commit(msg) => self.on_commit_msg(from, msg),
            Wire::Members(list) => {
                for (id, listen) in list {
                    if id != self.cfg.id
                        && !self.members.contains_key(&id)
                        && !self.left.contains(&id)
                    {
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
