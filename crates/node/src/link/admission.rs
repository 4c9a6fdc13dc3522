//! Which inbound connections a node keeps: bounded before authentication
//! and per authenticated member, newest first.
//!
//! A connection is unauthenticated from `accept` until its `Hello` checks
//! out against its certificate, and must get there within
//! [`HELLO_DEADLINE`](super::HELLO_DEADLINE). At most
//! [`MAX_UNAUTHENTICATED`] wait at once; a new one evicts the oldest, so
//! that connections which never finish a handshake (a scanner, a flood of
//! plain TCP) delay a real member's by at most the time it takes the
//! flood to open that many more, instead of filling a table the member
//! cannot enter. After its `Hello`, a connection counts against its
//! member's [`LINKS_PER_MEMBER`]; a new one evicts that member's oldest
//! (a restarted peer's new link wins over its dead one; a member opening
//! links by the hundred holds only the last few), and all members' links
//! together are at most [`MAX_INBOUND`](super::MAX_INBOUND).

use coopcache_core::coop::NodeId;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::Notify;

/// Connections accepted and not yet authenticated, at most.
pub const MAX_UNAUTHENTICATED: usize = 64;

/// Inbound links one authenticated member holds at once, at most (a
/// member dials one; the rest are reconnections racing their
/// predecessor's end).
pub const LINKS_PER_MEMBER: usize = 4;

type Queue = VecDeque<(u64, Arc<Notify>)>;

/// One member's inbound links and the listen address their `Hello`s gave.
#[derive(Default)]
struct Links {
    listen: String,
    queue: Queue,
}

#[derive(Default)]
struct State {
    next: u64,
    unauthenticated: Queue,
    members: HashMap<NodeId, Links>,
    linked: usize,
}

/// A node's table of inbound connections.
#[derive(Default)]
pub struct Admission {
    state: Mutex<State>,
}

/// One connection's place in the table, given up on drop.
pub struct Ticket {
    admission: Arc<Admission>,
    seq: u64,
    evict: Arc<Notify>,
    member: Option<NodeId>,
}

/// Why an authenticated connection was refused a place.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// All members together hold [`MAX_INBOUND`](super::MAX_INBOUND).
    Full,
    /// The member is linked from another listen address: two processes
    /// run with one certificate (a copied service file), and the first
    /// keeps its place.
    Duplicate {
        /// Where the member already linked from says it listens.
        listen: String,
    },
}

impl Admission {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A connection just accepted: placed among the unauthenticated,
    /// evicting the oldest if there are [`MAX_UNAUTHENTICATED`].
    pub fn arrive(self: &Arc<Self>) -> Ticket {
        let mut s = self.lock();
        if s.unauthenticated.len() >= MAX_UNAUTHENTICATED
            && let Some((_, oldest)) = s.unauthenticated.pop_front()
        {
            oldest.notify_one();
        }
        s.next += 1;
        let seq = s.next;
        let evict = Arc::new(Notify::new());
        s.unauthenticated.push_back((seq, evict.clone()));
        Ticket {
            admission: self.clone(),
            seq,
            evict,
            member: None,
        }
    }

    /// `ticket`'s connection proved it is member `id`, listening at
    /// `listen`: moved to that member's links, evicting its oldest if it
    /// holds [`LINKS_PER_MEMBER`]; refused if all members together hold
    /// [`MAX_INBOUND`](super::MAX_INBOUND), or if the member's open links
    /// say it listens elsewhere.
    pub fn authenticated(
        &self,
        ticket: &mut Ticket,
        id: NodeId,
        listen: &str,
    ) -> Result<(), Refused> {
        let mut s = self.lock();
        s.unauthenticated.retain(|(seq, _)| *seq != ticket.seq);
        if let Some(links) = s.members.get(&id)
            && links.listen != listen
        {
            return Err(Refused::Duplicate {
                listen: links.listen.clone(),
            });
        }
        let links = s.members.get(&id).map_or(0, |l| l.queue.len());
        if links < LINKS_PER_MEMBER && s.linked >= super::MAX_INBOUND {
            return Err(Refused::Full);
        }
        let entry = s.members.entry(id).or_insert_with(|| Links {
            listen: listen.to_owned(),
            queue: Queue::new(),
        });
        let mut evicted = false;
        if entry.queue.len() >= LINKS_PER_MEMBER
            && let Some((_, oldest)) = entry.queue.pop_front()
        {
            oldest.notify_one();
            evicted = true;
        }
        entry.queue.push_back((ticket.seq, ticket.evict.clone()));
        if !evicted {
            s.linked += 1;
        }
        ticket.member = Some(id);
        Ok(())
    }

    /// Connections (unauthenticated, linked) in the table now.
    pub fn counts(&self) -> (usize, usize) {
        let s = self.lock();
        (s.unauthenticated.len(), s.linked)
    }
}

impl Ticket {
    /// Resolves once a newer connection took this one's place.
    pub async fn evicted(&self) {
        self.evict.notified().await
    }

    /// What [`Ticket::evicted`] waits on, for a task that also lends the
    /// ticket out.
    pub fn eviction(&self) -> Arc<Notify> {
        self.evict.clone()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut s = self.admission.lock();
        let seq = self.seq;
        match self.member {
            None => s.unauthenticated.retain(|(q, _)| *q != seq),
            Some(id) => {
                let Some(links) = s.members.get_mut(&id) else {
                    return;
                };
                let before = links.queue.len();
                links.queue.retain(|(q, _)| *q != seq);
                // An evicted link was taken off its queue (and not
                // uncounted) by the one that evicted it.
                let gone = links.queue.len() < before;
                if links.queue.is_empty() {
                    s.members.remove(&id);
                }
                if gone {
                    s.linked -= 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn is_evicted(t: &Ticket) -> bool {
        tokio::time::timeout(Duration::from_millis(10), t.evicted())
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn the_newest_connections_win() {
        let a = Arc::new(Admission::default());
        let tickets: Vec<Ticket> = (0..MAX_UNAUTHENTICATED + 1).map(|_| a.arrive()).collect();
        assert!(is_evicted(&tickets[0]).await, "the oldest makes room");
        assert!(!is_evicted(&tickets[1]).await);
        assert_eq!(a.counts().0, MAX_UNAUTHENTICATED);

        let mut links: Vec<Ticket> = Vec::new();
        for _ in 0..LINKS_PER_MEMBER + 2 {
            let mut t = a.arrive();
            a.authenticated(&mut t, 7, "10.0.0.7:7170").unwrap();
            links.push(t);
        }
        assert!(is_evicted(&links[0]).await && is_evicted(&links[1]).await);
        assert!(!is_evicted(&links[2]).await);
        assert_eq!(a.counts().1, LINKS_PER_MEMBER);
        // A second process with member 7's certificate, elsewhere.
        let mut twin = a.arrive();
        assert_eq!(
            a.authenticated(&mut twin, 7, "10.0.0.8:7170"),
            Err(Refused::Duplicate {
                listen: "10.0.0.7:7170".into()
            })
        );
        drop(twin);
        assert_eq!(a.counts().1, LINKS_PER_MEMBER);
        drop(links);
        assert_eq!(a.counts().1, 0);
        drop(tickets);
        assert_eq!(a.counts(), (0, 0));
    }
}
