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

#[tokio::test]
async fn a_forward_is_shed_while_its_link_is_busy_and_reads_still_queue() {
    use crate::link::{BEST_EFFORT_QUEUED, PEER_QUEUE};
    let tmp = tempfile::tempdir().unwrap();
    let mut d = driver(tmp.path());
    link(&mut d);
    let free = |d: &Driver| d.peer(PEER).unwrap().queue.capacity();
    let forward = |i: u32| PeerMsg::Recirculate {
        block: BlockId::new(2, i),
        chances: 2,
        data: Block::new(Bytes::from(vec![7u8; 4096])),
    };
    let read = |i: u32| PeerMsg::Read {
        block: BlockId::new(1, i),
    };
    // Nothing drains the link while this test does not yield (linking
    // may have queued frames already). A forward is queued while the link
    // is not busy...
    let queued = |d: &Driver| PEER_QUEUE - free(d);
    let before = queued(&d);
    d.send_peer(PEER, forward(0));
    assert_eq!(queued(&d), before + 1);
    let mut i = 1;
    while queued(&d) < BEST_EFFORT_QUEUED {
        d.send_peer(PEER, read(i));
        i += 1;
    }
    d.send_peer(PEER, forward(1));
    assert_eq!(queued(&d), BEST_EFFORT_QUEUED + 1);
    assert_eq!(d.metrics.forwards_shed.get(), 0);
    // ...and shed once more than BEST_EFFORT_QUEUED frames wait, where a
    // read still goes.
    d.send_peer(PEER, forward(2));
    assert_eq!(d.metrics.forwards_shed.get(), 1, "shed and counted");
    assert_eq!(queued(&d), BEST_EFFORT_QUEUED + 1);
    d.send_peer(PEER, read(0));
    assert_eq!(queued(&d), BEST_EFFORT_QUEUED + 2);
    assert_eq!(d.metrics.dropped_messages.get(), 0);
}
