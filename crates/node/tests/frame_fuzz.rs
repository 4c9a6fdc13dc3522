//! The wire format against arbitrary input: decoding never panics, lengths
//! over the limit are refused before anything is allocated, every frame
//! the encoder writes decodes to the same value, and the decoder accepts
//! only what the encoder would write (so a frame has one encoding).
//!
//! proptest prints the failing case and keeps its seed in
//! `proptest-regressions/` for replay.

use bytes::{Bytes, BytesMut};
use coopcache_core::c2cfs::Tcommit;
use coopcache_core::c2cfs::exclusive::{CommitMsg, FirstBlock};
use coopcache_core::c2cfs::listings::ListMsg;
use coopcache_core::c2cfs::locks::{
    LockAnswer, LockConflict, LockError, LockKind, LockMsg, LockOutcome, LockOwner, LockRange,
    LockRequest, LockSpace,
};
use coopcache_core::coop::MAX_CHANCES;
use coopcache_core::protocol::{Digest, PeerMsg, Recorded, Status};
use coopcache_core::warm::{WarmAnswer, WarmMsg};
use coopcache_node::block::BlockId;
use coopcache_node::frame::{
    self, FrameError, HEADER, MAX_MEMBERS, MAX_NAME, MAX_OVERHEAD, RELEASE_SINCE, Wire, body_len,
    decode, encode,
};
use coopcache_node::link::read_frame;
use coopcache_node::listing::DirListing;
use coopcache_node::origin::{DirEntry, EntryKind};
use coopcache_node::origin::{FileVersion, Owner, PathVersion};
use proptest::prelude::*;
use std::time::{Duration, UNIX_EPOCH};

/// Largest block data the roundtrip cases carry.
const MAX_DATA: usize = 4096;

fn block() -> impl Strategy<Value = BlockId> {
    (any::<u64>(), any::<u32>(), any::<u32>()).prop_map(|(file, index, route)| BlockId {
        file,
        index,
        route,
    })
}

fn data() -> impl Strategy<Value = Bytes> {
    prop::collection::vec(any::<u8>(), 0..=MAX_DATA).prop_map(Bytes::from)
}

/// Names and addresses: any characters, within the encoder's byte limit.
fn name() -> impl Strategy<Value = String> {
    "\\PC{0,40}".prop_filter("at most MAX_NAME bytes", |s| s.len() <= MAX_NAME)
}

fn digest() -> impl Strategy<Value = Digest> {
    (any::<[u8; 32]>(), any::<u32>()).prop_map(|(hash, len)| Digest { hash, len })
}

/// What a member says of its memory.
fn status() -> impl Strategy<Value = Status> {
    (
        any::<u32>(),
        any::<u32>(),
        any::<u64>(),
        any::<u32>(),
        any::<bool>(),
        any::<[u64; 8]>(),
    )
        .prop_map(
            |(capacity, cached, cached_bytes, foreign, idle, n)| Status {
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
            },
        )
}

fn recorded() -> impl Strategy<Value = Recorded> {
    (digest(), any::<u32>()).prop_map(|(digest, by)| Recorded { digest, by })
}

fn msg() -> impl Strategy<Value = PeerMsg<BlockId, Bytes>> {
    use PeerMsg::*;
    let bare = (block(), 0u8..11).prop_map(|(block, kind)| match kind {
        0 => Read { block },
        1 => IsSinglet { block },
        2 => Dropped {
            block,
            on_disk: true,
        },
        3 => Cached { block },
        4 => NotHere { block },
        5 => HashOf { block },
        6 => Invalidate { block },
        7 => Missing { block },
        8 => PartitionRead { block },
        9 => Evict { block },
        _ => Reclaim { block },
    });
    prop_oneof![
        bare,
        (block(), digest()).prop_map(|(block, digest)| Record { block, digest }),
        (block(), any::<u32>()).prop_map(|(block, reader)| Forward { block, reader }),
        (block(), recorded(), any::<u32>()).prop_map(|(block, recorded, holder)| Expect {
            block,
            recorded,
            holder
        }),
        (block(), any::<bool>()).prop_map(|(block, record)| FetchOrigin { block, record }),
        (block(), prop::option::of(recorded()))
            .prop_map(|(block, recorded)| HashIs { block, recorded }),
        (block(), any::<bool>()).prop_map(|(block, singlet)| Singlet { block, singlet }),
        (block(), data()).prop_map(|(block, data)| Data { block, data }),
        (block(), data(), 1..=MAX_CHANCES).prop_map(|(block, data, chances)| Recirculate {
            block,
            chances,
            data,
        }),
        (block(), data()).prop_map(|(block, data)| Place { block, data }),
        (any::<u64>(), status()).prop_map(|(nonce, status)| Ping { nonce, status }),
        (any::<u64>(), status()).prop_map(|(nonce, status)| Pong { nonce, status }),
    ]
}

