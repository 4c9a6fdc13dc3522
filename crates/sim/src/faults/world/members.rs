//! Each node's membership in the harness: the core's [`Membership`] (its
//! view joined to SWIM), the machine every `coopcache node` runs, over
//! links modelled on the daemon's: a link task per dialled address that
//! connects after a handshake or is refused and tries again with the
//! daemon's backoff, links that hang in partitions (frames lost until SWIM
//! gives up on the member) and reset when their peer crashes. What a
//! node's membership decides is the set of live members its reads and
//! commits use; nothing else tells a node who is up.
//!
//! SWIM and the backoff run [`SPEED`] times faster than the daemon's, so
//! that detecting a crash or a partition takes a fraction of a seed's few
//! virtual seconds as it takes seconds of an operator's minutes.
//!
//! Liars run the same membership, and also gossip without pause that
//! honest members are suspect or down, with incarnations no one can
//! refute ([`lies::about`]).

use super::{Machine, MemberFrame, NodeId, Slot, World};
use crate::faults::net::Event;
use crate::faults::report::FaultKind;
use coopcache_core::members::swim::lies::{self, Lie};
use coopcache_core::members::swim::{self, Swim, SwimId};
use coopcache_core::members::{Dropped, MemberAction, MemberNote, Membership, View};
use rand::Rng;

/// What the harness keeps per dialled link and per member: nothing (the
/// world's link table is [`World::links`]).
pub(super) type Members = Membership<(), ()>;

/// How many times faster than the daemon's SWIM's periods and the link
/// backoff run here.
pub(super) const SPEED: u32 = 20;
/// A link task's first wait before dialling again, and its longest
/// (crates/node/src/link.rs), scaled.
const FIRST_BACKOFF: u64 = 100_000 / SPEED as u64;
const MAX_BACKOFF: u64 = 2_000_000 / SPEED as u64;
/// The view's bounds for the clusters of 3-6 nodes seeds draw; a larger
/// cluster (`--nodes`) gets one per node, as a daemon's bounds exceed its
/// cluster's members.
const MAX_LINKS: usize = 64;
const MAX_DOWN: usize = 64;

/// How the trace names a member's drop.
fn dropped_name(why: Dropped) -> &'static str {
    match why {
        Dropped::Lost => "dropped-lost",
        Dropped::Down => "dropped-down",
        Dropped::Left => "dropped-left",
        Dropped::Leaving => "dropped-leaving",
    }
}

/// Where node `n` listens (and is dialled).
pub(super) fn addr(n: NodeId) -> String {
    format!("10.0.{}.{}:7170", n / 256, n % 256)
}

/// The node listening at `addr`.
fn node_of(addr: &str) -> Option<NodeId> {
    let host = addr.strip_prefix("10.0.")?.strip_suffix(":7170")?;
    let (hi, lo) = host.split_once('.')?;
    Some(hi.parse::<NodeId>().ok()? * 256 + lo.parse::<NodeId>().ok()?)
}

/// Node `n`'s SWIM identity in incarnation `incarnation` of the harness:
/// a restart's identity beats any rejoin of an earlier one, as the
/// daemon's start time does.
fn swim_id(node: NodeId, incarnation: u32) -> SwimId {
    SwimId {
        node,
        listen: addr(node),
        incarnation: u64::from(incarnation + 1) << 32,
    }
}

impl World {
    /// A fresh membership for node `id`, dialling every other node as
    /// its seeds (an operator's `--join` list).
    pub(super) fn boot_members(&self, id: NodeId, incarnation: u32) -> Box<Members> {
        let seed = self.seed ^ u64::from(id) << 8 ^ u64::from(incarnation) << 40;
        let swim = Swim::with_config(swim_id(id, incarnation), seed, swim::config_at(SPEED));
        let nodes = self.plan.nodes as usize;
        let view = View::new(id, addr(id), MAX_LINKS.max(nodes), MAX_DOWN.max(nodes));
        let mut members = Membership::new(view, swim);
        for other in (0..self.plan.nodes).filter(|&n| n != id) {
            members.handle_join(addr(other));
        }
        Box::new(members)
    }

    fn members(&mut self, id: NodeId) -> Option<&mut Members> {
        self.timers.touch(id);
        match self.nodes.get_mut(id as usize)? {
            Slot::Up { members, .. } => Some(members),
            Slot::Down { .. } => None,
        }
    }

