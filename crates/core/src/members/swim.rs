//! Failure detection: SWIM (Das, Gupta and Motivala, 2002) through the
//! `foca` crate, not a protocol of our own. Foca's datagrams travel as
//! `Gossip` frames over the authenticated links; this module is sans-IO
//! like the rest of the core: the driver feeds it frames and the time (in
//! microseconds, as every machine here) and carries out what it returns
//! (datagrams to send, members up and down, what to log).
//!
//! Links alone notice a peer that closes or resets its connection; SWIM
//! also notices one that stops answering while its TCP connection still
//! looks open (a partition or a blackhole route, where TCP retransmits
//! silently for minutes).

use crate::coop::NodeId;
use bytes::Bytes;
use foca::{
    AccumulatingRuntime, Config, Foca, NoCustomBroadcast, OwnedNotification, PeriodicParams,
    PostcardCodec, Timer,
};
use rand_pcg_foca::Pcg64;
use std::collections::BTreeMap;
use std::num::{NonZeroU32, NonZeroUsize};
use std::time::Duration;

/// Largest SWIM datagram, in bytes (a `Gossip` frame's body).
pub const MAX_GOSSIP: usize = 1000;

/// SWIM probe period: each member probes one other member this often.
pub const PROBE_PERIOD: Duration = Duration::from_secs(1);

/// How long a direct probe waits for its ack before asking
/// [`INDIRECT_PROBES`] other members to probe on its behalf.
pub const PROBE_RTT: Duration = Duration::from_millis(400);

/// Members asked to probe indirectly.
pub const INDIRECT_PROBES: usize = 3;

/// How long a suspect member has to refute the suspicion before it is
/// declared down.
pub const SUSPECT_TO_DOWN: Duration = Duration::from_secs(3);

/// How often a member gossips its updates to [`GOSSIP_FANOUT`] others,
/// besides piggybacking them on probes.
pub const GOSSIP_PERIOD: Duration = Duration::from_millis(200);

/// Members each periodic gossip goes to.
pub const GOSSIP_FANOUT: usize = 3;

/// How often a member asks one other for its member list (heals a
/// cluster that joined through different seeds).
pub const ANNOUNCE_PERIOD: Duration = Duration::from_secs(10);

/// How often a member announces itself to members it holds down, so a
/// partition heals without an operator.
pub const ANNOUNCE_DOWN_PERIOD: Duration = Duration::from_secs(3);

/// Timers pending at once; foca keeps a handful per member, so this is
/// only reached if something is badly wrong (then timers are dropped and
/// counted, and foca recovers on its next periodic timer).
pub const MAX_TIMERS: usize = 16 * 1024;

/// A member as SWIM knows it: the node id is its address (one live
/// identity per id), and the incarnation counter makes a restarted or
/// rejoining node a new identity that wins over its old one.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SwimId {
    /// The node's id.
    pub node: NodeId,
    /// Where it accepts peers.
    pub listen: String,
    /// Its renew counter: the start time in microseconds since the Unix
    /// epoch, plus one per rejoin.
    pub incarnation: u64,
}

impl foca::Identity for SwimId {
    type Addr = NodeId;

    fn renew(&self) -> Option<Self> {
        Some(SwimId {
            incarnation: self.incarnation.wrapping_add(1),
            ..self.clone()
        })
    }

    fn addr(&self) -> NodeId {
        self.node
    }

    fn win_addr_conflict(&self, adversary: &Self) -> bool {
        self.incarnation > adversary.incarnation
    }
}

/// A change in who is live, for the driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// SWIM holds `node` alive (new, or back after being down).
    Up {
        /// The node.
        node: NodeId,
        /// Where to dial it.
        listen: String,
    },
    /// SWIM declared `node` down.
    Down {
        /// The node.
        node: NodeId,
    },
}

/// What the driver must do after feeding [`Swim`].
#[derive(Debug, Default)]
pub struct Effects {
    /// Datagrams to send: to node, its listen address (to dial if there is
    /// no link yet), the bytes for a `Gossip` frame.
    pub send: Vec<(NodeId, String, Bytes)>,
    /// Members a peer knows and this node may not: (id, listen address)
    /// to dial. Hints, not members: the link proves who answers there.
    pub hints: Vec<(NodeId, String)>,
    /// Updates a peer sent about other members, dropped unapplied
    /// ([`screen`]).
    pub dropped_updates: usize,
    /// Membership changes, in order.
    pub changes: Vec<Change>,
    /// Timers dropped because [`MAX_TIMERS`] were pending.
    pub dropped_timers: usize,
    /// What happened that an operator may want to read, in order.
    pub notes: Vec<Note>,
}

/// Something SWIM did that changes no membership but is worth a log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// Peers declared this node down; it rejoined as a new incarnation.
    Rejoined {
        /// The new incarnation.
        incarnation: u64,
    },
    /// This node was declared down and cannot rejoin.
    Defunct,
    /// Foca refused a call (an announce, a timer): routine after a rejoin.
    Refused {
        /// The call.
        call: &'static str,
        /// Foca's reason.
        error: String,
    },
}

