//! Membership as one machine: the [`View`] (links, members, down and left)
//! joined to SWIM ([`Swim`]), with every decision that joins them made
//! here: whom to dial and when, what a link that comes up or goes down
//! means, what SWIM's verdicts and a member's own `Leaving` change, whom a
//! peer's word (a member list, a gossip hint) makes this node dial, and
//! when the live members changed. The driver carries what it says
//! ([`MemberAction`]): it dials, queues datagrams, drops what it kept for a
//! member, and logs.
//!
//! Like the view, it is generic over what the driver keeps per dialled
//! link (`L`) and per member (`M`): the driver makes them when it dials
//! ([`Membership::dialled`]) and when a link comes up, and gets them back
//! when they are to be dropped, so there is one table of each.

use super::swim::{Change, Effects, GossipError, Note, Swim};
use super::{LinkDown, LinkUp, Member, NoDial, View};
use crate::coop::NodeId;
use bytes::Bytes;
use rejoin::Rejoin;
use std::collections::{HashSet, VecDeque};

mod rejoin;

/// What the driver must do, in the order it was decided.
#[derive(Debug, PartialEq, Eq)]
pub enum MemberAction<M> {
    /// Dial `addr` now and report it with [`Membership::dialled`] before
    /// anything else (the address is reserved until then).
    Dial {
        /// The address.
        addr: String,
        /// A peer named it (it gets a few attempts, then is forgotten).
        hinted: bool,
    },
    /// Send SWIM datagram `data` to linked member `to`, ahead of its
    /// other frames.
    Gossip {
        /// The member.
        to: NodeId,
        /// The datagram.
        data: Bytes,
    },
    /// Member `id` was just linked: tell it the members
    /// ([`Membership::advertised`]) and whatever else a new member learns.
    Welcome {
        /// The member.
        id: NodeId,
    },
    /// Send linked member `to` the revocation list in force
    /// ([`Membership::handle_revocation`]).
    PassRevocation {
        /// The member.
        to: NodeId,
    },
    /// The live members changed ([`Membership::live`]).
    Changed,
    /// What the driver kept for member `id` is no longer the view's: drop
    /// it (its link closes).
    Dropped {
        /// The member.
        id: NodeId,
        /// What the driver kept for it.
        member: Member<M>,
        /// Why.
        why: Dropped,
    },
    /// Something to log or count.
    Note(MemberNote),
}

/// Why a member was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dropped {
    /// Its own link went down.
    Lost,
    /// SWIM declared it down (its link may still look open).
    Down,
    /// It said it is stopping.
    Left,
    /// This node is stopping: send it a last `Leaving`, behind what is
    /// queued, then close.
    Leaving,
}

/// What happened, for logs and counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberNote {
    /// A member's link came up (`was_down`: still held down until SWIM
    /// sees it alive).
    Linked {
        /// The member.
        id: NodeId,
        /// Where it listens.
        listen: String,
        /// Whether it is still marked down.
        was_down: bool,
    },
    /// A member not linked was declared down by SWIM, or (`left`) said
    /// it is stopping.
    DownUnlinked {
        /// The member.
        id: NodeId,
        /// Whether it said it left.
        left: bool,
    },
    /// SWIM sees a member alive again.
    UpAgain {
        /// The member.
        id: NodeId,
    },
    /// An address a peer named never answered as a member: forgotten.
    Forgotten {
        /// The address.
        addr: String,
    },
    /// Not dialled: as many links as allowed already.
    Full {
        /// The address.
        addr: String,
        /// The bound.
        max: usize,
    },
    /// A gossip frame refused (`counted`: a peer's error worth counting,
    /// not routine after a rejoin).
    Refused {
        /// The link's member.
        from: NodeId,
        /// Why.
        error: GossipError,
        /// Whether it counts as the peer's error.
        counted: bool,
    },
    /// Updates a peer sent about others, dropped unapplied.
    Screened {
        /// How many.
        updates: usize,
    },
    /// SWIM timers dropped past their bound.
    TimersDropped {
        /// How many.
        timers: usize,
    },
    /// SWIM's own notes (a rejoin, a refused call).
    Swim(Note),
}

/// One node's membership (see the module doc).
#[derive(Debug)]
pub struct Membership<L, M> {
    view: View<L, M>,
    swim: Swim,
    /// Addresses announced in a [`MemberAction::Dial`] not yet
    /// [`dialled`](Membership::dialled): never dialled twice.
    dialling: HashSet<String>,
    /// The number of the revocation list in force (0: none).
    revocation: u64,
    /// Whom to dial back when SWIM holds no member alive.
    rejoin: Rejoin,
    out: VecDeque<MemberAction<M>>,
}

impl<L, M> Membership<L, M> {
    /// The membership of the node `view` and `swim` are about.
    pub fn new(view: View<L, M>, swim: Swim) -> Self {
        let rejoin = Rejoin::new(swim.announce_down_every(), view.max_links());
        Membership {
            view,
            swim,
            dialling: HashSet::new(),
            revocation: 0,
            rejoin,
            out: VecDeque::new(),
        }
    }

