//! Membership: links dialled and lost, SWIM's verdicts, live members,
//! pings and status.

use super::*;

impl Driver {
    pub(super) fn dial(&mut self, addr: String) {
        if addr == self.ctx.listen || self.links.contains_key(&addr) {
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

    pub(super) fn link_up(&mut self, addr: String, id: NodeId, name: String, listen: String) {
        let Some(link) = self.links.get(&addr).cloned() else {
            return;
        };
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
                rtt: None,
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
        // Bring SWIM in: the peer adds us and sends its member list.
        let effects = self.swim.announce(id, listen, Instant::now());
        self.swim_effects(effects);
    }

    pub(super) fn link_down(&mut self, addr: &str, id: Option<NodeId>) {
        let Some(id) = id else { return };
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

    /// Drops `id` from every directory and from the live set.
    pub(super) fn forget(&mut self, id: NodeId) {
        let forgotten = self.manager.forget_node(id);
        tracing::info!(
            id,
            forgotten,
            "directory entries dropped for the lost member"
        );
        self.membership_changed();
    }

    pub(super) fn membership_changed(&mut self) {
        self.live = std::iter::once(self.cfg.id)
            .chain(
                self.members
                    .keys()
                    .copied()
                    .filter(|i| !self.down.contains(i)),
            )
            .collect();
        self.live.sort_unstable();
        self.node.set_peers(&self.live);
        self.manager.set_peers(&self.live);
        self.metrics.members.set(self.live.len() as i64);
    }

    /// Fires SWIM's due timers (probes, suspicion, gossip).
    pub(super) fn swim_tick(&mut self) {
        let effects = self.swim.tick(Instant::now());
        self.swim_effects(effects);
    }

    pub(super) fn on_gossip(&mut self, from: NodeId, data: &[u8]) {
        match self.swim.receive(from, data, Instant::now()) {
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
            } else {
                // No link yet: this datagram is lost (SWIM expects loss)
                // and the link will carry the next ones.
                self.dial(listen);
            }
        }
        for change in effects.changes {
            match change {
                Change::Up { node, listen } => {
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
        self.pump();
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

    pub(super) fn ping_all(&mut self) {
        let now = Instant::now();
        self.pings
            .retain(|_, (_, sent)| now.duration_since(*sent) < Duration::from_secs(10));
        let ids: Vec<NodeId> = self.members.keys().copied().collect();
        for id in ids {
            self.nonce += 1;
            self.pings.insert(self.nonce, (id, now));
            self.send(id, Wire::Ping(self.nonce));
        }
    }

    pub(super) fn status(&mut self) -> Status {
        let m = &self.metrics;
        let mut members = vec![MemberStatus {
            id: self.cfg.id,
            name: self.cfg.name.clone(),
            listen: self.ctx.listen.clone(),
            rtt_us: None,
        }];
        let down = &self.down;
        members.extend(
            self.members
                .iter()
                .filter(|(id, _)| !down.contains(id))
                .map(|(&id, mm)| MemberStatus {
                    id,
                    name: mm.name.clone(),
                    listen: mm.listen.clone(),
                    rtt_us: mm.rtt.map(|r| r.as_micros() as u64),
                }),
        );
        Status {
            id: self.cfg.id,
            name: self.cfg.name.clone(),
            algorithm: self.cfg.algorithm.clone(),
            members,
            cached_bytes: self.store.bytes() as u64,
            cached_blocks: self.store.blocks() as u64,
            budget_bytes: self.cfg.budget,
            reads: Level::ALL
                .iter()
                .map(|&l| (crate::metrics::level_name(l).to_string(), m.reads_at(l)))
                .collect(),
            origin_reads: m.origin_reads.get(),
            origin_bytes: m.origin_bytes.get(),
            integrity_failures: m.integrity_failures.get(),
            timeouts: m.timeouts.get(),
            peer_errors: m.peer_errors.get(),
        }
    }
}