impl Effects {
    /// Appends `more`, in order.
    fn extend(&mut self, more: Effects) {
        self.send.extend(more.send);
        self.hints.extend(more.hints);
        self.dropped_updates += more.dropped_updates;
        self.changes.extend(more.changes);
        self.dropped_timers += more.dropped_timers;
        self.notes.extend(more.notes);
    }
}

/// Why a gossip frame was refused.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum GossipError {
    /// The datagram claims to come from another node than the link's
    /// certificate-authenticated peer.
    #[error("gossip from node {from} claims to come from node {claimed}")]
    Spoofed {
        /// The link's peer.
        from: NodeId,
        /// The datagram's claimed sender.
        claimed: NodeId,
    },
    /// Not a SWIM datagram: its header does not decode.
    #[error("undecodable gossip: {0}")]
    Undecodable(String),
    /// Foca refused the datagram (too big, a bad body, addressed to an
    /// identity we no longer have, from ourselves); some of these are
    /// routine after a rejoin.
    #[error("gossip refused: {0}")]
    Refused(String),
}

/// The settings every member must share (documented in docs/PROTOCOL.md).
pub fn config() -> Config {
    let mut c = Config::new_lan(NonZeroU32::new(16).unwrap_or(NonZeroU32::MIN));
    c.probe_period = PROBE_PERIOD;
    c.probe_rtt = PROBE_RTT;
    c.num_indirect_probes = NonZeroUsize::new(INDIRECT_PROBES).unwrap_or(NonZeroUsize::MIN);
    c.suspect_to_down_after = SUSPECT_TO_DOWN;
    c.max_packet_size = NonZeroUsize::new(MAX_GOSSIP).unwrap_or(NonZeroUsize::MIN);
    c.notify_down_members = true;
    c.periodic_gossip = Some(PeriodicParams {
        frequency: GOSSIP_PERIOD,
        num_members: NonZeroUsize::new(GOSSIP_FANOUT).unwrap_or(NonZeroUsize::MIN),
    });
    c.periodic_announce = Some(PeriodicParams {
        frequency: ANNOUNCE_PERIOD,
        num_members: NonZeroUsize::MIN,
    });
    c.periodic_announce_to_down_members = Some(PeriodicParams {
        frequency: ANNOUNCE_DOWN_PERIOD,
        num_members: NonZeroUsize::new(2).unwrap_or(NonZeroUsize::MIN),
    });
    c
}

/// [`config`] with every period and timeout divided by `speed`, for a
/// simulated cluster that must see many failures and rejoins within a short
/// virtual run: the protocol is the same, only the clock runs faster.
pub fn config_at(speed: u32) -> Config {
    let speed = speed.max(1);
    let mut c = config();
    c.probe_period /= speed;
    c.probe_rtt /= speed;
    c.suspect_to_down_after /= speed;
    for p in [
        &mut c.periodic_gossip,
        &mut c.periodic_announce,
        &mut c.periodic_announce_to_down_members,
    ]
    .into_iter()
    .flatten()
    {
        p.frequency /= speed;
    }
    c
}

type SwimFoca = Foca<SwimId, PostcardCodec, Pcg64, NoCustomBroadcast>;

/// One node's SWIM failure detector.
pub struct Swim {
    foca: SwimFoca,
    runtime: AccumulatingRuntime<SwimId>,
    /// Foca's timers by due time in microseconds (and a sequence number
    /// to keep equal times apart).
    timers: BTreeMap<(u64, u64), Timer<SwimId>>,
    seq: u64,
    /// Foca's incarnation of this node, as its last datagram said:
    /// suspicions of a later one are lies ([`screen`]).
    incarnation: foca::Incarnation,
    /// How often foca announces to members it declared down, in
    /// microseconds: a node with no member alive rejoins as often.
    announce_down_every: u64,
}

impl std::fmt::Debug for Swim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Swim")
            .field("identity", self.foca.identity())
            .field("timers", &self.timers.len())
            .field("incarnation", &self.incarnation)
            .finish_non_exhaustive()
    }
}

impl Swim {
    /// A detector for node `me`, with `seed` for foca's random member
    /// choices and [`config`]'s settings.
    pub fn new(me: SwimId, seed: u64) -> Swim {
        Swim::with_config(me, seed, config())
    }

    /// A detector with other settings (tests shorten the periods).
    pub fn with_config(me: SwimId, seed: u64, config: Config) -> Swim {
        let rng = Pcg64::new(u128::from(seed) | (u128::from(me.node) << 64), 0xa02b);
        let announce_down = config
            .periodic_announce_to_down_members
            .as_ref()
            .map_or(ANNOUNCE_DOWN_PERIOD, |p| p.frequency);
        let announce_down_every = u64::try_from(announce_down.as_micros()).unwrap_or(u64::MAX);
        Swim {
            foca: Foca::new(me, config, rng, PostcardCodec),
            runtime: AccumulatingRuntime::new(),
            timers: BTreeMap::new(),
            seq: 0,
            incarnation: 0,
            announce_down_every,
        }
    }

