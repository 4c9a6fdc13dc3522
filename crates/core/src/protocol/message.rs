//! The messages live nodes exchange: a typed subset of what the core's
//! state machines say, plus what the protocol adds to check bytes and
//! measure peers. Nothing here names its sender: a message's sender is the
//! authenticated link it arrived on.

use super::{Digest, Status};
use crate::coop::{Msg, NodeId};

/// A block's digest as its manager recorded it, with the node whose
/// [`PeerMsg::Record`] it came from, as the manager says. Contents that do
/// not match it were sent by a liar, or the record was: a reader names
/// both, and the origin's copy tells which ([`Verdict`](super::Verdict)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// What the block's bytes hash to.
    pub digest: Digest,
    /// The node that recorded it.
    pub by: NodeId,
}

/// One message between two live nodes. `D` is a block's contents (bytes
/// with their digest in the daemon, the digest alone in the simulator).
///
/// Each variant goes one way between roles, named in its doc; the
/// receiving protocol accepts it only from a sender holding that role for
/// the block at that moment (`docs/PROTOCOL.md`, "Roles").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerMsg<K, D> {
    /// Reader to the block's manager: I missed `block`, serve me.
    Read {
        /// The block.
        block: K,
    },
    /// Node to the block's manager: is my copy the only cached one?
    /// (N-Chance)
    IsSinglet {
        /// The block.
        block: K,
    },
    /// Node to the block's manager: I no longer cache `block` in memory.
    Dropped {
        /// The block.
        block: K,
        /// My disk tier still holds it (the manager may forward a read
        /// to it when no memory has the block).
        on_disk: bool,
    },
    /// Node to the block's manager: drop every cached copy of `block`
    /// (`coopcache evict`); the sender has dropped its own. The manager
    /// invalidates each holder it knows.
    Evict {
        /// The block.
        block: K,
    },
    /// Node to the block's manager: I now cache `block`, obtained without
    /// asking you (from its Hash-Distributed partition owner, or as an
    /// N-Chance singlet a peer forwarded).
    Cached {
        /// The block.
        block: K,
    },
    /// Holder to the block's manager: the block you forwarded a read of to
    /// me is gone.
    NotHere {
        /// The block.
        block: K,
    },
    /// Reader to the block's manager, once, after the manager told it to
    /// read the block from the origin and record it: what its bytes hash to.
    Record {
        /// The block.
        block: K,
        /// The digest of the bytes the origin returned.
        digest: Digest,
    },
    /// Node to the block's manager: the recorded digest of `block`, please.
    HashOf {
        /// The block.
        block: K,
    },
    /// Manager to a holder: send `block` to `reader`.
    Forward {
        /// The block.
        block: K,
        /// Who wants it.
        reader: NodeId,
    },
    /// Manager to a reader: `holder` will send you `block`; its bytes must
    /// have this digest.
    Expect {
        /// The block.
        block: K,
        /// The recorded digest, and who recorded it.
        recorded: Recorded,
        /// The holder the read was forwarded to.
        holder: NodeId,
    },
    /// Manager to a reader: no cached copy can serve you; read `block` from
    /// the origin yourself (its bytes then cross the network once), and
    /// send a [`PeerMsg::Record`] of them if `record`.
    FetchOrigin {
        /// The block.
        block: K,
        /// Whether the reader is to record the digest.
        record: bool,
    },
    /// Manager to a node: the answer to [`PeerMsg::HashOf`].
    HashIs {
        /// The block.
        block: K,
        /// Its recorded digest and who recorded it, if any.
        recorded: Option<Recorded>,
    },
    /// Manager to a node: the answer to [`PeerMsg::IsSinglet`].
    Singlet {
        /// The block.
        block: K,
        /// Whether the asking node holds the only cached copy.
        singlet: bool,
    },
    /// Manager to a node: drop your copy of `block`.
    Invalidate {
        /// The block.
        block: K,
    },
    /// A block's contents, to the reader that asked for them.
    Data {
        /// The block.
        block: K,
        /// Its contents.
        data: D,
    },
    /// A node asked directly for a block it does not hold (a partition
    /// owner, a Direct host) to the reader.
    Missing {
        /// The block.
        block: K,
    },
    /// Reader to the block's Hash-Distributed partition owner: send me
    /// `block` if your partition holds it.
    PartitionRead {
        /// The block.
        block: K,
    },
    /// Direct client to its host: hand back `block`, which I parked with
    /// you.
    Reclaim {
        /// The block.
        block: K,
    },
    /// Node to a random peer: keep this singlet for the cluster, with
    /// `chances` recirculations left (N-Chance).
    Recirculate {
        /// The block.
        block: K,
        /// Recirculations left, at least 1.
        chances: u8,
        /// Its contents.
        data: D,
    },
    /// A reader to the block's partition owner (Hash-Distributed), or a
    /// Direct client to its host: keep this block.
    Place {
        /// The block.
        block: K,
        /// Its contents.
        data: D,
    },
    /// Round-trip probe; answered by [`PeerMsg::Pong`] with the nonce.
    Ping {
        /// Chosen by the sender.
        nonce: u64,
        /// The sender's memory, as it says.
        status: Status,
    },
    /// The answer to [`PeerMsg::Ping`].
    Pong {
        /// The ping's nonce.
        nonce: u64,
        /// The sender's memory, as it says.
        status: Status,
    },
}

