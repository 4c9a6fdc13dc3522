//! The wire format between nodes (docs/PROTOCOL.md): length-prefixed,
//! versioned binary frames carrying the core's protocol messages
//! ([`PeerMsg`]) and the few the daemon adds (`Hello`, `Members`,
//! `Gossip`). Every length is checked against a limit before anything is
//! allocated, decoding never panics on any input, and encoding covers
//! every message the core can send.

mod commit;
mod list;
mod lock;
mod warm;

pub use list::NAME_MAX;
pub(crate) use list::put_listing;

use crate::origin::PathVersion;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use coopcache_core::c2cfs::exclusive::CommitMsg;
use coopcache_core::coop::NodeId;
use coopcache_core::protocol::{BlockId, Digest, PeerMsg, Recorded, Status};

/// The newest protocol version this build speaks. A link speaks the
/// newest version both ends know, agreed in its TLS handshake
/// ([`crate::version`]); this build also speaks
/// [`OLDEST_VERSION`](crate::version::OLDEST_VERSION), for a rolling
/// upgrade.
pub const PROTOCOL_VERSION: u16 = 15;

/// This build's release (`coopcache --version`), which its `Hello` names
/// from protocol version 15 on.
pub const RELEASE: &str = env!("CARGO_PKG_VERSION");

/// The protocol version whose `Hello` first carries the release.
pub const RELEASE_SINCE: u16 = 15;

/// First bytes of every `Hello`, so a stray client is told apart from a
/// peer of another version.
pub const MAGIC: [u8; 4] = *b"COOP";

/// Bytes of a frame's header: a `u32` length (big-endian) counting the kind
/// byte and the body.
pub const HEADER: usize = 4;

/// Most members one `Members` frame lists.
pub const MAX_MEMBERS: usize = 1024;

/// Longest node name or address string.
pub const MAX_NAME: usize = 255;

/// A frame's body beyond the block data it may carry.
pub const MAX_OVERHEAD: usize = 1024;

/// Largest SWIM datagram a `Gossip` frame carries (foca's
/// `max_packet_size`): within [`MAX_OVERHEAD`], so it fits any node's
/// frame limit whatever its block size.
pub use coopcache_core::members::swim::MAX_GOSSIP;

/// A frame between two nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wire {
    /// First frame on every connection, both ways.
    Hello {
        /// The protocol version the link agreed on in its TLS handshake
        /// ([`crate::version`]); each end checks the other's.
        version: u16,
        /// The sender's node id.
        node: NodeId,
        /// The sender's name (its certificate's).
        name: String,
        /// Where the sender accepts peers (`host:port`).
        listen: String,
        /// The sender's block size in bytes; must equal the receiver's.
        block_size: u32,
        /// The sender's release (`coopcache --version`): on the wire from
        /// version 15 on, empty from a version-14 peer.
        release: String,
    },
    /// The members the sender knows (id, listen address), so a node that
    /// joined through one seed meets the rest.
    Members(Vec<(NodeId, String)>),
    /// One SWIM datagram of the failure detector (the `foca` crate's
    /// encoding), at most [`MAX_GOSSIP`] bytes. Carried over the
    /// authenticated links, never plain UDP: gossip decides who is live
    /// and so who manages which files.
    Gossip(Bytes),
    /// The sender is stopping (a clean shutdown): its peers drop it at
    /// once, as a member that left rather than one that failed. It can
    /// only ever be about the sender, whom the link authenticated.
    Leaving,
    /// A certificate revocation list signed by the cluster CA (DER, at
    /// most [`MAX_CRL`](crate::revocation::MAX_CRL) bytes): believed for
    /// its signature, whoever carries it (`crate::revocation`).
    Revoked(Bytes),
    /// A message of the core's protocol; block contents are bytes (the
    /// receiver computes their digest itself).
    Peer(PeerMsg<BlockId, Bytes>),
    /// A message of the core's C2Cfs `exclusive`-mode machine: opens and
    /// commits asked of a file's manager, and their answers.
    Commit(CommitMsg<PathVersion>),
    /// A message of the cluster's locks (`coopcache_core::c2cfs::locks`):
    /// calls to a file's manager, and its answers and grants.
    Lock(coopcache_core::c2cfs::locks::LockMsg),
    /// A warm-up placed on a file's manager (`coopcache_core::warm`): the
    /// asker's request and the manager's answer.
    Warm(coopcache_core::warm::WarmMsg),
    /// A directory listing kept by the directory's manager
    /// (`coopcache_core::c2cfs::listings`): asked, answered, a change told
    /// and noted.
    List(coopcache_core::c2cfs::listings::ListMsg<crate::listing::DirListing>),
}