    /// Carries out what node `id`'s membership decided.
    pub(super) fn carry_members(&mut self, id: NodeId) {
        let mut changed = false;
        loop {
            let Some(m) = self.members(id) else { return };
            let Some(action) = m.poll() else { break };
            match action {
                MemberAction::Dial { addr, hinted } => {
                    m.dialled(addr.clone(), (), hinted);
                    if let Some(to) = node_of(&addr) {
                        self.dial(id, to, 0, FIRST_BACKOFF);
                    }
                }
                MemberAction::Gossip { to, data } => {
                    self.send_member(id, to, MemberFrame::Gossip(data.to_vec()));
                }
                MemberAction::Welcome { id: to } => {
                    let list = m.advertised();
                    self.send_member(id, to, MemberFrame::Members(list));
                }
                MemberAction::Changed => changed = true,
                MemberAction::Dropped { id: to, why, .. } => {
                    self.links.remove(&(id, to));
                    self.note((dropped_name(why), id, to, None));
                }
                MemberAction::Note(MemberNote::Screened { updates }) => {
                    self.counts.screened += updates as u64;
                }
                MemberAction::Note(note) => self.trace_line(|| format!("{id} {note:?}")),
                // No revocation lists here: none is ever in force.
                MemberAction::PassRevocation { .. } => {}
            }
        }
        if changed {
            self.members_changed(id);
        }
    }

    /// Node `id`'s live members changed: its reads and commits use them.
    fn members_changed(&mut self, id: NodeId) {
        let now = self.now;
        self.timers.touch(id);
        let Some(Slot::Up { proto, members, .. }) = self.nodes.get_mut(id as usize) else {
            return;
        };
        let mut live = members.live();
        live.sort_unstable();
        if proto.reads().members() == live {
            return;
        }
        proto.set_members(&live, now);
        self.counts.member_changes += 1;
        self.note(("members", id, id, None));
        self.collect(id);
        self.check_directory(id);
    }

    /// `from`'s link task dials `to` after `wait`; the handshake takes a
    /// few message delays.
    fn dial(&mut self, from: NodeId, to: NodeId, wait: u64, backoff: u64) {
        let Some(incarnation) = self.incarnation(from) else {
            return;
        };
        let (lo, hi) = self.plan.delay_us;
        let handshake = 3 * self.rng.random_range(lo..=hi);
        let event = Event::Dialled {
            from,
            incarnation,
            to,
            backoff,
        };
        self.queue.at(self.now + wait + handshake, event);
    }

    /// `from`'s dial of `to` connects, or is refused (`to` down or cut
    /// off) and tries again later while the address is still dialled.
    pub(super) fn dialled(&mut self, from: NodeId, incarnation: u32, to: NodeId, backoff: u64) {
        if self.incarnation(from) != Some(incarnation) {
            return; // the task died with its node
        }
        let to_incarnation = self.incarnation(to).filter(|_| !self.cut(from, to));
        let now = self.now;
        let a = addr(to);
        if !self.members(from).is_some_and(|m| m.view().is_dialled(&a)) {
            return; // dropped meanwhile: the task ended
        }
        if let Some(i) = to_incarnation {
            self.links.insert((from, to), i);
        }
        self.note(match to_incarnation {
            Some(_) => ("link-up", from, to, None),
            None => ("dial-refused", from, to, None),
        });
        let Some(m) = self.members(from) else { return };
        match to_incarnation {
            Some(_) => m.handle_link_up(&a, to, a.clone(), |_| (), now),
            None => m.handle_link_down(&a, None),
        }
        let retry = to_incarnation.is_none() && m.view().is_dialled(&a);
        self.carry_members(from);
        if retry {
            self.dial(from, to, backoff, (2 * backoff).min(MAX_BACKOFF));
        }
    }

    /// `from`'s link to `to` was reset: the task dials again.
    pub(super) fn reset(&mut self, from: NodeId, to: NodeId) {
        if self.links.remove(&(from, to)).is_none() {
            return;
        }
        self.note(("link-reset", from, to, None));
        let Some(m) = self.members(from) else { return };
        m.handle_link_down(&addr(to), Some(to));
        let retry = m.view().is_dialled(&addr(to));
        self.carry_members(from);
        if retry {
            self.dial(from, to, FIRST_BACKOFF, 2 * FIRST_BACKOFF);
        }
    }