fn tcommit() -> impl Strategy<Value = Tcommit> {
    (any::<u64>(), any::<u64>()).prop_map(|(epoch, serial)| Tcommit { epoch, serial })
}

/// A path or version string: any characters, well within their limits.
fn long_name() -> impl Strategy<Value = std::sync::Arc<str>> {
    "\\PC{0,60}".prop_map(std::sync::Arc::from)
}

fn path_version() -> impl Strategy<Value = PathVersion> {
    let modified = prop::option::of((0u64..1 << 40, 0u32..1_000_000_000))
        .prop_map(|t| t.map(|(s, n)| UNIX_EPOCH + Duration::new(s, n)));
    (
        long_name(),
        any::<u64>(),
        long_name(),
        modified,
        0u16..=0o7777,
        proptest::option::of((any::<u32>(), any::<u32>())),
    )
        .prop_map(|(path, size, version, modified, perm, owner)| PathVersion {
            path,
            version: FileVersion {
                size,
                version: version.to_string(),
                modified,
                perm,
                owner: owner.map(|(uid, gid)| Owner { uid, gid }),
            },
        })
}

fn commit_msg() -> impl Strategy<Value = CommitMsg<PathVersion>> {
    use CommitMsg::*;
    prop_oneof![
        (
            any::<u64>(),
            long_name(),
            prop::option::of(prop::option::of(tcommit()))
        )
            .prop_map(|(nonce, path, first)| Open {
                nonce,
                path,
                first: first.map(|tlocal| FirstBlock { tlocal }),
            }),
        (
            any::<u64>(),
            prop::option::of((tcommit(), path_version())),
            any::<bool>()
        )
            .prop_map(|(nonce, answer, served)| Opened {
                nonce,
                answer,
                served
            }),
        (any::<u64>(), long_name(), prop::option::of(tcommit()))
            .prop_map(|(nonce, path, topen)| Commit { nonce, path, topen }),
        (any::<u64>(), prop::option::of((tcommit(), any::<bool>()))).prop_map(|(nonce, answer)| {
            Committed {
                nonce,
                answer: answer
                    .map(|(tcommit, valid)| coopcache_core::c2cfs::Committed { tcommit, valid }),
            }
        }),
        (any::<u64>(), long_name()).prop_map(|(nonce, path)| Forget { nonce, path }),
        any::<u64>().prop_map(|nonce| Forgot { nonce }),
    ]
}

fn warm_msg() -> impl Strategy<Value = WarmMsg> {
    let answer = prop_oneof![
        any::<u64>().prop_map(|bytes| WarmAnswer::Read { bytes }),
        Just(WarmAnswer::NotRead),
        Just(WarmAnswer::Busy),
        Just(WarmAnswer::NotManager),
    ];
    prop_oneof![
        (any::<u64>(), long_name()).prop_map(|(nonce, path)| WarmMsg::Warm { nonce, path }),
        (any::<u64>(), answer).prop_map(|(nonce, answer)| WarmMsg::Warmed { nonce, answer }),
    ]
}

