//! A peer's bytes on a link: a frame header checked by `frame::body_len`
//! against a 64 KiB-block node's limit, and a body decoded by
//! `frame::decode`. Beyond not panicking: an accepted length is within
//! the limit and nonzero, and a body that decodes re-encodes to exactly the
//! same bytes (each frame has one encoding), so it decodes equal again.

use bytes::{Bytes, BytesMut};
use coopcache_node::frame::{HEADER, body_len, decode, encode, max_frame};

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    let Some((header, body)) = data.split_first_chunk::<HEADER>() else {
        return;
    };
    let max = max_frame(64 << 10);
    if let Ok(len) = body_len(*header, max) {
        assert!(len > 0 && len <= max, "accepted length {len}");
    }
    let Ok(wire) = decode(Bytes::copy_from_slice(body)) else {
        return;
    };
    let mut again = BytesMut::new();
    encode(&wire, &mut again);
    assert_eq!(&again[HEADER..], body, "{wire:?} re-encodes differently");
    assert_eq!(decode(again.freeze().slice(HEADER..)).as_ref(), Ok(&wire));
}
