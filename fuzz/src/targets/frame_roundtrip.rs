//! What this node writes to a peer: any `Wire` (built with `arbitrary`
//! through a mirror of the core's `PeerMsg`, which has no `Arbitrary`
//! impl) encoded by `frame::encode`, checked by `frame::body_len` and
//! decoded by `frame::decode`. Beyond not panicking: the header announces
//! the body's length; the frame decodes to the same value once the
//! encoder's documented cuts are applied (names to 255 bytes at a character
//! boundary, at most 1024 members), except the values the decoder must
//! refuse (gossip over `MAX_GOSSIP`, a recirculation with 0 or more than
//! `MAX_CHANCES` chances), which are refused with an error.

use arbitrary::Arbitrary;
use bytes::{Bytes, BytesMut};
use coopcache_core::coop::MAX_CHANCES;
use coopcache_core::protocol::{BlockId, Digest, PeerMsg, Recorded, Status};
use coopcache_node::frame::{
    HEADER, MAX_GOSSIP, MAX_MEMBERS, MAX_NAME, RELEASE_SINCE, Wire, body_len, decode, encode,
};

#[derive(Arbitrary, Debug)]
enum AnyWire {
    Hello(u16, u32, String, String, u32, String),
    Members(Vec<(u32, String)>),
    Gossip(Vec<u8>),
    Revoked(Vec<u8>),
    Peer(AnyMsg),
}