fn list_msg() -> impl Strategy<Value = ListMsg<DirListing>> {
    let kind = prop_oneof![
        Just(EntryKind::File),
        Just(EntryKind::Dir),
        Just(EntryKind::Symlink)
    ];
    // Names as a listing may carry them: one path part, not `.` or `..`.
    let entry_name = "[^/\\pC]{1,30}".prop_filter("a name", |n| n != "." && n != "..");
    let entry = (
        entry_name,
        kind,
        prop::option::of(path_version().prop_map(|v| v.version)),
    )
        .prop_map(|(name, kind, version)| DirEntry {
            name,
            kind,
            version,
        });
    let listing = (long_name(), prop::collection::vec(entry, 0..20))
        .prop_map(|(dir, entries)| DirListing::new(dir, entries));
    prop_oneof![
        (any::<u64>(), long_name()).prop_map(|(nonce, dir)| ListMsg::List { nonce, dir }),
        (any::<u64>(), prop::option::of(listing))
            .prop_map(|(nonce, listing)| ListMsg::Listed { nonce, listing }),
        (any::<u64>(), long_name(), any::<bool>()).prop_map(|(nonce, dir, subtree)| {
            ListMsg::Changed {
                nonce,
                dir,
                subtree,
            }
        }),
        (any::<u64>(), any::<bool>())
            .prop_map(|(nonce, managed)| ListMsg::Noted { nonce, managed }),
    ]
}

fn lock_msg() -> impl Strategy<Value = LockMsg> {
    let space = prop_oneof![Just(LockSpace::Posix), Just(LockSpace::Flock)];
    let kind = prop_oneof![Just(LockKind::Shared), Just(LockKind::Exclusive)];
    let range = (any::<u64>(), any::<u64>())
        .prop_map(|(a, b)| LockRange::new(a.min(b), a.max(b)).expect("ordered"))
        .boxed();
    let error = prop_oneof![
        Just(LockError::TooManyLocks),
        Just(LockError::TooManyWaiters),
        Just(LockError::Deadlock),
        Just(LockError::Cancelled),
        Just(LockError::DuplicateNonce),
        Just(LockError::PathTooLong),
        Just(LockError::Unanswered),
    ]
    .boxed();
    let conflict = (
        any::<u32>(),
        any::<u64>(),
        kind.clone(),
        range.clone(),
        any::<u32>(),
    )
        .prop_map(|(node, owner, kind, range, pid)| LockConflict {
            owner: LockOwner { node, owner },
            kind,
            range,
            pid,
        })
        .boxed();
    let request = (
        any::<u64>(),
        long_name(),
        space.clone(),
        any::<u64>(),
        kind.clone(),
        range.clone(),
        any::<bool>(),
        any::<u32>(),
    )
        .prop_map(
            |(nonce, path, space, owner, kind, range, wait, pid)| LockRequest {
                nonce,
                path,
                space,
                owner,
                kind,
                range,
                wait,
                pid,
            },
        )
        .boxed();
    let answer = prop_oneof![
        Just(LockAnswer::Done(Ok(LockOutcome::Granted))),
        Just(LockAnswer::Done(Ok(LockOutcome::Waiting))),
        conflict
            .clone()
            .prop_map(|c| LockAnswer::Done(Ok(LockOutcome::Conflict(c)))),
        error.clone().prop_map(|e| LockAnswer::Done(Err(e))),
        prop::option::of(conflict).prop_map(LockAnswer::Tested),
        Just(LockAnswer::NotManager),
    ];
    prop_oneof![
        request.clone().prop_map(LockMsg::Lock),
        request.prop_map(LockMsg::Reclaim),
        (
            any::<u64>(),
            long_name(),
            space.clone(),
            any::<u64>(),
            range.clone()
        )
            .prop_map(|(nonce, path, space, owner, range)| LockMsg::Unlock {
                nonce,
                path,
                space,
                owner,
                range
            }),
        (any::<u64>(), long_name(), space.clone(), any::<u64>()).prop_map(
            |(nonce, path, space, owner)| LockMsg::Release {
                nonce,
                path,
                space,
                owner
            }
        ),
        (any::<u64>(), long_name(), space, any::<u64>(), kind, range).prop_map(
            |(nonce, path, space, owner, kind, range)| LockMsg::Test {
                nonce,
                path,
                space,
                owner,
                kind,
                range
            }
        ),
        any::<u64>().prop_map(|nonce| LockMsg::Cancel { nonce }),
        Just(LockMsg::Renew),
        (any::<u64>(), answer).prop_map(|(nonce, answer)| LockMsg::Answer { nonce, answer }),
        (any::<u64>(), prop::option::of(error)).prop_map(|(nonce, e)| LockMsg::Granted {
            nonce,
            result: e.map_or(Ok(()), Err)
        }),
    ]
}

