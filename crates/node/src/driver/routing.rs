//! Routing what the machines send: to this node's machine or manager slice,
//! to peers, to the origin; Expect hashes for forwards; verification of
//! peer data.

use super::*;

impl Driver {
    /// Delivers everything the machines sent, until quiet.
    pub(super) fn pump(&mut self) {
        loop {
            while let Some(env) = self.out.next_message() {
                self.route(env.from, env.to, env.msg);
            }
            self.complete();
            if self.out.pending() == 0 {
                break;
            }
        }
    }

    pub(super) fn manager_for(&self, block: BlockId) -> NodeId {
        manager_of(block.file, &self.live).unwrap_or(self.cfg.id)
    }

    pub(super) fn route(&mut self, from: Addr, to: Addr, msg: Msg<BlockId, Bytes>) {
        let me = self.cfg.id;
        match to {
            Addr::Node(n) if n == me => self.deliver_to_node(me, from, msg),
            Addr::Node(n) => {
                if let Msg::Place { block, .. } = msg
                    && from == Addr::Node(me)
                    && self.node.serves_placed_blocks()
                    && self.manager_for(block) != me
                {
                    return self.place_once_recorded(n, block, msg);
                }
                // This node's own read sent straight to a peer (its
                // partition owner, its Direct host): no manager sends an
                // `Expect`, so ask it for the hash, in parallel.
                if let Msg::Read { block, reader, .. } | Msg::Forward { block, reader, .. } = msg
                    && reader == me
                    && from == Addr::Node(me)
                {
                    self.send_to_manager(block, Wire::HashOf { block });
                }
                self.send(n, Wire::Core { from, to, msg });
            }
            Addr::Manager => {
                // Weight (Weighted LRU) never runs live; any manager will do.
                let block = msg.block().unwrap_or(BlockId { file: 0, index: 0 });
                let m = self.manager_for(block);
                if m == me {
                    self.deliver_to_manager(me, msg);
                } else {
                    self.send(m, Wire::Core { from, to, msg });
                }
            }
            Addr::Origin => {
                // The manager's fetch: the reader reads the origin itself,
                // so the block crosses the network once.
                if let Msg::Fetch {
                    block,
                    reader,
                    hops,
                } = msg
                {
                    self.deliver_to(reader, Wire::FetchOrigin { block, hops });
                }
            }
        }
    }

    /// Holds a `Place` of a block this node read from the origin until its
    /// manager confirms the hash: the `Record` and the `HashOf` behind it
    /// share a link, so the owner's own `HashOf` comes after the record.
    fn place_once_recorded(&mut self, owner: NodeId, block: BlockId, msg: Msg<BlockId, Bytes>) {
        if self.placing.len() >= max_unverified(self.cfg.block_size) {
            self.metrics.dropped_messages.inc();
            return;
        }
        let deadline = Instant::now() + self.peer_timeout();
        self.placing.insert(block, (owner, msg, deadline));
        self.send_to_manager(block, Wire::HashOf { block });
    }

    /// The manager's answer for a held `Place`: send it, or (no record)
    /// drop it, as its owner would.
    pub(super) fn release_place(&mut self, block: BlockId, hash: Option<(Hash, u32)>) {
        if let Some((owner, msg, _)) = self.placing.remove(&block)
            && hash.is_some()
        {
            let (from, to) = (Addr::Node(self.cfg.id), Addr::Node(owner));
            self.send(owner, Wire::Core { from, to, msg });
        }
    }