#[derive(Arbitrary, Debug)]
enum AnyMsg {
    Read(B),
    IsSinglet(B),
    Dropped(B, bool),
    Evict(B),
    Cached(B),
    NotHere(B),
    Record(B, D),
    HashOf(B),
    Forward(B, u32),
    Expect(B, D, u32, u32),
    FetchOrigin(B, bool),
    HashIs(B, Option<(D, u32)>),
    Singlet(B, bool),
    Invalidate(B),
    Data(B, Vec<u8>),
    Missing(B),
    PartitionRead(B),
    Reclaim(B),
    Recirculate(B, u8, Vec<u8>),
    Place(B, Vec<u8>),
    Ping(u64, S),
    Pong(u64, S),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct B(u64, u32, u32);

#[derive(Arbitrary, Debug, Clone, Copy)]
struct D([u8; 32], u32);

impl From<B> for BlockId {
    fn from(B(file, index, route): B) -> BlockId {
        BlockId { file, index, route }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct S(u32, u32, u64, u32, bool, [u64; 8]);

impl From<S> for Status {
    fn from(S(capacity, cached, cached_bytes, foreign, idle, n): S) -> Status {
        Status {
            capacity,
            cached,
            cached_bytes,
            foreign,
            idle,
            reads: coopcache_core::protocol::ReadCounts {
                served: [n[0], n[1], n[2], n[3], n[4]],
                failed: n[5],
                errors: n[6],
                violations: n[7],
            },
        }
    }
}

impl From<D> for Digest {
    fn from(D(hash, len): D) -> Digest {
        Digest { hash, len }
    }
}

fn msg(m: AnyMsg) -> PeerMsg<BlockId, Bytes> {
    use PeerMsg::*;
    match m {
        AnyMsg::Read(b) => Read { block: b.into() },
        AnyMsg::IsSinglet(b) => IsSinglet { block: b.into() },
        AnyMsg::Dropped(b, on_disk) => Dropped {
            block: b.into(),
            on_disk,
        },
        AnyMsg::Cached(b) => Cached { block: b.into() },
        AnyMsg::NotHere(b) => NotHere { block: b.into() },
        AnyMsg::Record(b, d) => Record {
            block: b.into(),
            digest: d.into(),
        },
        AnyMsg::HashOf(b) => HashOf { block: b.into() },
        AnyMsg::Forward(b, reader) => Forward {
            block: b.into(),
            reader,
        },
        AnyMsg::Expect(b, d, by, holder) => Expect {
            block: b.into(),
            recorded: Recorded {
                digest: d.into(),
                by,
            },
            holder,
        },
        AnyMsg::FetchOrigin(b, record) => FetchOrigin {
            block: b.into(),
            record,
        },
        AnyMsg::HashIs(b, d) => HashIs {
            block: b.into(),
            recorded: d.map(|(d, by)| Recorded {
                digest: d.into(),
                by,
            }),
        },
        AnyMsg::Singlet(b, singlet) => Singlet {
            block: b.into(),
            singlet,
        },
        AnyMsg::Invalidate(b) => Invalidate { block: b.into() },
        AnyMsg::Evict(b) => Evict { block: b.into() },
        AnyMsg::Data(b, data) => Data {
            block: b.into(),
            data: data.into(),
        },
        AnyMsg::Missing(b) => Missing { block: b.into() },
        AnyMsg::PartitionRead(b) => PartitionRead { block: b.into() },
        AnyMsg::Reclaim(b) => Reclaim { block: b.into() },
        AnyMsg::Recirculate(b, chances, data) => Recirculate {
            block: b.into(),
            chances,
            data: data.into(),
        },
        AnyMsg::Place(b, data) => Place {
            block: b.into(),
            data: data.into(),
        },
        AnyMsg::Ping(nonce, s) => Ping {
            nonce,
            status: s.into(),
        },
        AnyMsg::Pong(nonce, s) => Pong {
            nonce,
            status: s.into(),
        },
    }
}

fn wire(w: AnyWire) -> Wire {
    match w {
        AnyWire::Hello(version, node, name, listen, block_size, release) => Wire::Hello {
            version,
            node,
            name,
            listen,
            block_size,
            release,
        },
        AnyWire::Members(m) => Wire::Members(m),
        AnyWire::Gossip(g) => Wire::Gossip(g.into()),
        AnyWire::Revoked(c) => Wire::Revoked(c.into()),
        AnyWire::Peer(m) => Wire::Peer(msg(m)),
    }
}

/// `s` as the encoder writes it: at most `MAX_NAME` bytes, cut at a
/// character boundary.
fn cut(s: &str) -> String {
    let mut end = s.len().min(MAX_NAME);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// What `w` decodes to, or `None` if the decoder must refuse it.
fn expected(w: &Wire) -> Option<Wire> {
    Some(match w {
        Wire::Hello {
            version,
            node,
            name,
            listen,
            block_size,
            release,
        } => Wire::Hello {
            version: *version,
            node: *node,
            name: cut(name),
            listen: cut(listen),
            block_size: *block_size,
            // Version 14's Hello has no release.
            release: match *version >= RELEASE_SINCE {
                true => cut(release),
                false => String::new(),
            },
        },
        Wire::Members(m) => Wire::Members(
            m.iter()
                .take(MAX_MEMBERS)
                .map(|(id, a)| (*id, cut(a)))
                .collect(),
        ),
        Wire::Gossip(g) if g.len() > MAX_GOSSIP => return None,
        Wire::Revoked(c) if c.len() > coopcache_node::revocation::MAX_CRL => return None,
        Wire::Peer(PeerMsg::Recirculate { chances, .. })
            if *chances == 0 || *chances > MAX_CHANCES =>
        {
            return None;
        }
        w => w.clone(),
    })
}

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    let Ok(w) =
        <AnyWire as arbitrary::Arbitrary>::arbitrary_take_rest(arbitrary::Unstructured::new(data))
    else {
        return;
    };
    let w = wire(w);
    let mut buf = BytesMut::new();
    encode(&w, &mut buf);
    let header = *buf.first_chunk::<HEADER>().expect("a header");
    let len = body_len(header, usize::MAX).expect("a nonempty frame");
    assert_eq!(len, buf.len() - HEADER);
    let got = decode(buf.freeze().slice(HEADER..));
    match expected(&w) {
        Some(want) => assert_eq!(got, Ok(want)),
        None => assert!(got.is_err(), "{w:?} was accepted"),
    }
}