fn wire() -> impl Strategy<Value = Wire> {
    prop_oneof![
        (
            14..=u16::MAX,
            any::<u32>(),
            name(),
            name(),
            any::<u32>(),
            name()
        )
            .prop_map(
                |(version, node, name, listen, block_size, release)| Wire::Hello {
                    version,
                    node,
                    name,
                    listen,
                    block_size,
                    // Version 14's Hello has none (see the `Hello` roundtrip
                    // below).
                    release: match version >= RELEASE_SINCE {
                        true => release,
                        false => String::new(),
                    },
                }
            ),
        prop::collection::vec((any::<u32>(), name()), 0..20).prop_map(Wire::Members),
        prop::collection::vec(any::<u8>(), 0..=frame::MAX_GOSSIP)
            .prop_map(|g| Wire::Gossip(Bytes::from(g))),
        Just(Wire::Leaving),
        prop::collection::vec(any::<u8>(), 0..=coopcache_node::revocation::MAX_CRL)
            .prop_map(|c| Wire::Revoked(Bytes::from(c))),
        msg().prop_map(Wire::Peer),
        commit_msg().prop_map(Wire::Commit),
        lock_msg().prop_map(Wire::Lock),
        warm_msg().prop_map(Wire::Warm),
        list_msg().prop_map(Wire::List),
    ]
}

fn encoded(w: &Wire) -> BytesMut {
    let mut buf = BytesMut::new();
    encode(w, &mut buf);
    buf
}

fn header_of(buf: &[u8]) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h.copy_from_slice(&buf[..HEADER]);
    h
}