    /// A message for this node's manager slice, from node `from`.
    pub(super) fn deliver_to_manager(&mut self, from: NodeId, msg: Msg<BlockId, Bytes>) {
        let now = self.now();
        let mut out = std::mem::take(&mut self.mgr_out);
        self.manager.handle(Addr::Node(from), msg, now, &mut out);
        // A forward to a holder: tell the reader what the holder's data
        // must hash to, or, with no record to check it against, send the
        // reader to the origin instead.
        while let Some(env) = out.next_message() {
            match env.msg {
                Msg::Forward {
                    block,
                    reader,
                    hops,
                } => match self.hashes.get(&block).copied() {
                    Some((hash, len)) => {
                        self.deliver_to(reader, Wire::Expect { block, hash, len });
                        self.out.send(env.from, env.to, env.msg);
                    }
                    None => self.out.send(
                        Addr::Manager,
                        Addr::Origin,
                        Msg::Fetch {
                            block,
                            reader,
                            hops,
                        },
                    ),
                },
                msg => self.out.send(env.from, env.to, msg),
            }
        }
        self.mgr_out = out;
    }

    /// A frame for node `to`: handled here if it is this node, else sent.
    pub(super) fn deliver_to(&mut self, to: NodeId, wire: Wire) {
        if to == self.cfg.id {
            self.on_wire(to, wire);
        } else {
            self.send(to, wire);
        }
    }

    /// A message for this node's machine.
    pub(super) fn deliver_to_node(&mut self, sender: NodeId, from: Addr, msg: Msg<BlockId, Bytes>) {
        let now = self.now();
        match msg {
            Msg::Data { block, .. } => {
                let Some(p) = self.pending.get_mut(&block) else {
                    return; // late: the read went elsewhere; never keep unverified bytes
                };
                if p.stage != Stage::Cluster {
                    return;
                }
                match p.expect {
                    Some(expect) => self.verify_data(block, sender, msg, expect),
                    None => p.early = Some((sender, msg)),
                }
            }
            Msg::Recirculate {
                block, ref data, ..
            }
            | Msg::Place {
                block, ref data, ..
            } if sender != self.cfg.id
                && (matches!(msg, Msg::Recirculate { .. }) || self.node.serves_placed_blocks()) =>
            {
                // The machine takes the singlet (or the block placed in
                // its partition) at once, in the order the simulator
                // delivers it; its bytes are checked with the manager
                // before any local read uses them (a peer that gets them
                // checks them itself).
                if self.unverified.len() >= max_unverified(self.cfg.block_size)
                    && !self.unverified.contains_key(&block)
                {
                    self.metrics.dropped_messages.inc();
                    self.out.send(
                        Addr::Node(self.cfg.id),
                        Addr::Manager,
                        Msg::Dropped { block },
                    );
                    return;
                }
                let u = Unverified {
                    sender,
                    data: data.clone(),
                    deadline: Instant::now() + self.peer_timeout(),
                };
                self.unverified.insert(block, u);
                self.send_to_manager(block, Wire::HashOf { block });
                self.node.handle(from, msg, now, &mut self.out);
            }
            Msg::Forward { block, .. } if self.pending.contains_key(&block) => {
                let d = self.deferred.entry(block).or_default();
                d.push((from, msg));
            }
            msg => self.node.handle(from, msg, now, &mut self.out),
        }
    }

    pub(super) fn verify_data(
        &mut self,
        block: BlockId,
        sender: NodeId,
        msg: Msg<BlockId, Bytes>,
        (hash, len): (Hash, u32),
    ) {
        let Msg::Data { ref data, .. } = msg else {
            return;
        };
        if data.len() == len as usize && blake3_of(data) == hash {
            if let Some(p) = self.pending.get_mut(&block) {
                p.data = Some(data.clone());
            }
            let now = self.now();
            self.node
                .handle(Addr::Node(sender), msg, now, &mut self.out);
        } else {
            self.metrics.integrity_failures.inc();
            tracing::warn!(
                peer = sender,
                ?block,
                "block failed verification; reading the origin"
            );
            self.start_origin_read(block, 3);
        }
    }

    pub(super) fn send_to_manager(&mut self, block: BlockId, wire: Wire) {
        self.deliver_to(self.manager_for(block), wire);
    }

    pub(super) fn send(&mut self, to: NodeId, wire: Wire) {
        let ok = self
            .members
            .get(&to)
            .is_some_and(|m| m.queue.try_send(wire).is_ok());
        if !ok {
            self.metrics.dropped_messages.inc();
        }
    }
}
