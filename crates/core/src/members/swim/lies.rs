//! The gossip a lying member sends: datagrams encoded as SWIM's own, with
//! updates about other members that the liar has no right to make. The
//! fault harness and the tests send them to check that [`super::screen`]
//! keeps one member from speaking for another; nothing in a node uses it.

use super::SwimId;
use foca::{Codec, PostcardCodec};

/// What a liar says about a member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lie {
    /// That it is suspect.
    Suspect,
    /// That it is down.
    Down,
}

/// A gossip datagram from `src` to `dst` carrying `updates` as they are:
/// whatever identity, incarnation and state the caller puts in them.
pub fn gossip(src: &SwimId, dst: &SwimId, updates: &[foca::Member<SwimId>]) -> Vec<u8> {
    use bytes::BufMut;
    let mut buf = Vec::new();
    let header = foca::Header {
        src: src.clone(),
        src_incarnation: 0,
        dst: dst.clone(),
        message: foca::Message::Gossip,
    };
    // Encoding into a Vec cannot fail: postcard's only errors are for a
    // full buffer.
    let _ = PostcardCodec.encode_header(&header, &mut buf);
    buf.put_u16(updates.len() as u16);
    for m in updates {
        let _ = PostcardCodec.encode_member(m, &mut buf);
    }
    buf
}

/// The strongest lie `src` can tell `dst` about `victim`: `lie` at an
/// incarnation no one can refute, once for the victim's identity and once
/// for a later identity of it, and `dst` itself called suspect.
pub fn about(src: &SwimId, dst: &SwimId, victim: &SwimId, lie: Lie) -> Vec<u8> {
    let state = match lie {
        Lie::Suspect => foca::State::Suspect,
        Lie::Down => foca::State::Down,
    };
    let later = SwimId {
        incarnation: u64::MAX,
        ..victim.clone()
    };
    let updates = [
        foca::Member::new(later, foca::Incarnation::MAX, state),
        foca::Member::new(victim.clone(), foca::Incarnation::MAX, state),
        foca::Member::new(dst.clone(), foca::Incarnation::MAX, foca::State::Suspect),
    ];
    gossip(src, dst, &updates)
}
