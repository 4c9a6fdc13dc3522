//! Blocks queued to peers stay within `PEER_OUT_BYTES`, all links
//! together, whatever the protocol asks to send.

use super::membership_tests::{PEER, driver, link};
use super::*;
use crate::budget::PEER_OUT_BYTES;

fn data(index: u32, len: usize) -> Wire {
    Wire::Peer(PeerMsg::Data {
        block: BlockId::new(1, index),
        data: Bytes::from(vec![7u8; len]),
    })
}

#[tokio::test]
async fn blocks_queued_to_a_stalled_peer_stop_at_the_pool_and_small_frames_still_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d = driver(tmp.path());
    link(&mut d);
    // Nothing drains the link while this test does not yield.
    let block = 64 << 10;
    let fit = (PEER_OUT_BYTES / block as u64) as u32;
    for i in 0..fit {
        assert!(d.send(PEER, data(i, block)), "block {i} of {fit} fits");
    }
    assert_eq!(d.ctx.outbound.available_permits(), 0);
    let dropped = d.metrics.dropped_messages.get();
    assert!(!d.send(PEER, data(fit, block)), "the pool is full");
    assert_eq!(d.metrics.dropped_messages.get(), dropped + 1, "counted");
    let read = Wire::Peer(PeerMsg::Read {
        block: BlockId::new(1, 0),
    });
    assert!(d.send(PEER, read), "a frame without a block is not held up");

    // Frames leaving the queue (written, or dropped with the link) give
    // their bytes back.
    d.leave();
    tokio::task::yield_now().await;
    for _ in 0..100 {
        if d.ctx.outbound.available_permits() == PEER_OUT_BYTES as usize {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(d.ctx.outbound.available_permits(), PEER_OUT_BYTES as usize);
}