    /// The view.
    pub fn view(&self) -> &View<L, M> {
        &self.view
    }

    /// SWIM.
    pub fn swim(&self) -> &Swim {
        &self.swim
    }

    /// The live members, this node first.
    pub fn live(&self) -> Vec<NodeId> {
        self.view.live()
    }

    /// This node and its live members with their listen addresses.
    pub fn advertised(&self) -> Vec<(NodeId, String)> {
        self.view.advertised()
    }

    /// Linked member `id`'s entry.
    pub fn member(&self, id: NodeId) -> Option<&Member<M>> {
        self.view.member(id)
    }

    /// A revocation list numbered `number` whose cluster CA signature the
    /// driver has verified (as a link's certificate is verified, it is
    /// crypto, not protocol), from linked member `from` or (`None`) this
    /// node's own CA directory or disk. It is put in force only if it is
    /// newer than the list in force (true): a replayed or older list can
    /// never lift a revocation. Then every linked member but its sender is
    /// passed it ([`MemberAction::PassRevocation`]), and so is every member
    /// linked later, so the whole cluster honours it within a hop per link.
    pub fn handle_revocation(&mut self, number: u64, from: Option<NodeId>) -> bool {
        if number <= self.revocation {
            return false;
        }
        self.revocation = number;
        let to: Vec<NodeId> = self.view.linked().filter(|&id| Some(id) != from).collect();
        self.out
            .extend(to.into_iter().map(|to| MemberAction::PassRevocation { to }));
        true
    }

    /// The number of the revocation list in force (0: none).
    pub fn revocation(&self) -> u64 {
        self.revocation
    }

    /// The next thing to do.
    pub fn poll(&mut self) -> Option<MemberAction<M>> {
        self.out.pop_front()
    }

    /// When SWIM's next timer is due.
    pub fn poll_timeout(&self) -> Option<u64> {
        if self.view.is_stopping() {
            return None;
        }
        let due = [self.swim.next_due(), self.rejoin.next_due()];
        due.into_iter().flatten().min()
    }

    /// Dial `addr`, an address the operator gave (a seed: tried until
    /// dropped).
    pub fn handle_join(&mut self, addr: String) {
        self.rejoin.seed(&addr);
        self.dial(addr, false);
    }

    fn dial(&mut self, addr: String, hinted: bool) {
        if self.dialling.contains(&addr) {
            return;
        }
        match self.view.may_dial(&addr) {
            Ok(()) => {}
            Err(NoDial::Needless) => return,
            Err(NoDial::Full) => {
                let max = self.view.max_links();
                return self
                    .out
                    .push_back(MemberAction::Note(MemberNote::Full { addr, max }));
            }
        }
        self.dialling.insert(addr.clone());
        self.out.push_back(MemberAction::Dial { addr, hinted });
    }

    /// The driver dialled `addr` (as a [`MemberAction::Dial`] said) over
    /// `link`.
    pub fn dialled(&mut self, addr: String, link: L, hinted: bool) {
        self.dialling.remove(&addr);
        self.view.dialled(addr, link, hinted);
    }

    /// The link dialled to `addr` is up, to member `id` listening on
    /// `listen` (all three as the link authenticated them); `member` makes
    /// what the driver keeps for it from the link.
    pub fn handle_link_up(
        &mut self,
        addr: &str,
        id: NodeId,
        listen: String,
        member: impl FnOnce(&L) -> M,
        now: u64,
    ) {
        match self.view.link_up(addr, id, listen.clone(), member) {
            LinkUp::Unknown | LinkUp::Duplicate => return,
            LinkUp::Joined { was_down } => {
                self.rejoin.found(&listen);
                self.out.push_back(MemberAction::Note(MemberNote::Linked {
                    id,
                    listen: listen.clone(),
                    was_down,
                }));
            }
        }
        self.out.push_back(MemberAction::Changed);
        self.out.push_back(MemberAction::Welcome { id });
        if self.revocation > 0 {
            self.out.push_back(MemberAction::PassRevocation { to: id });
        }
        // Bring SWIM in: the peer adds us and sends its member list.
        let effects = self.swim.announce(id, listen, now);
        self.swim_effects(effects);
        self.rejoin.arm(now);
    }

    /// The link dialled to `addr` went down (`id`: the member it had
    /// linked, if it had).
    pub fn handle_link_down(&mut self, addr: &str, id: Option<NodeId>) {
        match self.view.link_down(addr, id) {
            LinkDown::Nothing => {}
            LinkDown::Forgotten => {
                self.out
                    .push_back(MemberAction::Note(MemberNote::Forgotten {
                        addr: addr.to_string(),
                    }));
            }
            LinkDown::Lost(member) => {
                self.rejoin.lost(&member.listen);
                self.out.push_back(MemberAction::Dropped {
                    id: id.unwrap_or_default(),
                    member,
                    why: Dropped::Lost,
                });
                self.out.push_back(MemberAction::Changed);
            }
        }
    }

