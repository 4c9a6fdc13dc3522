//! The driver's side of membership: it feeds the core's
//! [`Membership`](coopcache_core::members::Membership) with links that
//! come up and go down, the peers' gossip, `Leaving` and member lists, and
//! the clock, and carries out what it decides: dials, datagrams, dropped
//! links, the live members told to the node, logs and counters. Whom to
//! dial, what a verdict or a lost link means and whom a peer's word makes
//! this node dial are the core's.

use super::*;
use crate::link::{Greeting, link_channels, run_link};
use coopcache_core::members::swim::Note;
use coopcache_core::members::{Dropped, MemberAction, MemberNote};

impl Driver {
    /// What the driver keeps for linked member `id`.
    pub(super) fn peer(&self, id: NodeId) -> Option<&Member> {
        self.members.member(id).map(|m| &m.link)
    }

    /// Dials `addr` if the membership finds it worth it (a seed, or a
    /// test's).
    pub(super) fn dial(&mut self, addr: String) {
        self.members.handle_join(addr);
        self.apply_members();
    }

    pub(super) fn link_up(&mut self, addr: String, name: String, greeting: Greeting) {
        let Greeting {
            id,
            listen,
            version,
            release,
        } = greeting;
        let member = |link: &LinkTx| Member {
            name: name.clone(),
            version,
            release: release.clone(),
            queue: link.frames.clone(),
            gossip: link.gossip.clone(),
        };
        let now = self.clock.micros();
        self.members.handle_link_up(&addr, id, listen, member, now);
        self.apply_members();
    }

    pub(super) fn link_down(&mut self, addr: &str, id: Option<NodeId>) {
        self.members.handle_link_down(addr, id);
        self.apply_members();
    }

    /// Fires SWIM's due timers (probes, suspicion, gossip).
    pub(super) fn swim_tick(&mut self) {
        self.members.handle_timeout(self.clock.micros());
        self.apply_members();
    }

    /// A frame that is not a protocol message.
    pub(super) fn on_frame(&mut self, from: NodeId, wire: Wire) {
        match wire {
            Wire::Gossip(data) => {
                let now = self.clock.micros();
                self.members.handle_gossip(from, &data, now);
                self.apply_members();
            }
            Wire::Leaving => {
                self.members.handle_leaving(from);
                self.apply_members();
            }
            Wire::Revoked(der) => self.on_revoked(Some(from), der),
            Wire::Commit(msg) => self.on_commit_msg(from, msg),
            Wire::Lock(msg) => self.on_lock_msg(from, msg),
            Wire::Warm(msg) => self.on_warm_msg(from, msg),
            Wire::List(msg) => self.on_list_msg(from, msg),
            Wire::Members(list) => {
                self.members.handle_members(list);
                self.apply_members();
            }
            // A second Hello, or a protocol message the link should have
            // passed as one: a confused peer.
            Wire::Hello { .. } | Wire::Peer(_) => {
                self.metrics.peer_errors.inc();
            }
        }
    }

    /// This node is stopping: every member is told, and every link is
    /// dropped, so its task writes what it holds (the `Leaving` last) and
    /// closes its TLS session instead of being cut off.
    pub(super) fn leave(&mut self) {
        self.members.handle_leave();
        self.apply_members();
        tracing::info!("left the cluster");
    }

    /// Carries out what the membership decided.
    pub(super) fn apply_members(&mut self) {
        let mut changed = false;
        while let Some(action) = self.members.poll() {
            match action {
                MemberAction::Dial { addr, hinted } => {
                    let (tx, rx) = link_channels();
                    self.members.dialled(addr.clone(), tx, hinted);
                    tokio::spawn(run_link(addr, self.ctx.clone(), rx));
                }
                MemberAction::Gossip { to, data } => {
                    if self
                        .peer(to)
                        .is_none_or(|m| m.gossip.try_send(Wire::Gossip(data)).is_err())
                    {
                        self.metrics.dropped_messages.inc();
                    }
                }
                MemberAction::Welcome { id } => {
                    let list = self.members.advertised();
                    for frame in crate::frame::members_frames(&list, self.cfg.block_size) {
                        self.send(id, frame);
                    }
                }
                MemberAction::PassRevocation { to } => self.pass_revocation(to),
                MemberAction::Changed => changed = true,
                MemberAction::Dropped { id, member, why } => {
                    let name = &member.link.name;
                    match why {
                        Dropped::Lost => tracing::warn!(peer = %name, id, "member down: link lost"),
                        Dropped::Down => tracing::warn!(peer = %name, id, "member down: swim"),
                        Dropped::Left => {
                            tracing::info!(peer = %name, id, "member left the cluster")
                        }
                        Dropped::Leaving => {
                            // Behind what is queued: the peer must not drop
                            // this node while frames it sent are still on
                            // their way.
                            let last = crate::link::Outgoing {
                                wire: Wire::Leaving,
                                held: None,
                            };
                            if member.link.queue.try_send(last).is_err() {
                                self.metrics.dropped_messages.inc();
                            }
                        }
                    }
                    // Dropping the member's queues ends its link task.
                }
                MemberAction::Note(note) => self.member_note(note),
            }
        }
        if changed {
            let live = self.members.live();
            let now = self.clock.micros();
            self.node.set_members(&live, now);
            self.metrics.members.set(live.len() as i64);
            self.apply();
        }
    }

    /// Logs and counts what the membership noted.
    fn member_note(&mut self, note: MemberNote) {
        match note {
            MemberNote::Linked {
                id,
                listen,
                was_down,
            } => {
                let name = self.member_name(id).to_string();
                tracing::info!(peer = %name, id, %listen, down = was_down, "member linked");
            }
            MemberNote::DownUnlinked { id, left } => tracing::info!(id, left, "member down: swim"),
            MemberNote::UpAgain { id } => tracing::info!(id, "member up again (swim)"),
            MemberNote::Forgotten { addr } => {
                tracing::debug!(%addr, "address named by a peer never answered: forgotten");
            }
            MemberNote::Full { addr, max } => {
                self.metrics.dropped_messages.inc();
                tracing::warn!(%addr, "not dialled: {max} links already");
            }
            MemberNote::Refused {
                from,
                error,
                counted,
            } => {
                if counted {
                    self.metrics.peer_errors.inc();
                    tracing::warn!(peer = from, %error, "gossip frame refused");
                } else {
                    tracing::debug!(peer = from, %error, "gossip frame refused");
                }
            }
            MemberNote::Screened { updates } => {
                self.metrics.gossip_screened.inc_by(updates as u64);
            }
            MemberNote::TimersDropped { timers } => {
                tracing::warn!(dropped = timers, "swim timers dropped");
            }
            MemberNote::Swim(Note::Rejoined { incarnation }) => tracing::info!(
                incarnation,
                "swim: this node was declared down; rejoined as a new incarnation"
            ),
            MemberNote::Swim(Note::Defunct) => {
                tracing::warn!("swim: this node was declared down and cannot rejoin")
            }
            MemberNote::Swim(Note::Refused { call, error }) => {
                tracing::debug!(call, %error, "swim")
            }
        }
    }
}