impl Wire {
    /// Bytes of block contents the frame carries (0 for all but `Data`,
    /// `Recirculate` and `Place`).
    pub fn data_len(&self) -> usize {
        match self {
            Wire::Peer(
                PeerMsg::Data { data, .. }
                | PeerMsg::Recirculate { data, .. }
                | PeerMsg::Place { data, .. },
            ) => data.len(),
            _ => 0,
        }
    }
}

/// What is wrong with a frame.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    /// The length prefix exceeds the limit.
    #[error("frame of {len} bytes exceeds the limit of {max}")]
    TooLong {
        /// Announced length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The frame is empty (no kind byte).
    #[error("empty frame")]
    Empty,
    /// Unknown frame kind.
    #[error("unknown frame kind {0}")]
    UnknownKind(u8),
    /// The body ended early or has bytes left over.
    #[error("malformed {what} frame: {why}")]
    Malformed {
        /// The frame kind.
        what: &'static str,
        /// What is wrong.
        why: String,
    },
}

const KIND_HELLO: u8 = 1;
const KIND_MEMBERS: u8 = 2;
const KIND_GOSSIP: u8 = 3;
const KIND_LEAVING: u8 = 4;
const KIND_REVOKED: u8 = 5;
// The core's protocol messages: to a manager, from a manager, between
// nodes.
const K_READ: u8 = 16;
const K_IS_SINGLET: u8 = 17;
const K_DROPPED: u8 = 18;
const K_CACHED: u8 = 19;
const K_EVICT: u8 = 20;
const K_NOT_HERE: u8 = 21;
const K_RECORD: u8 = 22;
const K_HASH_OF: u8 = 23;
const K_FORWARD: u8 = 32;
const K_EXPECT: u8 = 33;
const K_FETCH_ORIGIN: u8 = 34;
const K_HASH_IS: u8 = 35;
const K_SINGLET: u8 = 36;
const K_INVALIDATE: u8 = 37;
const K_DATA: u8 = 48;
const K_MISSING: u8 = 49;
const K_PARTITION_READ: u8 = 50;
const K_RECLAIM: u8 = 51;
const K_RECIRCULATE: u8 = 52;
const K_PLACE: u8 = 53;
const K_PING: u8 = 54;
const K_PONG: u8 = 55;

/// The largest frame a node with blocks of `block_size` bytes accepts.
pub fn max_frame(block_size: u32) -> usize {
    block_size as usize + MAX_OVERHEAD
}

/// `members` as `Members` frames each within `max_frame(block_size)`: at
/// small block sizes a long list of long addresses would not fit one.
pub fn members_frames(members: &[(NodeId, String)], block_size: u32) -> Vec<Wire> {
    // Kind byte and count, then per member its id, length byte and address.
    let budget = max_frame(block_size) - 3;
    let mut frames = Vec::new();
    let (mut chunk, mut used) = (Vec::new(), 0);
    for (id, addr) in members {
        let size = 4 + 1 + addr.len().min(MAX_NAME);
        if !chunk.is_empty() && (used + size > budget || chunk.len() == MAX_MEMBERS) {
            frames.push(Wire::Members(std::mem::take(&mut chunk)));
            used = 0;
        }
        chunk.push((*id, addr.clone()));
        used += size;
    }
    if !chunk.is_empty() {
        frames.push(Wire::Members(chunk));
    }
    frames
}

