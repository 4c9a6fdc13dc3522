//! What the machines send, as live messages: most cross a link as they
//! are ([`PeerMsg`]'s `TryFrom`); reads, forwards, hand-backs and origin
//! fetches depend on who sends them to whom, and are mapped here.

use super::node::NodeProtocol;
use super::{Content, PeerMsg, ProtocolKey};
use crate::coop::{Addr, AlgorithmKind, Envelope, Msg, SizeClassed};

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// Maps and queues everything the machines sent, and finishes the
    /// reads they completed, until they are quiet.
    pub(super) fn route_machine_output(&mut self, now: u64) {
        loop {
            while let Some(env) = self.machine_out.next_message() {
                self.route(env, now);
            }
            self.complete_reads(now);
            if self.machine_out.pending() == 0 {
                return;
            }
        }
    }

    fn route(&mut self, env: Envelope<K, D>, now: u64) {
        let Envelope { from, to, msg } = env;
        match (from, to) {
            (Addr::Manager, to) => self.route_from_manager(to, msg, now),
            (_, Addr::Manager) => self.route_to_manager(msg, now),
            (_, Addr::Node(peer)) => self.route_to_node(peer, msg, now),
            (_, Addr::Origin) => self.not_live(&msg),
        }
    }

    /// The node machine's message to its block's manager.
    fn route_to_manager(&mut self, msg: Msg<K, D>, now: u64) {
        let me = self.me;
        let direct = self.kind == AlgorithmKind::Direct;
        if let Some(block) = msg.block()
            && self.private_to_manager(block, &msg, now)
        {
            return;
        }
        match msg {
            // The machine let go of its copy of a block this node still
            // holds pinned: the manager keeps it as a holder (pinned.rs).
            Msg::Dropped { block } | Msg::Moved { block, .. } if self.is_pinned(block) => {}
            Msg::IsSinglet { block } => self.ask_singlet(block, now),
            Msg::Read { block, reader, .. } if reader == me => self.read_to_manager(block),
            // A partition owner passes a read it cannot serve on to the
            // manager; the reader asked the manager itself already, so it
            // only needs telling.
            Msg::Read { block, reader, .. } => self.send(reader, PeerMsg::Missing { block }),
            // A Direct host lost a block its client asked for: the client
            // asks the manager itself. Any other holder hands the read back
            // to the manager that forwarded it.
            Msg::NotHere { block, reader, .. } if direct => {
                self.send(reader, PeerMsg::Missing { block })
            }
            // A holder whose memory lost the block serves it from its disk
            // if it can (`disk_peers.rs`).
            Msg::NotHere { block, reader, .. } => {
                if !self.serve_from_disk(block, reader, now) {
                    self.send_to_manager(block, PeerMsg::NotHere { block })
                }
            }
            // An N-Chance node handed a singlet to a peer: it says it no
            // longer holds it, and the peer says it does when it takes it
            // (each speaks only about itself; a claim that a third node
            // holds a block would race the singlet on another link).
            Msg::Moved { block, .. } | Msg::Dropped { block } => {
                self.send_to_manager(block, self.dropped_msg(block))
            }
            msg => match PeerMsg::try_from(msg) {
                Ok(peer_msg) => {
                    let block = peer_msg.block();
                    match block {
                        Some(block) => self.send_to_manager(block, peer_msg),
                        None => self.stats.not_live += 1,
                    }
                }
                Err(_) => self.stats.not_live += 1,
            },
        }
    }

    /// The node machine's message to a peer.
    fn route_to_node(&mut self, peer: crate::coop::NodeId, msg: Msg<K, D>, now: u64) {
        let me = self.me;
        match msg {
            // A private node parks its blocks sealed, and checks them on
            // return against its own digests (private.rs).
            Msg::Forward { block, reader, .. }
                if reader == me && self.reclaim_sealed(block, now) => {}
            Msg::Place {
                block, ref data, ..
            } if !self.held.contains(block) && self.park_sealed(peer, block, data) => {}
            // Nothing else of a private node's leaves it in the clear (a
            // private node runs Direct or keeps to itself).
            Msg::Recirculate { .. } if self.is_private() => self.stats.dropped += 1,
            // A Hash-Distributed read goes to the partition owner, and to
            // the manager, which has the digest to check the owner's
            // contents against (or sends this node to the origin).
            Msg::Read { block, reader, .. } if reader == me => {
                self.asked(block, peer);
                self.send(peer, PeerMsg::PartitionRead { block });
                self.read_to_manager(block);
            }
            // A Direct node asks its host for a block it parked there, and
            // its manager for the digest to check it against.
            Msg::Forward { block, reader, .. } if reader == me => {
                self.asked(block, peer);
                self.send(peer, PeerMsg::Reclaim { block });
                self.send_to_manager(block, PeerMsg::HashOf { block });
            }
            // Contents this node holds unverified never leave it (it would
            // pass on, and be blamed for, a liar's bytes; found by the
            // fault harness, seed 572: a held singlet evicted and forwarded
            // again): the block is dropped instead.
            Msg::Recirculate { block, .. } | Msg::Place { block, .. }
                if self.held.contains(block) =>
            {
                self.stats.dropped += 1;
            }
            msg => match PeerMsg::try_from(msg) {
                Ok(peer_msg) => self.send(peer, peer_msg),
                Err(_) => self.stats.not_live += 1,
            },
        }
    }

    /// This node's `Read` of `block` to its manager, unless the manager has
    /// it already (an open carried it: `NodeProtocol::handle_read_asked`).
    fn read_to_manager(&mut self, block: K) {
        if self.read_asked.take_if(|b| *b == block).is_none() {
            self.send_to_manager(block, PeerMsg::Read { block });
        }
    }

    /// The manager slice's message.
    fn route_from_manager(&mut self, to: Addr, msg: Msg<K, D>, now: u64) {
        match (to, msg) {
            (Addr::Node(holder), Msg::Forward { block, reader, .. }) => {
                self.manager_forward(block, holder, reader, now)
            }
            // No member's memory has it: a member's disk, else the origin.
            (Addr::Origin, Msg::Fetch { block, reader, .. }) => {
                if !self.disk_forward(block, reader, now) {
                    self.manager_fetch(block, reader, now)
                }
            }
            (Addr::Node(n), msg) => match PeerMsg::try_from(msg) {
                Ok(peer_msg) => self.send(n, peer_msg),
                Err(_) => self.stats.not_live += 1,
            },
            (_, msg) => self.not_live(&msg),
        }
    }

    /// A machine message with no live form: counted, never sent.
    fn not_live(&mut self, _msg: &Msg<K, D>) {
        self.stats.not_live += 1;
    }
}