    /// Node `node` crashed: its links are gone, and the peers' links to it
    /// reset a little later.
    pub(super) fn links_crashed(&mut self, node: NodeId) {
        self.links.retain(|&(from, _), _| from != node);
        let (lo, hi) = self.plan.delay_us;
        for from in (0..self.plan.nodes).filter(|&n| n != node) {
            let at = self.now + self.rng.random_range(lo..=hi);
            self.queue.at(at, Event::Reset { from, to: node });
        }
    }

    /// Puts a membership frame on `from`'s link to `to`, if it is up,
    /// through the faults: lost in a partition (the link hangs) or to a
    /// drop, delayed in order with the link's other frames.
    pub(super) fn send_member(&mut self, from: NodeId, to: NodeId, frame: MemberFrame) {
        let Some(&incarnation) = self.links.get(&(from, to)) else {
            return;
        };
        if self.cut(from, to) {
            return;
        }
        if !self.calm && self.rng.random_bool(self.plan.drop) {
            return self.counts.fault(FaultKind::Drop);
        }
        let (lo, hi) = self.plan.delay_us;
        let mut delay = self.rng.random_range(lo..=hi);
        if self.slow.contains(&from) || self.slow.contains(&to) {
            delay *= 10;
        }
        let event = Event::Member {
            from,
            to,
            incarnation,
            frame,
        };
        self.queue.send((from, to), self.now + delay, false, event);
    }

    /// A membership frame from `from` arrives at `to`.
    pub(super) fn member_frame(
        &mut self,
        from: NodeId,
        to: NodeId,
        incarnation: u32,
        frame: MemberFrame,
    ) {
        if self.incarnation(to) != Some(incarnation) {
            return;
        }
        let now = self.now;
        self.note(match frame {
            MemberFrame::Gossip(_) => ("gossip", from, to, None),
            MemberFrame::Members(_) => ("member-list", from, to, None),
        });
        let Some(m) = self.members(to) else { return };
        match frame {
            MemberFrame::Gossip(data) => m.handle_gossip(from, &data, now),
            MemberFrame::Members(list) => m.handle_members(list),
        }
        self.carry_members(to);
    }

    /// Liar `liar` gossips to an honest node that an honest member is
    /// suspect or down, with incarnations no one can refute.
    pub(super) fn gossip_lie(&mut self, liar: NodeId) {
        let honest: Vec<NodeId> = (0..self.plan.nodes)
            .filter(|&n| !self.plan.is_byzantine(n))
            .collect();
        if honest.is_empty() {
            return;
        }
        let victim = honest[self.rng.random_range(0..honest.len())];
        let to = honest[self.rng.random_range(0..honest.len())];
        let lie = match self.rng.random_bool(0.5) {
            true => Lie::Down,
            false => Lie::Suspect,
        };
        // Each node's identity as its SWIM has it now (a rejoin renews it),
        // so that the lie is addressed to, and about, who is there.
        let id = |n: NodeId| match self.nodes.get(n as usize) {
            Some(Slot::Up { members, .. }) => members.swim().identity().clone(),
            _ => swim_id(n, self.incarnation(n).unwrap_or_default()),
        };
        let data = lies::about(&id(liar), &id(to), &id(victim), lie);
        self.counts.fault(FaultKind::GossipLie);
        self.send_member(liar, to, MemberFrame::Gossip(data));
    }

    /// Fires every SWIM timer due now, in node order.
    pub(super) fn member_timeouts(&mut self) {
        let mut from = 0;
        loop {
            self.refresh_timers();
            let now = self.now;
            let Some(id) = self.timers.due_from(Machine::Members, from, now) else {
                break;
            };
            from = id + 1;
            let Some(m) = self.members(id) else { continue };
            m.handle_timeout(now);
            self.note(("swim-timer", id, id, None));
            self.carry_members(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{addr, node_of};

    #[test]
    fn an_address_names_its_node() {
        for n in [0, 5, 255, 256, 1000] {
            assert_eq!(node_of(&addr(n)), Some(n));
        }
        assert_eq!(node_of("10.0.0.5:7171"), None);
    }
}