/// Appends `wire` as one frame (header included) to `buf`.
pub fn encode(wire: &Wire, buf: &mut BytesMut) {
    let start = buf.len();
    buf.put_u32(0);
    match wire {
        Wire::Hello {
            version,
            node,
            name,
            listen,
            block_size,
            release,
        } => {
            buf.put_u8(KIND_HELLO);
            buf.put_slice(&MAGIC);
            buf.put_u16(*version);
            buf.put_u32(*node);
            put_str(buf, name);
            put_str(buf, listen);
            buf.put_u32(*block_size);
            // Version 14's Hello ends at the block size: a peer of that
            // version must read it to the end.
            if *version >= RELEASE_SINCE {
                put_str(buf, release);
            }
        }
        Wire::Members(members) => {
            buf.put_u8(KIND_MEMBERS);
            let members = &members[..members.len().min(MAX_MEMBERS)];
            buf.put_u16(members.len() as u16);
            for (id, addr) in members {
                buf.put_u32(*id);
                put_str(buf, addr);
            }
        }
        Wire::Gossip(data) => {
            buf.put_u8(KIND_GOSSIP);
            buf.put_slice(data);
        }
        Wire::Leaving => buf.put_u8(KIND_LEAVING),
        Wire::Revoked(crl) => {
            buf.put_u8(KIND_REVOKED);
            buf.put_slice(crl);
        }
        Wire::Peer(msg) => put_peer(buf, msg),
        Wire::Commit(msg) => commit::put(buf, msg),
        Wire::Lock(msg) => lock::put(buf, msg),
        Wire::Warm(msg) => warm::put(buf, msg),
        Wire::List(msg) => list::put(buf, msg),
    }
    let len = (buf.len() - start - HEADER) as u32;
    buf[start..start + HEADER].copy_from_slice(&len.to_be_bytes());
}

/// Writes a protocol message: its kind, its block, its fields. Every
/// message the core can send has a form.
fn put_peer(buf: &mut BytesMut, msg: &PeerMsg<BlockId, Bytes>) {
    use PeerMsg::*;
    let kind = match msg {
        Read { .. } => K_READ,
        IsSinglet { .. } => K_IS_SINGLET,
        Dropped { .. } => K_DROPPED,
        Cached { .. } => K_CACHED,
        Evict { .. } => K_EVICT,
        NotHere { .. } => K_NOT_HERE,
        Record { .. } => K_RECORD,
        HashOf { .. } => K_HASH_OF,
        Forward { .. } => K_FORWARD,
        Expect { .. } => K_EXPECT,
        FetchOrigin { .. } => K_FETCH_ORIGIN,
        HashIs { .. } => K_HASH_IS,
        Singlet { .. } => K_SINGLET,
        Invalidate { .. } => K_INVALIDATE,
        Data { .. } => K_DATA,
        Missing { .. } => K_MISSING,
        PartitionRead { .. } => K_PARTITION_READ,
        Reclaim { .. } => K_RECLAIM,
        Recirculate { .. } => K_RECIRCULATE,
        Place { .. } => K_PLACE,
        Ping { .. } => K_PING,
        Pong { .. } => K_PONG,
    };
    buf.put_u8(kind);
    if let Some(block) = msg.block() {
        put_block(buf, block);
    }
    match msg {
        Read { .. }
        | IsSinglet { .. }
        | Cached { .. }
        | Evict { .. }
        | NotHere { .. }
        | HashOf { .. }
        | Invalidate { .. }
        | Missing { .. }
        | PartitionRead { .. }
        | Reclaim { .. } => {}
        Record { digest, .. } => put_digest(buf, digest),
        Forward { reader, .. } => buf.put_u32(*reader),
        Expect {
            recorded, holder, ..
        } => {
            put_recorded(buf, recorded);
            buf.put_u32(*holder);
        }
        Dropped { on_disk, .. } => buf.put_u8(u8::from(*on_disk)),
        FetchOrigin { record, .. } => buf.put_u8(u8::from(*record)),
        HashIs { recorded, .. } => match recorded {
            Some(r) => {
                buf.put_u8(1);
                put_recorded(buf, r);
            }
            None => buf.put_u8(0),
        },
        Singlet { singlet, .. } => buf.put_u8(u8::from(*singlet)),
        Data { data, .. } | Place { data, .. } => buf.put_slice(data),
        Recirculate { chances, data, .. } => {
            buf.put_u8(*chances);
            buf.put_slice(data);
        }
        Ping { nonce, status } | Pong { nonce, status } => {
            buf.put_u64(*nonce);
            buf.put_u32(status.capacity);
            buf.put_u32(status.cached);
            buf.put_u64(status.cached_bytes);
            buf.put_u32(status.foreign);
            buf.put_u8(u8::from(status.idle));
            let r = &status.reads;
            for n in r.served.iter().chain([&r.failed, &r.errors, &r.violations]) {
                buf.put_u64(*n);
            }
        }
    }
}