    /// A SWIM datagram on `from`'s link.
    pub fn handle_gossip(&mut self, from: NodeId, data: &[u8], now: u64) {
        self.rejoin.arm(now);
        match self.swim.receive(from, data, now) {
            Ok(effects) => self.swim_effects(effects),
            Err(error) => {
                // Spoofed or undecodable: the peer's fault. Refused by
                // foca: routine after a rejoin (datagrams to our old
                // incarnation).
                let counted = matches!(
                    error,
                    GossipError::Spoofed { .. } | GossipError::Undecodable(_)
                );
                self.out.push_back(MemberAction::Note(MemberNote::Refused {
                    from,
                    error,
                    counted,
                }));
            }
        }
    }

    /// Member `from` says it is stopping (its `Leaving`, on its own link:
    /// a member speaks for itself only).
    pub fn handle_leaving(&mut self, from: NodeId) {
        self.declare_down(from, true);
    }

    /// Member `from` lists the members it knows: hints, each worth a dial
    /// if it is not linked or gone.
    pub fn handle_members(&mut self, list: Vec<(NodeId, String)>) {
        for (id, listen) in list {
            if self.view.worth_hint(id) {
                self.dial(listen, true);
            }
        }
    }

    /// Fires SWIM's due timers.
    pub fn handle_timeout(&mut self, now: u64) {
        if self.view.is_stopping() {
            return;
        }
        let effects = self.swim.tick(now);
        self.swim_effects(effects);
        self.rejoin.arm(now);
        if self.rejoin.due(now) && self.swim.alive().next().is_none() {
            self.rejoin_round(now);
        }
    }

    /// SWIM holds no member alive and foca has gone idle
    /// (`membership/rejoin.rs`): dial the seeds and the members lost, and
    /// announce again to every member still linked.
    fn rejoin_round(&mut self, now: u64) {
        let linked: Vec<(NodeId, String)> = self
            .view
            .linked()
            .filter_map(|id| Some((id, self.view.member(id)?.listen.clone())))
            .collect();
        for (id, listen) in linked {
            let effects = self.swim.announce(id, listen, now);
            self.swim_effects(effects);
        }
        let (seeds, lost) = self.rejoin.addresses();
        for addr in seeds {
            self.dial(addr, false);
        }
        for addr in lost {
            self.dial(addr, true);
        }
    }

    /// This node is stopping: every member is dropped after a last
    /// `Leaving`, and no one is dialled again.
    pub fn handle_leave(&mut self) {
        for (id, member) in self.view.leave() {
            self.out.push_back(MemberAction::Dropped {
                id,
                member,
                why: Dropped::Leaving,
            });
        }
        self.dialling.clear();
    }

    /// What a failure detector decided, applied as SWIM's own are: the
    /// fault harness and tests give verdicts of their own this way (a
    /// live peer wrongly declared down, one seen again).
    pub fn handle_verdicts(&mut self, effects: Effects) {
        self.swim_effects(effects);
    }

    /// Carries out what SWIM decided, as far as the view is concerned.
    fn swim_effects(&mut self, effects: Effects) {
        if effects.dropped_timers > 0 {
            self.out
                .push_back(MemberAction::Note(MemberNote::TimersDropped {
                    timers: effects.dropped_timers,
                }));
        }
        for note in effects.notes {
            self.out
                .push_back(MemberAction::Note(MemberNote::Swim(note)));
        }
        for (to, listen, data) in effects.send {
            if self.view.member(to).is_some() {
                self.out.push_back(MemberAction::Gossip { to, data });
            } else if !self.view.has_left(to) {
                // No link yet: this datagram is lost (SWIM expects loss)
                // and the link will carry the next ones. (One that left
                // is not dialled: SWIM, not yet told, probes it until it
                // declares it down.)
                self.dial(listen, false);
            }
        }
        if effects.dropped_updates > 0 {
            self.out.push_back(MemberAction::Note(MemberNote::Screened {
                updates: effects.dropped_updates,
            }));
        }
        for (node, listen) in effects.hints {
            if self.view.worth_hint(node) {
                self.dial(listen, true);
            }
        }
        for change in effects.changes {
            match change {
                Change::Up { node, listen } => {
                    let (was_down, dial) = self.view.detected_up(node);
                    if was_down {
                        self.out
                            .push_back(MemberAction::Note(MemberNote::UpAgain { id: node }));
                        self.out.push_back(MemberAction::Changed);
                    }
                    if dial {
                        self.dial(listen, false);
                    }
                }
                Change::Down { node } => self.declare_down(node, false),
            }
        }
    }

    /// SWIM declared `id` down (or, with `left`, it said it is stopping):
    /// not live even if its connection still looks open (a partition
    /// hangs TCP silently), and that connection is dropped.
    fn declare_down(&mut self, id: NodeId, left: bool) {
        match self.view.declare_down(id, left) {
            Some(member) => {
                if !left {
                    self.rejoin.lost(&member.listen);
                }
                let why = if left { Dropped::Left } else { Dropped::Down };
                self.out
                    .push_back(MemberAction::Dropped { id, member, why });
            }
            None if id == self.view.me() => return,
            None => {
                self.out
                    .push_back(MemberAction::Note(MemberNote::DownUnlinked { id, left }));
            }
        }
        self.out.push_back(MemberAction::Changed);
    }
}