impl<K: Copy, D> PeerMsg<K, D> {
    /// The block the message is about; `None` for pings.
    pub fn block(&self) -> Option<K> {
        use PeerMsg::*;
        match *self {
            Read { block }
            | IsSinglet { block }
            | Dropped { block, .. }
            | Evict { block }
            | Cached { block }
            | NotHere { block }
            | Record { block, .. }
            | HashOf { block }
            | Forward { block, .. }
            | Expect { block, .. }
            | FetchOrigin { block, .. }
            | HashIs { block, .. }
            | Singlet { block, .. }
            | Invalidate { block }
            | Data { block, .. }
            | Missing { block }
            | PartitionRead { block }
            | Reclaim { block }
            | Recirculate { block, .. }
            | Place { block, .. } => Some(block),
            Ping { .. } | Pong { .. } => None,
        }
    }

    /// Whether the message may be left unsent when its link is busy: a
    /// forwarded singlet (N-Chance's `Recirculate`) only. The paper's node
    /// drops a singlet no peer has room for; a peer whose link is backed
    /// up has no room now, and a forward queued there would delay the
    /// reads and answers behind it until they time out. Nothing else
    /// changes: the sender has told the manager `Dropped`, and only the
    /// receiver, taking the block, would have told it `Cached`.
    pub fn best_effort(&self) -> bool {
        matches!(self, PeerMsg::Recirculate { .. })
    }

