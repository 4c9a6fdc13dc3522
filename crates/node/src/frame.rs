//! The wire format between nodes (docs/PROTOCOL.md): length-prefixed,
//! versioned binary frames carrying the core's messages and the few the
//! daemon adds. Every length is checked against a limit before anything is
//! allocated, and decoding never panics on any input.

use crate::block::BlockId;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use coopcache_core::coop::{Addr, Level, Msg, NodeId};

/// The protocol version this build speaks; a peer with another is refused
/// at its `Hello`.
pub const PROTOCOL_VERSION: u16 = 1;

/// First bytes of every `Hello`, so a stray client is told apart from a
/// peer of another version.
pub const MAGIC: [u8; 4] = *b"COOP";

/// A BLAKE3 hash of a block's bytes.
pub type Hash = [u8; 32];

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
pub const MAX_GOSSIP: usize = 1000;

/// A frame between two nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wire {
    /// First frame on every connection, both ways.
    Hello {
        /// [`PROTOCOL_VERSION`] of the sender.
        version: u16,
        /// The sender's node id.
        node: NodeId,
        /// The sender's name (its certificate's).
        name: String,
        /// Where the sender accepts peers (`host:port`).
        listen: String,
        /// The sender's block size in bytes; must equal the receiver's.
        block_size: u32,
    },
    /// The members the sender knows (id, listen address), so a node that
    /// joined through one seed meets the rest.
    Members(Vec<(NodeId, String)>),
    /// Round-trip probe; answered by [`Wire::Pong`] with the same nonce.
    Ping(u64),
    /// Answer to [`Wire::Ping`].
    Pong(u64),
    /// A core protocol message.
    Core {
        /// Sender role.
        from: Addr,
        /// Receiver role.
        to: Addr,
        /// The message.
        msg: Msg<BlockId, Bytes>,
    },
    /// Manager to reader: the block a peer will send you must hash to this.
    Expect {
        /// The block.
        block: BlockId,
        /// BLAKE3 of its bytes.
        hash: Hash,
        /// Its length.
        len: u32,
    },
    /// Manager to reader: no cached copy; read the block from the origin
    /// yourself (the core's `Fetch` to the origin, carried out by the
    /// reader so the bytes cross the network once).
    FetchOrigin {
        /// The block.
        block: BlockId,
        /// Hops so far.
        hops: u8,
    },
    /// Reader to manager: what the block it read from the origin hashes to.
    Record {
        /// The block.
        block: BlockId,
        /// BLAKE3 of its bytes.
        hash: Hash,
        /// Its length.
        len: u32,
    },
    /// Node to manager: the recorded hash of `block`, please (to verify a
    /// forwarded singlet before keeping it).
    HashOf {
        /// The block.
        block: BlockId,
    },
    /// Manager to node: the answer to [`Wire::HashOf`].
    HashIs {
        /// The block.
        block: BlockId,
        /// Its recorded hash and length, if the manager has one.
        hash: Option<(Hash, u32)>,
    },
    /// One SWIM datagram of the failure detector (the `foca` crate's
    /// encoding), at most [`MAX_GOSSIP`] bytes. Carried over the
    /// authenticated links, never plain UDP: gossip decides who is live
    /// and so who manages which files.
    Gossip(Bytes),
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
const KIND_PING: u8 = 3;
const KIND_PONG: u8 = 4;
const KIND_CORE: u8 = 5;
const KIND_EXPECT: u8 = 6;
const KIND_FETCH_ORIGIN: u8 = 7;
const KIND_RECORD: u8 = 8;
const KIND_HASH_OF: u8 = 9;
const KIND_HASH_IS: u8 = 10;
const KIND_GOSSIP: u8 = 11;

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
        } => {
            buf.put_u8(KIND_HELLO);
            buf.put_slice(&MAGIC);
            buf.put_u16(*version);
            buf.put_u32(*node);
            put_str(buf, name);
            put_str(buf, listen);
            buf.put_u32(*block_size);
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
        Wire::Ping(n) => {
            buf.put_u8(KIND_PING);
            buf.put_u64(*n);
        }
        Wire::Pong(n) => {
            buf.put_u8(KIND_PONG);
            buf.put_u64(*n);
        }
        Wire::Core { from, to, msg } => {
            buf.put_u8(KIND_CORE);
            put_addr(buf, *from);
            put_addr(buf, *to);
            put_msg(buf, msg);
        }
        Wire::Expect { block, hash, len } | Wire::Record { block, hash, len } => {
            let kind = match wire {
                Wire::Expect { .. } => KIND_EXPECT,
                _ => KIND_RECORD,
            };
            buf.put_u8(kind);
            put_block(buf, *block);
            buf.put_slice(hash);
            buf.put_u32(*len);
        }
        Wire::FetchOrigin { block, hops } => {
            buf.put_u8(KIND_FETCH_ORIGIN);
            put_block(buf, *block);
            buf.put_u8(*hops);
        }
        Wire::HashOf { block } => {
            buf.put_u8(KIND_HASH_OF);
            put_block(buf, *block);
        }
        Wire::HashIs { block, hash } => {
            buf.put_u8(KIND_HASH_IS);
            put_block(buf, *block);
            match hash {
                Some((h, len)) => {
                    buf.put_u8(1);
                    buf.put_slice(h);
                    buf.put_u32(*len);
                }
                None => buf.put_u8(0),
            }
        }
        Wire::Gossip(data) => {
            buf.put_u8(KIND_GOSSIP);
            buf.put_slice(data);
        }
    }
    let len = (buf.len() - start - HEADER) as u32;
    buf[start..start + HEADER].copy_from_slice(&len.to_be_bytes());
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
            Wire::Hello {
                version: r.u16()?,
                node: r.u32()?,
                name: r.str()?,
                listen: r.str()?,
                block_size: r.u32()?,
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
        KIND_PING => Wire::Ping(r.u64()?),
        KIND_PONG => Wire::Pong(r.u64()?),
        KIND_CORE => Wire::Core {
            from: r.addr()?,
            to: r.addr()?,
            msg: r.msg()?,
        },
        KIND_EXPECT | KIND_RECORD => {
            let (block, hash, len) = (r.block()?, r.hash()?, r.u32()?);
            match kind {
                KIND_EXPECT => Wire::Expect { block, hash, len },
                _ => Wire::Record { block, hash, len },
            }
        }
        KIND_FETCH_ORIGIN => Wire::FetchOrigin {
            block: r.block()?,
            hops: r.u8()?,
        },
        KIND_HASH_OF => Wire::HashOf { block: r.block()? },
        KIND_HASH_IS => {
            let block = r.block()?;
            let hash = match r.u8()? {
                0 => None,
                1 => Some((r.hash()?, r.u32()?)),
                t => return Err(r.bad(format!("hash presence byte {t}"))),
            };
            Wire::HashIs { block, hash }
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
        _ => return Err(FrameError::UnknownKind(kind)),
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
        KIND_PING => "ping",
        KIND_PONG => "pong",
        KIND_CORE => "core",
        KIND_EXPECT => "expect",
        KIND_FETCH_ORIGIN => "fetch-origin",
        KIND_RECORD => "record",
        KIND_HASH_OF => "hash-of",
        KIND_HASH_IS => "hash-is",
        KIND_GOSSIP => "gossip",
        _ => return None,
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
}

fn put_addr(buf: &mut BytesMut, a: Addr) {
    match a {
        Addr::Node(n) => {
            buf.put_u8(0);
            buf.put_u32(n);
        }
        Addr::Manager => buf.put_u8(1),
        Addr::Origin => buf.put_u8(2),
    }
}

fn level_byte(l: Level) -> u8 {
    l.index() as u8
}

// Message tags: the core's `Msg` variants.
const M_READ: u8 = 1;
const M_FORWARD: u8 = 2;
const M_DATA: u8 = 3;
const M_NOT_HERE: u8 = 4;
const M_DROPPED: u8 = 5;
const M_CACHED: u8 = 6;
const M_MOVED: u8 = 7;
const M_IS_SINGLET: u8 = 8;
const M_SINGLET: u8 = 9;
const M_RECIRCULATE: u8 = 10;
const M_INVALIDATE: u8 = 11;
const M_FETCH: u8 = 12;
const M_PLACE: u8 = 13;

/// Encodes the messages a live cluster exchanges. The rest (central
/// placement, Weighted LRU, writes, replicas) never cross a live link: the
/// daemon runs Base, Greedy, N-Chance, Hash-Distributed and Direct,
/// read-only.
fn put_msg(buf: &mut BytesMut, msg: &Msg<BlockId, Bytes>) {
    let (tag, block) = match msg {
        Msg::Read { block, .. } => (M_READ, block),
        Msg::Forward { block, .. } => (M_FORWARD, block),
        Msg::Data { block, .. } => (M_DATA, block),
        Msg::NotHere { block, .. } => (M_NOT_HERE, block),
        Msg::Dropped { block } => (M_DROPPED, block),
        Msg::Cached { block } => (M_CACHED, block),
        Msg::Moved { block, .. } => (M_MOVED, block),
        Msg::IsSinglet { block } => (M_IS_SINGLET, block),
        Msg::Singlet { block, .. } => (M_SINGLET, block),
        Msg::Recirculate { block, .. } => (M_RECIRCULATE, block),
        Msg::Invalidate { block } => (M_INVALIDATE, block),
        Msg::Fetch { block, .. } => (M_FETCH, block),
        Msg::Place { block, .. } => (M_PLACE, block),
        other => unreachable_on_live_link(other),
    };
    buf.put_u8(tag);
    put_block(buf, *block);
    match msg {
        Msg::Read { reader, hops, .. }
        | Msg::Forward { reader, hops, .. }
        | Msg::NotHere { reader, hops, .. }
        | Msg::Fetch { reader, hops, .. } => {
            buf.put_u32(*reader);
            buf.put_u8(*hops);
        }
        Msg::Data {
            data, level, hops, ..
        } => {
            buf.put_u8(level_byte(*level));
            buf.put_u8(*hops);
            buf.put_slice(data);
        }
        Msg::Moved { to, .. } => buf.put_u32(*to),
        Msg::Singlet { singlet, .. } => buf.put_u8(u8::from(*singlet)),
        Msg::Recirculate { data, chances, .. } => {
            buf.put_u8(*chances);
            buf.put_slice(data);
        }
        Msg::Place { data, replaces, .. } => {
            match replaces {
                None => buf.put_u8(0),
                Some(old) => {
                    buf.put_u8(1);
                    put_block(buf, *old);
                }
            }
            buf.put_slice(data);
        }
        _ => {}
    }
}

/// The daemon builds only the clusters `put_msg` names, whose machines never send the other messages; a message that
/// cannot be encoded is a bug in the daemon, not bad input.
fn unreachable_on_live_link(msg: &Msg<BlockId, Bytes>) -> ! {
    panic!("message {msg:?} is not part of the live protocol")
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

    fn hash(&mut self) -> Result<Hash, FrameError> {
        let b = self.take(32)?;
        let mut h = [0u8; 32];
        h.copy_from_slice(&b);
        Ok(h)
    }

    fn block(&mut self) -> Result<BlockId, FrameError> {
        Ok(BlockId {
            file: self.u64()?,
            index: self.u32()?,
        })
    }

    fn addr(&mut self) -> Result<Addr, FrameError> {
        match self.u8()? {
            0 => Ok(Addr::Node(self.u32()?)),
            1 => Ok(Addr::Manager),
            2 => Ok(Addr::Origin),
            t => Err(self.bad(format!("address tag {t}"))),
        }
    }

    fn level(&mut self) -> Result<Level, FrameError> {
        let l = self.u8()?;
        Level::ALL
            .get(l as usize)
            .copied()
            .ok_or_else(|| self.bad(format!("level {l}")))
    }

    /// The rest of the body: a block's data.
    fn rest(&mut self) -> Bytes {
        self.buf.split_off(0)
    }

    fn msg(&mut self) -> Result<Msg<BlockId, Bytes>, FrameError> {
        let tag = self.u8()?;
        let block = self.block()?;
        Ok(match tag {
            M_READ | M_FORWARD | M_NOT_HERE | M_FETCH => {
                let (reader, hops) = (self.u32()?, self.u8()?);
                match tag {
                    M_READ => Msg::Read {
                        block,
                        reader,
                        hops,
                    },
                    M_FORWARD => Msg::Forward {
                        block,
                        reader,
                        hops,
                    },
                    M_NOT_HERE => Msg::NotHere {
                        block,
                        reader,
                        hops,
                    },
                    _ => Msg::Fetch {
                        block,
                        reader,
                        hops,
                    },
                }
            }
            M_DATA => Msg::Data {
                block,
                level: self.level()?,
                hops: self.u8()?,
                data: self.rest(),
            },
            M_DROPPED => Msg::Dropped { block },
            M_CACHED => Msg::Cached { block },
            M_MOVED => Msg::Moved {
                block,
                to: self.u32()?,
            },
            M_IS_SINGLET => Msg::IsSinglet { block },
            M_SINGLET => Msg::Singlet {
                block,
                singlet: match self.u8()? {
                    0 => false,
                    1 => true,
                    b => return Err(self.bad(format!("singlet flag {b}"))),
                },
            },
            M_RECIRCULATE => {
                let chances = self.u8()?;
                if chances == 0 || chances > coopcache_core::coop::MAX_CHANCES {
                    return Err(self.bad(format!("{chances} chances")));
                }
                Msg::Recirculate {
                    block,
                    chances,
                    data: self.rest(),
                }
            }
            M_INVALIDATE => Msg::Invalidate { block },
            M_PLACE => Msg::Place {
                block,
                replaces: match self.u8()? {
                    0 => None,
                    1 => Some(self.block()?),
                    b => return Err(self.bad(format!("replaces flag {b}"))),
                },
                data: self.rest(),
            },
            t => return Err(self.bad(format!("message tag {t}"))),
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

    #[test]
    fn every_frame_roundtrips() {
        let block = BlockId {
            file: 0x0102_0304_0506_0708,
            index: 77,
        };
        let data = Bytes::from_static(b"some block bytes");
        roundtrip(Wire::Hello {
            version: PROTOCOL_VERSION,
            node: 9,
            name: "n9".into(),
            listen: "127.0.0.1:7000".into(),
            block_size: 65536,
        });
        roundtrip(Wire::Members(vec![(1, "a:1".into()), (2, "b:2".into())]));
        roundtrip(Wire::Ping(5));
        roundtrip(Wire::Gossip(Bytes::from_static(b"swim datagram")));
        roundtrip(Wire::Gossip(Bytes::new()));
        roundtrip(Wire::Pong(6));
        roundtrip(Wire::Expect {
            block,
            hash: [7; 32],
            len: 8,
        });
        roundtrip(Wire::Record {
            block,
            hash: [9; 32],
            len: 10,
        });
        roundtrip(Wire::FetchOrigin { block, hops: 2 });
        roundtrip(Wire::HashOf { block });
        roundtrip(Wire::HashIs { block, hash: None });
        roundtrip(Wire::HashIs {
            block,
            hash: Some(([1; 32], 3)),
        });
        let msgs = [
            Msg::Read {
                block,
                reader: 3,
                hops: 1,
            },
            Msg::Forward {
                block,
                reader: 3,
                hops: 2,
            },
            Msg::NotHere {
                block,
                reader: 3,
                hops: 3,
            },
            Msg::Fetch {
                block,
                reader: 3,
                hops: 2,
            },
            Msg::Data {
                block,
                data: data.clone(),
                level: Level::RemoteNode,
                hops: 3,
            },
            Msg::Dropped { block },
            Msg::Cached { block },
            Msg::Moved { block, to: 4 },
            Msg::IsSinglet { block },
            Msg::Singlet {
                block,
                singlet: true,
            },
            Msg::Recirculate {
                block,
                data: data.clone(),
                chances: 2,
            },
            Msg::Invalidate { block },
            Msg::Place {
                block,
                data: data.clone(),
                replaces: None,
            },
            Msg::Place {
                block,
                data,
                replaces: Some(BlockId { file: 9, index: 1 }),
            },
        ];
        for msg in msgs {
            roundtrip(Wire::Core {
                from: Addr::Node(1),
                to: Addr::Manager,
                msg,
            });
        }
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
            },
            &mut buf,
        );
        buf[HEADER + 1] = b'X';
        let err = decode(buf.freeze().slice(HEADER..)).unwrap_err();
        assert!(err.to_string().contains("bad magic"), "{err}");
    }
}