    /// How often foca announces to members it declared down
    /// (microseconds).
    pub fn announce_down_every(&self) -> u64 {
        self.announce_down_every
    }

    /// This node's current identity (its incarnation changes when it
    /// rejoins after being declared down).
    pub fn identity(&self) -> &SwimId {
        self.foca.identity()
    }

    /// Asks `node` (just linked, incarnation unknown) to add us and send
    /// its member list: foca accepts an announce addressed to any
    /// incarnation of the node.
    pub fn announce(&mut self, node: NodeId, listen: String, now: u64) -> Effects {
        let dst = SwimId {
            node,
            listen,
            incarnation: 0,
        };
        let refused = self.foca.announce(dst, &mut self.runtime).err();
        let mut effects = self.drain(now);
        if let Some(e) = refused {
            effects.notes.push(Note::Refused {
                call: "announce",
                error: e.to_string(),
            });
        }
        effects
    }

    /// A `Gossip` frame from `from` (the link's authenticated peer).
    pub fn receive(&mut self, from: NodeId, data: &[u8], now: u64) -> Result<Effects, GossipError> {
        // Members are authenticated by certificate; a datagram speaks for
        // its sender only (see `screen`).
        if data.len() > MAX_GOSSIP {
            return Err(GossipError::Refused(format!(
                "a datagram of {} bytes, more than {MAX_GOSSIP}",
                data.len()
            )));
        }
        let screened = screen::screen(data, from, self.foca.identity(), self.incarnation)?;
        let fit = screened.data.as_deref().unwrap_or(data);
        let result = self.foca.handle_data(fit, &mut self.runtime);
        let mut effects = self.drain(now);
        result.map_err(|e| GossipError::Refused(e.to_string()))?;
        let me = self.foca.identity().node;
        effects.hints = screened.hints;
        effects
            .hints
            .retain(|(node, _)| *node != me && !self.alive().any(|m| m == *node));
        effects.dropped_updates = screened.dropped;
        Ok(effects)
    }

    /// Fires the timers due by `now`.
    pub fn tick(&mut self, now: u64) -> Effects {
        let mut effects = Effects::default();
        while let Some(entry) = self.timers.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let timer = entry.remove();
            if let Err(e) = self.foca.handle_timer(timer, &mut self.runtime) {
                effects.notes.push(Note::Refused {
                    call: "timer",
                    error: e.to_string(),
                });
            }
            let more = self.drain(now);
            effects.extend(more);
        }
        effects
    }

    /// When the next timer is due, if any.
    pub fn next_due(&self) -> Option<u64> {
        self.timers.keys().next().map(|&(at, _)| at)
    }

    /// Ids of the members SWIM holds alive or suspect.
    pub fn alive(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.foca.iter_members().map(|m| m.id().node)
    }

    /// Everything foca asked for during the last call.
    fn drain(&mut self, now: u64) -> Effects {
        let mut effects = Effects::default();
        while let Some((to, data)) = self.runtime.to_send() {
            if let Some(incarnation) = screen::own_incarnation(&data) {
                self.incarnation = incarnation;
            }
            effects.send.push((to.node, to.listen, data));
        }
        while let Some((after, timer)) = self.runtime.to_schedule() {
            if self.timers.len() >= MAX_TIMERS {
                effects.dropped_timers += 1;
                continue;
            }
            self.seq += 1;
            let after = u64::try_from(after.as_micros()).unwrap_or(u64::MAX);
            self.timers
                .insert((now.saturating_add(after), self.seq), timer);
        }
        while let Some(n) = self.runtime.to_notify() {
            match n {
                OwnedNotification::MemberUp(id) => effects.changes.push(Change::Up {
                    node: id.node,
                    listen: id.listen,
                }),
                OwnedNotification::MemberDown(id) => {
                    effects.changes.push(Change::Down { node: id.node })
                }
                // A member's new incarnation (a restart, an upgrade)
                // replaced its old one while that still looked alive:
                // foca changes no liveness, so says no `MemberUp`, but
                // the node must hear the member is up (one that said it
                // left is dialled again only then). If the new one is
                // not active either, foca's `MemberUp` follows when it is.
                OwnedNotification::Rename(_, new)
                    if self.foca.iter_members().any(|m| *m.id() == new) =>
                {
                    effects.changes.push(Change::Up {
                        node: new.node,
                        listen: new.listen,
                    })
                }
                OwnedNotification::Rejoin(id) => effects.notes.push(Note::Rejoined {
                    incarnation: id.incarnation,
                }),
                OwnedNotification::Defunct => effects.notes.push(Note::Defunct),
                // Foca's other notifications (active, idle) change nothing
                // the node acts on.
                _ => {}
            }
        }
        effects
    }
}

pub mod lies;
pub mod screen;

#[cfg(test)]
pub(super) mod tests;
