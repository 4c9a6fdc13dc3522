//! A node's view of the cluster: which addresses it dials, which linked
//! members are live, which were declared down or said they left, and whom
//! a peer's word makes it dial. Pure state, like the protocol machines:
//! the daemon asks it before every dial and tells it every link that comes
//! up or goes down and every verdict of its failure detector; what it
//! returns says what to drop. The live members it reports ([`View::live`])
//! are what the read protocol and the commit protocol are told.
//!
//! The rules (docs/PROTOCOL.md, "Membership"):
//!
//! - A member is linked under the identity its link authenticated; a
//!   second link of the same member under another address is dropped
//!   (the first one stays).
//! - A member declared down (by the failure detector, or because it said
//!   it left) is not live even while a link to it stays up, until the
//!   detector sees it alive again: a partition hangs TCP silently.
//! - A member that left is not dialled again because a peer still names
//!   it, until the detector sees it back.
//! - An address a peer named (a member list, a gossip hint) buys
//!   [`HINT_ATTEMPTS`] connection attempts, then is forgotten unless it
//!   answered as a member; addresses the operator gave (seeds) are tried
//!   until dropped.
//! - Every set is bounded: at most `max_links` dialled addresses, and the
//!   oldest of `max_down` down or left members forgotten first.
//!
//! The view is generic over what the driver keeps per link (`L`, e.g. its
//! control channel) and per member (`M`, e.g. its queues), so there is one
//! table of each and nothing to keep in step.

mod membership;
pub mod swim;

pub use membership::{Dropped, MemberAction, MemberNote, Membership};
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_random;
#[cfg(test)]
mod tests_revocation;

use crate::coop::NodeId;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

/// Connection attempts an address named by a peer gets before it is
/// forgotten (until a peer names it again).
pub const HINT_ATTEMPTS: u32 = 3;

/// A linked member.
#[derive(Debug, PartialEq, Eq)]
pub struct Member<M> {
    /// The address it listens on, as its Hello said.
    pub listen: String,
    /// The address this node dialled to reach it (its link's key).
    pub addr: String,
    /// What the driver keeps for it.
    pub link: M,
}

/// Why an address is not dialled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoDial {
    /// This node is leaving, the address is its own, or it is dialled or
    /// linked already: nothing to do.
    Needless,
    /// `max_links` addresses are dialled already.
    Full,
}

/// What a link that came up is.
#[derive(Debug, PartialEq, Eq)]
pub enum LinkUp {
    /// A new member (`was_down`: the detector had declared it down, and
    /// it stays not live until the detector sees it alive).
    Joined {
        /// Whether it is still marked down.
        was_down: bool,
    },
    /// The member is linked under another address already: this link's
    /// address is dropped (the driver drops the link).
    Duplicate,
    /// No such address is dialled (dropped meanwhile): nothing to do.
    Unknown,
}

/// What a link that went down meant.
#[derive(Debug, PartialEq, Eq)]
pub enum LinkDown<M> {
    /// Nothing changed (the link will retry, or was not a member's).
    Nothing,
    /// A hinted address failed its last attempt: dropped, with its link.
    Forgotten,
    /// The member's own link: it is no longer live.
    Lost(Member<M>),
}

/// A bounded set that forgets its oldest entry first.
#[derive(Debug)]
struct Recent {
    cap: usize,
    set: BTreeSet<NodeId>,
    order: VecDeque<NodeId>,
}

impl Recent {
    fn new(cap: usize) -> Recent {
        Recent {
            cap: cap.max(1),
            set: BTreeSet::new(),
            order: VecDeque::new(),
        }
    }

    fn contains(&self, id: NodeId) -> bool {
        self.set.contains(&id)
    }

    fn insert(&mut self, id: NodeId) {
        if !self.set.insert(id) {
            return;
        }
        self.order.push_back(id);
        while self.set.len() > self.cap {
            match self.order.pop_front() {
                Some(old) => self.set.remove(&old),
                None => break,
            };
        }
    }

    fn remove(&mut self, id: NodeId) -> bool {
        let had = self.set.remove(&id);
        if had {
            self.order.retain(|&i| i != id);
        }
        had
    }

    fn len(&self) -> usize {
        self.set.len()
    }
}

/// One node's view of the cluster (see the module doc).
#[derive(Debug)]
pub struct View<L, M> {
    me: NodeId,
    listen: String,
    max_links: usize,
    stopping: bool,
    /// Dialled addresses and the driver's link to each.
    links: HashMap<String, L>,
    /// Hinted addresses not yet answered as a member, with failed
    /// attempts.
    hinted: HashMap<String, u32>,
    members: BTreeMap<NodeId, Member<M>>,
    /// Declared down: not live even while linked.
    down: Recent,
    /// Said they left (also down): not dialled on a peer's word.
    left: Recent,
}

impl<L, M> View<L, M> {
    /// The view of node `me`, listening on `listen`, alone; at most
    /// `max_links` dialled addresses and `max_down` remembered down or
    /// left members.
    pub fn new(me: NodeId, listen: String, max_links: usize, max_down: usize) -> Self {
        View {
            me,
            listen,
            max_links,
            stopping: false,
            links: HashMap::new(),
            hinted: HashMap::new(),
            members: BTreeMap::new(),
            down: Recent::new(max_down),
            left: Recent::new(max_down),
        }
    }

    /// Whether `addr` should be dialled now.
    pub fn may_dial(&self, addr: &str) -> Result<(), NoDial> {
        if self.stopping || addr == self.listen || self.links.contains_key(addr) {
            return Err(NoDial::Needless);
        }
        if self.members.values().any(|m| m.listen == addr) {
            return Err(NoDial::Needless);
        }
        // Addresses come from seeds, peers and gossip; each link retries
        // until dropped, so their number is bounded.
        if self.links.len() >= self.max_links {
            return Err(NoDial::Full);
        }
        Ok(())
    }