/// Checks a frame header: the body length it announces, if within `max`.
pub fn body_len(header: [u8; HEADER], max: usize) -> Result<usize, FrameError> {
    let len = u32::from_be_bytes(header) as usize;
    match len {
        0 => Err(FrameError::Empty),
        len if len > max => Err(FrameError::TooLong { len, max }),
        len => Ok(len),
    }
}

/// Decodes one frame body (kind byte and body, header stripped). Block
/// data is a slice of `body`, not a copy.
pub fn decode(mut body: Bytes) -> Result<Wire, FrameError> {
    if body.is_empty() {
        return Err(FrameError::Empty);
    }
    let kind = body.get_u8();
    let what = kind_name(kind).ok_or(FrameError::UnknownKind(kind))?;
    let mut r = Reader { buf: body, what };
    let wire = match kind {
        KIND_HELLO => {
            let magic = r.take(4)?;
            if magic[..] != MAGIC {
                return Err(r.bad("not a coopcache peer (bad magic)"));
            }
            let version = r.u16()?;
            Wire::Hello {
                version,
                node: r.u32()?,
                name: r.str()?,
                listen: r.str()?,
                block_size: r.u32()?,
                release: match version >= RELEASE_SINCE {
                    true => r.str()?,
                    false => String::new(),
                },
            }
        }
        KIND_MEMBERS => {
            let n = r.u16()? as usize;
            if n > MAX_MEMBERS {
                return Err(r.bad(format!("{n} members, at most {MAX_MEMBERS}")));
            }
            let mut members = Vec::with_capacity(n);
            for _ in 0..n {
                members.push((r.u32()?, r.str()?));
            }
            Wire::Members(members)
        }
        KIND_GOSSIP => {
            let data = r.rest();
            if data.len() > MAX_GOSSIP {
                return Err(r.bad(format!(
                    "{} bytes of gossip, at most {MAX_GOSSIP}",
                    data.len()
                )));
            }
            Wire::Gossip(data)
        }
        KIND_LEAVING => Wire::Leaving,
        KIND_REVOKED => {
            let crl = r.rest();
            if crl.len() > crate::revocation::MAX_CRL {
                return Err(r.bad(format!(
                    "a revocation list of {} bytes, at most {}",
                    crl.len(),
                    crate::revocation::MAX_CRL
                )));
            }
            Wire::Revoked(crl)
        }
        kind if commit::kind_name(kind).is_some() => Wire::Commit(r.commit(kind)?),
        kind if lock::kind_name(kind).is_some() => Wire::Lock(r.lock(kind)?),
        kind if warm::kind_name(kind).is_some() => Wire::Warm(r.warm(kind)?),
        kind if list::kind_name(kind).is_some() => Wire::List(r.list(kind)?),
        kind => Wire::Peer(r.peer(kind)?),
    };
    if r.buf.has_remaining() {
        return Err(r.bad(format!("{} bytes left over", r.buf.remaining())));
    }
    Ok(wire)
}

fn kind_name(kind: u8) -> Option<&'static str> {
    Some(match kind {
        KIND_HELLO => "hello",
        KIND_MEMBERS => "members",
        KIND_GOSSIP => "gossip",
        KIND_LEAVING => "leaving",
        KIND_REVOKED => "revoked",
        K_READ => "read",
        K_IS_SINGLET => "is-singlet",
        K_DROPPED => "dropped",
        K_CACHED => "cached",
        K_EVICT => "evict",
        K_NOT_HERE => "not-here",
        K_RECORD => "record",
        K_HASH_OF => "hash-of",
        K_FORWARD => "forward",
        K_EXPECT => "expect",
        K_FETCH_ORIGIN => "fetch-origin",
        K_HASH_IS => "hash-is",
        K_SINGLET => "singlet",
        K_INVALIDATE => "invalidate",
        K_DATA => "data",
        K_MISSING => "missing",
        K_PARTITION_READ => "partition-read",
        K_RECLAIM => "reclaim",
        K_RECIRCULATE => "recirculate",
        K_PLACE => "place",
        K_PING => "ping",
        K_PONG => "pong",
        kind => {
            return commit::kind_name(kind)
                .or_else(|| lock::kind_name(kind))
                .or_else(|| warm::kind_name(kind))
                .or_else(|| list::kind_name(kind));
        }
    })
}

