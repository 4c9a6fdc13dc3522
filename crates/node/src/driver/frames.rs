//! Frames from peers: core messages, hashes, pings, members, gossip.

use super::*;

impl Driver {
    pub(super) fn on_frame(&mut self, from: NodeId, wire: Wire) {
        if !self.members.contains_key(&from) {
            // A peer that dialled us before we dialled it: frames still
            // count (they were authenticated), but we cannot answer until
            // our own link is up.
            tracing::debug!(peer = from, "frame from a peer not yet linked");
        }
        self.on_wire(from, wire);
    }

    pub(super) fn on_wire(&mut self, from: NodeId, wire: Wire) {
        match wire {
            Wire::Core {
                from: role,
                to,
                msg,
            } => match to {
                Addr::Manager => self.deliver_to_manager(from, msg),
                Addr::Node(n) if n == self.cfg.id => {
                    // Trust the connection's identity, not the claimed role,
                    // except that a node may speak for its manager slice.
                    let role = match role {
                        Addr::Manager => Addr::Manager,
                        _ => Addr::Node(from),
                    };
                    self.deliver_to_node(from, role, msg)
                }
                _ => {
                    self.metrics.peer_errors.inc();
                }
            },
            Wire::Expect { block, hash, len } => self.expect(block, (hash, len)),
            Wire::FetchOrigin { block, hops } => self.start_origin_read(block, hops),
            Wire::Record { block, hash, len } => self.record(block, hash, len),
            Wire::HashOf { block } => {
                let hash = self.hashes.get(&block).copied();
                self.deliver_to(from, Wire::HashIs { block, hash });
            }
            Wire::HashIs { block, hash } => {
                self.verify_recirculated(block, hash);
                self.hash_for_read(block, hash);
                self.release_place(block, hash);
            }
            Wire::Ping(n) => self.send(from, Wire::Pong(n)),
            Wire::Pong(n) => {
                if let Some((peer, sent)) = self.pings.remove(&n)
                    && let Some(m) = self.members.get_mut(&peer)
                {
                    let sample = sent.elapsed();
                    m.rtt = Some(match m.rtt {
                        Some(old) => (old * 7 + sample) / 8,
                        None => sample,
                    });
                }
            }
            Wire::Gossip(data) => self.on_gossip(from, &data),
            Wire::Members(list) => {
                for (id, listen) in list {
                    if id != self.cfg.id && !self.members.contains_key(&id) {
                        self.dial(listen);
                    }
                }
            }
            Wire::Hello { .. } => {
                self.metrics.peer_errors.inc();
            }
        }
    }

    pub(super) fn record(&mut self, block: BlockId, hash: Hash, len: u32) {
        if self.hashes.insert(block, (hash, len)).is_none() {
            self.hash_order.push_back(block);
        }
        let max = self.cfg.capacity.max(1024) * HASHES_PER_BLOCK;
        while self.hashes.len() > max {
            let Some(old) = self.hash_order.pop_front() else {
                break;
            };
            self.hashes.remove(&old);
        }
    }

    /// The manager's answer for a read this node sent straight to a peer
    /// (a Hash-Distributed partition owner, its Direct host), no `Expect`
    /// coming: the hash the peer's data must have, or, with none recorded,
    /// nothing a peer sends can be checked, so the origin.
    pub(super) fn hash_for_read(&mut self, block: BlockId, hash: Option<(Hash, u32)>) {
        let Some(p) = self.pending.get_mut(&block) else {
            return;
        };
        if p.stage != Stage::Cluster || p.expect.is_some() {
            return;
        }
        match hash {
            Some(expect) => self.expect(block, expect),
            None => self.start_origin_read(block, 2),
        }
    }

    /// What a peer's data for `block` must hash to: checks data that
    /// came first, and any that comes later.
    fn expect(&mut self, block: BlockId, expect: (Hash, u32)) {
        if let Some(p) = self.pending.get_mut(&block) {
            p.expect = Some(expect);
            if let Some((sender, msg)) = p.early.take() {
                self.verify_data(block, sender, msg, expect);
            }
        }
    }

    /// The manager's verdict on a forwarded singlet the machine took.
    pub(super) fn verify_recirculated(&mut self, block: BlockId, hash: Option<(Hash, u32)>) {
        let Some(Unverified { sender, data, .. }) = self.unverified.remove(&block) else {
            return;
        };
        let good = hash.is_some_and(|(h, len)| data.len() == len as usize && blake3_of(&data) == h);
        if !good {
            if hash.is_some() {
                self.metrics.integrity_failures.inc();
                tracing::warn!(peer = sender, ?block, "forwarded block failed verification");
            }
            // Still holding these bytes (not evicted or replaced since):
            // drop them and tell the manager this node is no holder.
            if self.store.holds(block, &data) {
                self.uncache(block);
            }
        }
        let Some(p) = self.pending.remove(&block) else {
            return;
        };
        if p.stage != Stage::Held {
            self.pending.insert(block, p);
        } else if good {
            self.finish(block, p, data, Level::Local);
        } else {
            self.pending.insert(block, p);
            self.start_origin_read(block, 1);
        }
    }
}