    /// `addr` is dialled now (after [`View::may_dial`]), over `link`;
    /// `hinted`: a peer named it, so it gets [`HINT_ATTEMPTS`].
    pub fn dialled(&mut self, addr: String, link: L, hinted: bool) {
        if hinted {
            self.hinted.insert(addr.clone(), 0);
        }
        self.links.insert(addr, link);
    }

    /// Whether a peer's word that `node` listens somewhere is worth a dial:
    /// not this node, not a linked member, not one that left.
    pub fn worth_hint(&self, node: NodeId) -> bool {
        node != self.me && !self.members.contains_key(&node) && !self.left.contains(node)
    }

    /// The link dialled to `addr` is up, to member `id` listening on
    /// `listen`; `member` makes what the driver keeps for it from the link.
    pub fn link_up(
        &mut self,
        addr: &str,
        id: NodeId,
        listen: String,
        member: impl FnOnce(&L) -> M,
    ) -> LinkUp {
        let Some(link) = self.links.get(addr) else {
            return LinkUp::Unknown;
        };
        if self.members.contains_key(&id) {
            self.hinted.remove(addr);
            self.links.remove(addr);
            return LinkUp::Duplicate;
        }
        let link = member(link);
        self.hinted.remove(addr);
        let addr = addr.to_string();
        self.members.insert(id, Member { listen, addr, link });
        LinkUp::Joined {
            was_down: self.down.contains(id),
        }
    }

    /// The link dialled to `addr` went down (`id`: the member it had
    /// linked, if it had).
    pub fn link_down(&mut self, addr: &str, id: Option<NodeId>) -> LinkDown<M> {
        let Some(id) = id else {
            let Some(failed) = self.hinted.get_mut(addr) else {
                return LinkDown::Nothing;
            };
            *failed += 1;
            if *failed < HINT_ATTEMPTS {
                return LinkDown::Nothing;
            }
            self.hinted.remove(addr);
            self.links.remove(addr);
            return LinkDown::Forgotten;
        };
        // Only the member's own link: a duplicate's end changes nothing.
        if self.members.get(&id).is_none_or(|m| m.addr != addr) {
            return LinkDown::Nothing;
        }
        match self.members.remove(&id) {
            Some(m) => LinkDown::Lost(m),
            None => LinkDown::Nothing,
        }
    }

    /// The failure detector sees `node` alive. Returns whether it was
    /// down (it is live again if linked) and whether to dial `node` (not
    /// linked).
    pub fn detected_up(&mut self, node: NodeId) -> (bool, bool) {
        self.left.remove(node);
        let was_down = self.down.remove(node);
        let dial = node != self.me && !self.members.contains_key(&node);
        (was_down, dial)
    }

    /// `id` is down (the failure detector says so, or it said it left,
    /// with `left`): not live even if its connection looks open, and that
    /// connection's address is dropped. Returns the member, if linked.
    pub fn declare_down(&mut self, id: NodeId, left: bool) -> Option<Member<M>> {
        if id == self.me {
            return None;
        }
        if left {
            self.left.insert(id);
        }
        self.down.insert(id);
        let m = self.members.remove(&id)?;
        self.links.remove(&m.addr);
        Some(m)
    }

    /// This node is leaving: it dials no one again; every member and link
    /// is dropped, the members returned (to be told).
    pub fn leave(&mut self) -> Vec<(NodeId, Member<M>)> {
        self.stopping = true;
        self.links.clear();
        self.hinted.clear();
        std::mem::take(&mut self.members).into_iter().collect()
    }

    /// This node's id.
    pub fn me(&self) -> NodeId {
        self.me
    }

    /// The most addresses dialled at once.
    pub fn max_links(&self) -> usize {
        self.max_links
    }

    /// Whether this node is leaving.
    pub fn is_stopping(&self) -> bool {
        self.stopping
    }

    /// The live members, this node first, then by id.
    pub fn live(&self) -> Vec<NodeId> {
        std::iter::once(self.me)
            .chain(self.live_peers().map(|(&id, _)| id))
            .collect()
    }

    /// The live members other than this node, by id.
    pub fn live_peers(&self) -> impl Iterator<Item = (&NodeId, &Member<M>)> {
        self.members
            .iter()
            .filter(|(id, _)| !self.down.contains(**id))
    }

    /// What this node tells a new member of: itself and its live members,
    /// with their listen addresses.
    pub fn advertised(&self) -> Vec<(NodeId, String)> {
        std::iter::once((self.me, self.listen.clone()))
            .chain(self.live_peers().map(|(&id, m)| (id, m.listen.clone())))
            .collect()
    }

    /// Linked member `id` (live or down), if linked.
    pub fn member(&self, id: NodeId) -> Option<&Member<M>> {
        self.members.get(&id)
    }

    /// Every linked member's id (live or down).
    pub fn linked(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.members.keys().copied()
    }

    /// Whether `id` said it left (and has not been seen back).
    pub fn has_left(&self, id: NodeId) -> bool {
        self.left.contains(id)
    }

    /// Whether `id` is declared down.
    pub fn is_down(&self, id: NodeId) -> bool {
        self.down.contains(id)
    }

    /// Whether `addr` is dialled (a link to it, up or retrying).
    pub fn is_dialled(&self, addr: &str) -> bool {
        self.links.contains_key(addr)
    }

    /// Dialled addresses, down members remembered: for tests and status.
    pub fn sizes(&self) -> (usize, usize) {
        (self.links.len(), self.down.len())
    }
}