/// Decodes `body`; if it is accepted, it must be exactly what the encoder
/// writes for the value it decoded to.
fn check_canonical(body: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(w) = decode(Bytes::copy_from_slice(body)) {
        let again = encoded(&w);
        prop_assert_eq!(&again[HEADER..], body, "{:?} has two encodings", w);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn decoding_arbitrary_bytes_never_panics(body in prop::collection::vec(any::<u8>(), 0..600)) {
        check_canonical(&body)?;
    }

    /// Bytes that start like a frame of each kind reach deeper than
    /// uniformly random ones.
    #[test]
    fn decoding_any_kind_with_arbitrary_body_never_panics(
        kind in 0u8..80,
        body in prop::collection::vec(any::<u8>(), 0..120),
    ) {
        let mut b = vec![kind];
        b.extend_from_slice(&body);
        check_canonical(&b)?;
    }

    /// A valid frame cut short, bit-flipped or extended is refused or
    /// decodes to something that re-encodes to it, and never panics.
    #[test]
    fn mutated_frames_never_panic(
        w in wire(),
        cut in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 0..4),
        extra in prop::collection::vec(any::<u8>(), 0..3),
    ) {
        let buf = encoded(&w);
        let body = &buf[HEADER..];
        let short = &body[..cut.index(body.len() + 1)];
        check_canonical(short)?;
        let mut flipped = body.to_vec();
        for (at, bit) in &flips {
            let i = at.index(flipped.len());
            flipped[i] ^= 1 << bit;
        }
        check_canonical(&flipped)?;
        let mut longer = body.to_vec();
        longer.extend_from_slice(&extra);
        if !extra.is_empty() {
            // Bytes after a complete frame are refused, except after a
            // data-carrying message or gossip, whose bytes run to the
            // frame's end.
            let carries_data = matches!(
                &w,
                Wire::Peer(PeerMsg::Data { .. } | PeerMsg::Recirculate { .. } | PeerMsg::Place { .. })
                    | Wire::Gossip(_)
                    | Wire::Revoked(_)
            );
            if !carries_data {
                let refused = matches!(
                    decode(Bytes::from(longer.clone())),
                    Err(FrameError::Malformed { .. })
                );
                prop_assert!(refused, "{:?} with {} bytes appended was accepted", w, extra.len());
            }
        }
        check_canonical(&longer)?;
    }

    #[test]
    fn every_frame_roundtrips(w in wire()) {
        let buf = encoded(&w);
        let len = body_len(header_of(&buf), frame::max_frame(MAX_DATA as u32)).unwrap();
        prop_assert_eq!(len, buf.len() - HEADER);
        prop_assert_eq!(decode(buf.freeze().slice(HEADER..)).unwrap(), w);
    }

    /// Every length in a header is refused if over the limit and accepted
    /// if within it; zero is an empty frame.
    #[test]
    fn lengths_over_the_limit_are_refused(len in any::<u32>(), max in 0usize..(1 << 24)) {
        let got = body_len(len.to_be_bytes(), max);
        let len = len as usize;
        let want = match len {
            0 => Err(FrameError::Empty),
            l if l > max => Err(FrameError::TooLong { len, max }),
            l => Ok(l),
        };
        prop_assert_eq!(got, want);
    }

    /// A stream announcing a frame over the limit is refused at its header,
    /// before the body (never sent here) is waited for or allocated.
    #[test]
    fn a_stream_with_an_oversized_header_is_refused(
        over in 1u32..u32::MAX / 2,
        block_size in prop::sample::select(vec![512u32, 4096, 65536, 4 << 20]),
    ) {
        let max = frame::max_frame(block_size);
        let announced = (max as u32).saturating_add(over);
        let stream = announced.to_be_bytes();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let got = rt.block_on(read_frame(&mut &stream[..], max));
        let refused = matches!(
            got,
            Err(coopcache_node::link::LinkError::Frame(FrameError::TooLong { .. }))
        );
        prop_assert!(refused, "{:?}", got);
    }

    /// Reading arbitrary bytes as a stream of frames never panics, and
    /// every frame it yields is one the encoder would write.
    #[test]
    fn reading_arbitrary_streams_never_panics(stream in prop::collection::vec(any::<u8>(), 0..2000)) {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut r = &stream[..];
        rt.block_on(async {
            while let Ok(Some(w)) = read_frame(&mut r, frame::max_frame(512)).await {
                let _ = encoded(&w);
            }
        });
    }
}

/// The limits the decoder applies are those the encoder respects: a frame
/// with the most members, or the longest names, still fits its size check
/// when each entry is small.
#[test]
fn the_largest_hello_fits_the_smallest_frame_limit() {
    let long = "x".repeat(MAX_NAME);
    let hello = Wire::Hello {
        version: u16::MAX,
        node: u32::MAX,
        name: long.clone(),
        listen: long.clone(),
        block_size: 512,
        release: long,
    };
    let buf = encoded(&hello);
    assert!(buf.len() - HEADER <= MAX_OVERHEAD);
    assert!(body_len(header_of(&buf), frame::max_frame(512)).is_ok());
    // Names longer than the limit are cut to it, not refused.
    let cut = Wire::Hello {
        version: 1,
        node: 1,
        name: "y".repeat(MAX_NAME + 10),
        listen: String::new(),
        block_size: 512,
        release: String::new(),
    };
    match decode(encoded(&cut).freeze().slice(HEADER..)).unwrap() {
        Wire::Hello { name, .. } => assert_eq!(name.len(), MAX_NAME),
        other => panic!("{other:?}"),
    }
    // A Members frame over MAX_MEMBERS is cut to it.
    let many = Wire::Members(
        (0..MAX_MEMBERS as u32 + 5)
            .map(|i| (i, String::new()))
            .collect(),
    );
    match decode(encoded(&many).freeze().slice(HEADER..)).unwrap() {
        Wire::Members(m) => assert_eq!(m.len(), MAX_MEMBERS),
        other => panic!("{other:?}"),
    }
}