/// Writes `s`, cut to `MAX_NAME` bytes at a character boundary (a cut
/// mid-character would make the receiver refuse the whole frame).
fn put_str(buf: &mut BytesMut, s: &str) {
    let mut end = s.len().min(MAX_NAME);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let s = &s.as_bytes()[..end];
    buf.put_u8(s.len() as u8);
    buf.put_slice(s);
}

fn put_block(buf: &mut BytesMut, b: BlockId) {
    buf.put_u64(b.file);
    buf.put_u32(b.index);
    buf.put_u32(b.route);
}

fn put_digest(buf: &mut BytesMut, d: &Digest) {
    buf.put_slice(&d.hash);
    buf.put_u32(d.len);
}

fn put_recorded(buf: &mut BytesMut, r: &Recorded) {
    put_digest(buf, &r.digest);
    buf.put_u32(r.by);
}

struct Reader {
    buf: Bytes,
    what: &'static str,
}

impl Reader {
    fn bad(&self, why: impl Into<String>) -> FrameError {
        FrameError::Malformed {
            what: self.what,
            why: why.into(),
        }
    }

    fn need(&self, n: usize) -> Result<(), FrameError> {
        if self.buf.remaining() < n {
            return Err(self.bad(format!(
                "needs {n} more bytes, {} left",
                self.buf.remaining()
            )));
        }
        Ok(())
    }

    fn take(&mut self, n: usize) -> Result<Bytes, FrameError> {
        self.need(n)?;
        Ok(self.buf.split_to(n))
    }

    fn u8(&mut self) -> Result<u8, FrameError> {
        self.need(1)?;
        Ok(self.buf.get_u8())
    }

    fn u16(&mut self) -> Result<u16, FrameError> {
        self.need(2)?;
        Ok(self.buf.get_u16())
    }

    fn u32(&mut self) -> Result<u32, FrameError> {
        self.need(4)?;
        Ok(self.buf.get_u32())
    }

    fn u64(&mut self) -> Result<u64, FrameError> {
        self.need(8)?;
        Ok(self.buf.get_u64())
    }

