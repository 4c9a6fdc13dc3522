//! What a member may tell SWIM: a datagram speaks for its sender only.
//!
//! SWIM disseminates membership by gossip: every datagram piggybacks
//! updates ("b is suspect at incarnation 7", "c is down") that the receiver
//! applies as if it had seen them itself. Between members that each hold
//! only their own certificate that is a hole: one member could declare
//! any other down with an incarnation it can never refute, and the
//! cluster would drop it (issue 39). Every datagram is therefore screened
//! before foca sees it:
//!
//! - the header must name the link's authenticated peer as its source;
//! - an update about the sender itself is kept only if it is the sender's
//!   current identity, alive (its refutation of a suspicion);
//! - an update about this node is kept only if it suspects this node's
//!   current incarnation or an older one (so that this node refutes it),
//!   never a "down" and never a suspicion of an incarnation this node has
//!   not reached (foca would rejoin under a new identity, over and over);
//! - an update about a third member is never applied: a member is
//!   suspected and declared down only by this node's own probes (direct,
//!   then through [`INDIRECT_PROBES`](super::INDIRECT_PROBES) others), and
//!   one it has not met is only a hint, an address to dial; the link then
//!   proves who is there, and the member speaks for itself.
//!
//! What this costs: a member that stops answering is declared down by each
//! node after that node's own probes miss it, not after the first node's:
//! with N members a node probes each one every N probe periods at most,
//! so detection grows with N (a process that exits or a connection that
//! resets is still noticed at once, by its links).

use super::{GossipError, SwimId};
use crate::coop::NodeId;
use bytes::BufMut;
use foca::{Codec, Incarnation, Member, Message, PostcardCodec, State};

/// Hints kept from one datagram; the rest are dropped.
pub const MAX_HINTS: usize = 16;

/// A datagram fit for foca, and what was taken out of it.
#[derive(Debug, Default)]
pub struct Screened {
    /// The datagram to hand to foca instead of the one received, if any
    /// update was taken out (`None`: the one received, unchanged).
    pub data: Option<Vec<u8>>,
    /// Third members the sender knows: (id, listen address) to dial.
    pub hints: Vec<(NodeId, String)>,
    /// Updates dropped (about third members, or lies about this node).
    pub dropped: usize,
}

/// Screens `data`, a datagram that arrived on `from`'s link, for the node
/// whose SWIM identity is `me` at foca incarnation `incarnation`.
pub fn screen(
    data: &[u8],
    from: NodeId,
    me: &SwimId,
    incarnation: Incarnation,
) -> Result<Screened, GossipError> {
    let mut codec = PostcardCodec;
    let mut rest = data;
    let header = Codec::<SwimId>::decode_header(&mut codec, &mut rest)
        .map_err(|e| GossipError::Undecodable(e.to_string()))?;
    if header.src.node != from {
        return Err(GossipError::Spoofed {
            from,
            claimed: header.src.node,
        });
    }
    match header.message {
        // No member sends custom broadcasts.
        Message::Broadcast => return Err(GossipError::Refused("custom broadcast".into())),
        // No updates to screen (foca refuses an announce with any).
        Message::Announce => return Ok(Screened::default()),
        _ => {}
    }
    if rest.len() < 2 {
        // Nothing piggybacked (or one stray byte, which foca refuses).
        return Ok(Screened::default());
    }
    let count = u16::from_be_bytes([rest[0], rest[1]]);
    rest = &rest[2..];
    let mut kept: Vec<Member<SwimId>> = Vec::new();
    let mut out = Screened::default();
    for _ in 0..count {
        let member = Codec::<SwimId>::decode_member(&mut codec, &mut rest)
            .map_err(|e| GossipError::Undecodable(e.to_string()))?;
        let about = member.id();
        let keep = if about.node == from {
            *about == header.src && member.state() == State::Alive
        } else if about.node == me.node {
            *about == *me && member.state() == State::Suspect && member.incarnation() <= incarnation
        } else {
            if member.state() == State::Alive && out.hints.len() < MAX_HINTS {
                out.hints.push((about.node, about.listen.clone()));
            }
            false
        };
        match keep {
            true => kept.push(member),
            false => out.dropped += 1,
        }
    }
    if out.dropped == 0 {
        return Ok(out);
    }
    let mut buf = Vec::with_capacity(data.len());
    Codec::<SwimId>::encode_header(&mut codec, &header, &mut buf)
        .map_err(|e| GossipError::Undecodable(e.to_string()))?;
    if !kept.is_empty() || header.message == Message::Feed {
        buf.put_u16(kept.len() as u16);
        for member in &kept {
            Codec::<SwimId>::encode_member(&mut codec, member, &mut buf)
                .map_err(|e| GossipError::Undecodable(e.to_string()))?;
        }
    }
    out.data = Some(buf);
    Ok(out)
}

/// The foca incarnation in the header of a datagram this node sends.
pub fn own_incarnation(data: &[u8]) -> Option<Incarnation> {
    let mut rest = data;
    Codec::<SwimId>::decode_header(&mut PostcardCodec, &mut rest)
        .ok()
        .map(|h| h.src_incarnation)
}