    /// The message's name, for counters and logs.
    pub fn name(&self) -> &'static str {
        use PeerMsg::*;
        match self {
            Read { .. } => "Read",
            IsSinglet { .. } => "IsSinglet",
            Dropped { .. } => "Dropped",
            Evict { .. } => "Evict",
            Cached { .. } => "Cached",
            NotHere { .. } => "NotHere",
            Record { .. } => "Record",
            HashOf { .. } => "HashOf",
            Forward { .. } => "Forward",
            Expect { .. } => "Expect",
            FetchOrigin { .. } => "FetchOrigin",
            HashIs { .. } => "HashIs",
            Singlet { .. } => "Singlet",
            Invalidate { .. } => "Invalidate",
            Data { .. } => "Data",
            Missing { .. } => "Missing",
            PartitionRead { .. } => "PartitionRead",
            Reclaim { .. } => "Reclaim",
            Recirculate { .. } => "Recirculate",
            Place { .. } => "Place",
            Ping { .. } => "Ping",
            Pong { .. } => "Pong",
        }
    }

    /// The same message with its contents (if any) turned into `E` by `f`:
    /// the daemon hashes the bytes a frame brought into contents with a
    /// digest, off the protocol's task.
    pub fn map_data<E>(self, f: impl FnOnce(D) -> E) -> PeerMsg<K, E> {
        use PeerMsg::*;
        match self {
            Data { block, data } => Data {
                block,
                data: f(data),
            },
            Recirculate {
                block,
                chances,
                data,
            } => Recirculate {
                block,
                chances,
                data: f(data),
            },
            Place { block, data } => Place {
                block,
                data: f(data),
            },
            Read { block } => Read { block },
            IsSinglet { block } => IsSinglet { block },
            Dropped { block, on_disk } => Dropped { block, on_disk },
            Evict { block } => Evict { block },
            Cached { block } => Cached { block },
            NotHere { block } => NotHere { block },
            Record { block, digest } => Record { block, digest },
            HashOf { block } => HashOf { block },
            Forward { block, reader } => Forward { block, reader },
            Expect {
                block,
                recorded,
                holder,
            } => Expect {
                block,
                recorded,
                holder,
            },
            FetchOrigin { block, record } => FetchOrigin { block, record },
            HashIs { block, recorded } => HashIs { block, recorded },
            Singlet { block, singlet } => Singlet { block, singlet },
            Invalidate { block } => Invalidate { block },
            Missing { block } => Missing { block },
            PartitionRead { block } => PartitionRead { block },
            Reclaim { block } => Reclaim { block },
            Ping { nonce, status } => Ping { nonce, status },
            Pong { nonce, status } => Pong { nonce, status },
        }
    }
}

/// A state machine's message with no live form: what only a central
/// manager, Weighted LRU, writes or replicas send. A live node never runs
/// a machine that sends one; the protocol drops it and counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not part of the live protocol")]
pub struct NotLive(pub &'static str);

/// The machine messages that cross a live link as they are. Reads,
/// forwards, hand-backs and origin fetches depend on who sends them to
/// whom, so the protocol maps those itself.
impl<K, D> TryFrom<Msg<K, D>> for PeerMsg<K, D> {
    type Error = NotLive;

    fn try_from(msg: Msg<K, D>) -> Result<Self, NotLive> {
        Ok(match msg {
            Msg::Data { block, data, .. } => PeerMsg::Data { block, data },
            Msg::Dropped { block } => PeerMsg::Dropped {
                block,
                on_disk: false,
            },
            Msg::Cached { block } => PeerMsg::Cached { block },
            Msg::IsSinglet { block } => PeerMsg::IsSinglet { block },
            Msg::Singlet { block, singlet } => PeerMsg::Singlet { block, singlet },
            Msg::Recirculate {
                block,
                data,
                chances,
            } => PeerMsg::Recirculate {
                block,
                chances,
                data,
            },
            Msg::Place { block, data, .. } => PeerMsg::Place { block, data },
            Msg::Invalidate { block } => PeerMsg::Invalidate { block },
            Msg::Read { .. } => return Err(NotLive("Read (mapped by the protocol)")),
            Msg::Forward { .. } => return Err(NotLive("Forward (mapped by the protocol)")),
            Msg::Moved { .. } => return Err(NotLive("Moved (mapped by the protocol)")),
            Msg::NotHere { .. } => return Err(NotLive("NotHere (mapped by the protocol)")),
            Msg::Fetch { .. } => return Err(NotLive("Fetch (mapped by the protocol)")),
            Msg::Fetched { .. } => return Err(NotLive("Fetched")),
            Msg::Unplace { .. } => return Err(NotLive("Unplace")),
            Msg::Write { .. } => return Err(NotLive("Write")),
            Msg::Weight { .. } => return Err(NotLive("Weight")),
            Msg::WhereTo { .. } => return Err(NotLive("WhereTo")),
            Msg::GoTo { .. } => return Err(NotLive("GoTo")),
            Msg::Store { .. } => return Err(NotLive("Store")),
            Msg::Discard { .. } => return Err(NotLive("Discard")),
        })
    }
}