    fn str(&mut self) -> Result<String, FrameError> {
        let n = self.u8()? as usize;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| self.bad("a name that is not UTF-8"))
    }

    fn hash(&mut self) -> Result<[u8; 32], FrameError> {
        let b = self.take(32)?;
        let mut h = [0u8; 32];
        h.copy_from_slice(&b);
        Ok(h)
    }

    fn block(&mut self) -> Result<BlockId, FrameError> {
        Ok(BlockId {
            file: self.u64()?,
            index: self.u32()?,
            route: self.u32()?,
        })
    }

    fn digest(&mut self) -> Result<Digest, FrameError> {
        Ok(Digest {
            hash: self.hash()?,
            len: self.u32()?,
        })
    }

    fn recorded(&mut self) -> Result<Recorded, FrameError> {
        Ok(Recorded {
            digest: self.digest()?,
            by: self.u32()?,
        })
    }

    fn flag(&mut self, what: &str) -> Result<bool, FrameError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(self.bad(format!("{what} flag {b}"))),
        }
    }

    /// The rest of the body: a block's data.
    /// Bytes left in the frame.
    fn remaining(&self) -> usize {
        self.buf.remaining()
    }

    fn rest(&mut self) -> Bytes {
        self.buf.split_off(0)
    }

    /// A member's read counts, as a ping carries them.
    fn read_counts(&mut self) -> Result<coopcache_core::protocol::ReadCounts, FrameError> {
        let mut served = [0; coopcache_core::coop::Level::ALL.len()];
        for n in &mut served {
            *n = self.u64()?;
        }
        Ok(coopcache_core::protocol::ReadCounts {
            served,
            failed: self.u64()?,
            errors: self.u64()?,
            violations: self.u64()?,
        })
    }

    /// A protocol message of frame kind `kind`.
    fn peer(&mut self, kind: u8) -> Result<PeerMsg<BlockId, Bytes>, FrameError> {
        use PeerMsg::*;
        if matches!(kind, K_PING | K_PONG) {
            let nonce = self.u64()?;
            let status = Status {
                capacity: self.u32()?,
                cached: self.u32()?,
                cached_bytes: self.u64()?,
                foreign: self.u32()?,
                idle: self.flag("idle")?,
                reads: self.read_counts()?,
            };
            return Ok(if kind == K_PING {
                Ping { nonce, status }
            } else {
                Pong { nonce, status }
            });
        }
        let block = self.block()?;
        Ok(match kind {
            K_READ => Read { block },
            K_IS_SINGLET => IsSinglet { block },
            K_DROPPED => Dropped {
                block,
                on_disk: self.flag("on_disk")?,
            },
            K_CACHED => Cached { block },
            K_EVICT => Evict { block },
            K_NOT_HERE => NotHere { block },
            K_RECORD => Record {
                block,
                digest: self.digest()?,
            },
            K_HASH_OF => HashOf { block },
            K_FORWARD => Forward {
                block,
                reader: self.u32()?,
            },
            K_EXPECT => Expect {
                block,
                recorded: self.recorded()?,
                holder: self.u32()?,
            },
            K_FETCH_ORIGIN => FetchOrigin {
                block,
                record: self.flag("record")?,
            },
            K_HASH_IS => HashIs {
                block,
                recorded: match self.flag("digest presence")? {
                    true => Some(self.recorded()?),
                    false => None,
                },
            },
            K_SINGLET => Singlet {
                block,
                singlet: self.flag("singlet")?,
            },
            K_INVALIDATE => Invalidate { block },
            K_DATA => Data {
                block,
                data: self.rest(),
            },
            K_MISSING => Missing { block },
            K_PARTITION_READ => PartitionRead { block },
            K_RECLAIM => Reclaim { block },
            K_RECIRCULATE => {
                let chances = self.u8()?;
                if chances == 0 || chances > coopcache_core::coop::MAX_CHANCES {
                    return Err(self.bad(format!("{chances} chances")));
                }
                Recirculate {
                    block,
                    chances,
                    data: self.rest(),
                }
            }
            K_PLACE => Place {
                block,
                data: self.rest(),
            },
            k => return Err(FrameError::UnknownKind(k)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(w: Wire) {
        let mut buf = BytesMut::new();
        encode(&w, &mut buf);
        let mut header = [0u8; HEADER];
        header.copy_from_slice(&buf[..HEADER]);
        let len = body_len(header, max_frame(1 << 20)).unwrap();
        assert_eq!(len, buf.len() - HEADER);
        assert_eq!(decode(buf.freeze().slice(HEADER..)).unwrap(), w);
    }

    #[test]
    fn members_lists_are_split_to_fit_small_frames() {
        let members: Vec<(NodeId, String)> = (0..40)
            .map(|i| (i, format!("{}:{i}", "h".repeat(200))))
            .collect();
        let frames = members_frames(&members, 512);
        assert!(frames.len() > 1, "one frame of {} members", members.len());
        let mut back = Vec::new();
        for w in &frames {
            let mut buf = BytesMut::new();
            encode(w, &mut buf);
            let mut header = [0u8; HEADER];
            header.copy_from_slice(&buf[..HEADER]);
            body_len(header, max_frame(512)).expect("within the frame limit");
            let Wire::Members(m) = decode(buf.freeze().slice(HEADER..)).unwrap() else {
                panic!("not a Members frame");
            };
            back.extend(m);
        }
        assert_eq!(back, members);
        assert_eq!(members_frames(&members, 1 << 20).len(), 1);
    }

    #[test]
    fn long_names_are_cut_at_a_character_boundary() {
        // 254 ASCII bytes then a 2-byte character: a cut at 255 bytes
        // would split it and the receiver would refuse the frame.
        let long = format!("{}é-and-more", "a".repeat(254));
        let mut buf = BytesMut::new();
        encode(&Wire::Members(vec![(1, long)]), &mut buf);
        let Wire::Members(got) = decode(buf.freeze().slice(HEADER..)).unwrap() else {
            panic!("not a Members frame");
        };
        assert_eq!(got, vec![(1, "a".repeat(254))]);
    }

    /// One of every protocol message, about `block`, carrying `data`.
    pub(crate) fn every_peer_msg(block: BlockId, data: Bytes) -> Vec<PeerMsg<BlockId, Bytes>> {
        use PeerMsg::*;
        let digest = Digest {
            hash: [7; 32],
            len: 8,
        };
        let recorded = Recorded { digest, by: 4 };
        vec![
            Read { block },
            IsSinglet { block },
            Dropped {
                block,
                on_disk: true,
            },
            Dropped {
                block,
                on_disk: false,
            },
            Cached { block },
            NotHere { block },
            Record { block, digest },
            HashOf { block },
            Forward { block, reader: 3 },
            Expect {
                block,
                recorded,
                holder: 5,
            },
            FetchOrigin {
                block,
                record: true,
            },
            FetchOrigin {
                block,
                record: false,
            },
            HashIs {
                block,
                recorded: Some(recorded),
            },
            HashIs {
                block,
                recorded: None,
            },
            Singlet {
                block,
                singlet: true,
            },
            Invalidate { block },
            Evict { block },
            Data {
                block,
                data: data.clone(),
            },
            Missing { block },
            PartitionRead { block },
            Reclaim { block },
            Recirculate {
                block,
                chances: 2,
                data: data.clone(),
            },
            Place { block, data },
            Ping {
                nonce: 5,
                status: Status {
                    capacity: 100,
                    cached: 40,
                    cached_bytes: 40 << 16,
                    foreign: 7,
                    idle: true,
                    reads: coopcache_core::protocol::ReadCounts {
                        served: [1, 2, 3, 4, 5],
                        failed: 6,
                        errors: 7,
                        violations: 8,
                    },
                },
            },
            Pong {
                nonce: 6,
                status: Status::default(),
            },
        ]
    }

    #[test]
    fn every_frame_roundtrips() {
        let block = BlockId {
            file: 0x0102_0304_0506_0708,
            index: 77,
            route: 0x0a0b_0c0d,
        };
        roundtrip(Wire::Hello {
            version: PROTOCOL_VERSION,
            node: 9,
            name: "n9".into(),
            listen: "127.0.0.1:7000".into(),
            block_size: 65536,
            release: RELEASE.into(),
        });
        // A version-14 Hello, as a node of the previous release sends it.
        roundtrip(Wire::Hello {
            version: 14,
            node: 9,
            name: "n9".into(),
            listen: "127.0.0.1:7000".into(),
            block_size: 65536,
            release: String::new(),
        });
        roundtrip(Wire::Members(vec![(1, "a:1".into()), (2, "b:2".into())]));
        roundtrip(Wire::Gossip(Bytes::from_static(b"swim datagram")));
        roundtrip(Wire::Gossip(Bytes::new()));
        roundtrip(Wire::Revoked(Bytes::from_static(b"a crl")));
        let msgs = every_peer_msg(block, Bytes::from_static(b"some block bytes"));
        assert_eq!(msgs.len(), 25);
        for msg in msgs {
            roundtrip(Wire::Peer(msg));
        }
        let commits = commit::tests::every_commit_msg();
        assert_eq!(commits.len(), 12);
        for msg in commits {
            roundtrip(Wire::Commit(msg));
        }
        let locks = lock::tests::every_lock_msg();
        assert_eq!(locks.len(), 28);
        for msg in locks {
            roundtrip(Wire::Lock(msg));
        }
        let warms = warm::tests::every_warm_msg();
        assert_eq!(warms.len(), 5);
        for msg in warms {
            roundtrip(Wire::Warm(msg));
        }
        let lists = list::tests::every_list_msg();
        assert_eq!(lists.len(), 6);
        for msg in lists {
            roundtrip(Wire::List(msg));
        }
    }

    #[test]
    fn lock_frames_with_unknown_values_or_backward_ranges_are_refused() {
        use coopcache_core::c2cfs::locks::{LockKind, LockMsg, LockRange, LockSpace};
        let mut buf = BytesMut::new();
        let test = LockMsg::Test {
            nonce: 1,
            path: "f".into(),
            space: LockSpace::Posix,
            owner: 2,
            kind: LockKind::Shared,
            range: LockRange::WHOLE,
        };
        encode(&Wire::Lock(test), &mut buf);
        let body = buf.freeze().slice(HEADER..).to_vec();
        // kind, nonce, path (u16 length, "f"), then the space byte.
        let space = 1 + 8 + 2 + 1;
        let refused = |at: usize, bytes: &[u8], why: &str| {
            let mut b = body.clone();
            b[at..at + bytes.len()].copy_from_slice(bytes);
            let err = decode(Bytes::from(b)).unwrap_err().to_string();
            assert!(err.contains(why), "{err}");
        };
        refused(space, &[2], "lock space 2");
        refused(space + 9, &[5], "lock kind 5");
        let backward = [u64::MAX.to_be_bytes(), 0u64.to_be_bytes()].concat();
        refused(space + 10, &backward, "ends before it starts");
        assert!(decode(Bytes::from(body)).is_ok());
    }

    #[test]
    fn over_long_paths_and_versions_are_refused() {
        use coopcache_core::c2cfs::Tcommit;
        use coopcache_core::c2cfs::exclusive::MAX_PATH;
        let decoded = |msg| {
            let mut buf = BytesMut::new();
            encode(&Wire::Commit(msg), &mut buf);
            decode(buf.freeze().slice(HEADER..))
        };
        let path: std::sync::Arc<str> = "p".repeat(MAX_PATH).into();
        let open = |path| CommitMsg::Open {
            nonce: 1,
            path,
            first: None,
        };
        assert!(decoded(open(path)).is_ok());
        let err = decoded(open("p".repeat(MAX_PATH + 1).into())).unwrap_err();
        assert!(err.to_string().contains("path of 4097 bytes"), "{err}");
        let version = PathVersion {
            path: "p".into(),
            version: crate::origin::FileVersion {
                size: 1,
                version: "v".repeat(commit::MAX_VERSION + 1),
                modified: None,
                perm: 0o644,
                owner: None,
            },
        };
        let t = Tcommit {
            epoch: 1,
            serial: 1,
        };
        let opened = CommitMsg::Opened {
            nonce: 1,
            answer: Some((t, version)),
            served: false,
        };
        let err = decoded(opened).unwrap_err();
        assert!(err.to_string().contains("version of 1025 bytes"), "{err}");
    }

    #[test]
    fn lengths_are_checked_before_allocation() {
        assert_eq!(
            body_len(u32::MAX.to_be_bytes(), 100),
            Err(FrameError::TooLong {
                len: u32::MAX as usize,
                max: 100
            })
        );
        assert_eq!(body_len([0; 4], 100), Err(FrameError::Empty));
        // A Members frame announcing more than the limit is refused
        // before its vector is sized.
        let mut body = vec![KIND_MEMBERS];
        body.extend_from_slice(&u16::MAX.to_be_bytes());
        assert!(matches!(
            decode(Bytes::from(body)),
            Err(FrameError::Malformed { .. })
        ));
    }

    #[test]
    fn oversized_gossip_is_refused() {
        let mut body = vec![KIND_GOSSIP];
        body.resize(1 + MAX_GOSSIP, 0);
        assert!(
            matches!(decode(Bytes::from(body.clone())), Ok(Wire::Gossip(g)) if g.len() == MAX_GOSSIP)
        );
        body.push(0);
        let err = decode(Bytes::from(body)).unwrap_err();
        assert!(err.to_string().contains("gossip"), "{err}");
    }

    #[test]
    fn a_bad_magic_is_named() {
        let mut buf = BytesMut::new();
        encode(
            &Wire::Hello {
                version: 1,
                node: 1,
                name: "x".into(),
                listen: "y".into(),
                block_size: 1,
                release: String::new(),
            },
            &mut buf,
        );
        buf[HEADER + 1] = b'X';
        let err = decode(buf.freeze().slice(HEADER..)).unwrap_err();
        assert!(err.to_string().contains("bad magic"), "{err}");
    }
}
