//! Lying members: they run the real protocol, so they hold blocks, manage
//! files and get grants like anyone, and around it they lie in what they
//! send, forge messages of every kind, and replay what they were sent.
//! Their bytes and their records agree with each other ([`evil`]), so a
//! node that trusted a forged record would take the liar's bytes.

use super::BLOCK_SIZE;
use crate::protocol::content_of;
use coopcache_core::coop::NodeId;
use coopcache_core::protocol::{BlockId, Digest, PeerMsg, Recorded, manager_of};
use rand::Rng;
use rand_pcg::Pcg64Mcg;
use std::collections::VecDeque;

/// The bytes a liar passes off as `block` (and records for it).
pub(super) fn evil(block: BlockId) -> Digest {
    let mut d = content_of(&block, BLOCK_SIZE);
    d.hash[31] ^= 0xa5;
    d
}

/// Messages a liar keeps to replay.
const KEPT: usize = 32;

/// One lying member's memory.
#[derive(Default)]
pub(super) struct Liar {
    seen: VecDeque<PeerMsg<BlockId, Digest>>,
}

type Msg = PeerMsg<BlockId, Digest>;

/// Wrong contents for `block`: the liar's own, flipped, truncated, an
/// older version's or another block's.
fn wrong(rng: &mut Pcg64Mcg, block: BlockId) -> Digest {
    let good = content_of(&block, BLOCK_SIZE);
    match rng.random_range(0..5) {
        0 => evil(block),
        1 => {
            let mut d = good;
            d.hash[rng.random_range(0..32)] ^= 1 << rng.random_range(0..8);
            d
        }
        2 => Digest {
            hash: content_of(&(block, "truncated"), BLOCK_SIZE).hash,
            len: BLOCK_SIZE - 1,
        },
        3 => content_of(
            &BlockId {
                file: block.file ^ 1,
                ..block
            },
            BLOCK_SIZE,
        ),
        _ => content_of(
            &BlockId {
                index: block.index.wrapping_add(1),
                ..block
            },
            BLOCK_SIZE,
        ),
    }
}

impl Liar {
    /// Keeps a message it was sent, to replay later.
    pub(super) fn observe(&mut self, msg: &Msg) {
        if self.seen.len() == KEPT {
            self.seen.pop_front();
        }
        self.seen.push_back(msg.clone());
    }

    /// `msg` as the liar sends it: its contents or digest wrong. Returns
    /// whether it lied.
    pub(super) fn tamper(&mut self, rng: &mut Pcg64Mcg, msg: &mut Msg) -> bool {
        match msg {
            PeerMsg::Data { block, data }
            | PeerMsg::Place { block, data }
            | PeerMsg::Recirculate { block, data, .. } => *data = wrong(rng, *block),
            PeerMsg::Record { block, digest } => *digest = evil(*block),
            // A lying manager keeps the honest recorder's name on its bad
            // digest: the reader must not take the name for a conviction.
            PeerMsg::Expect {
                block, recorded, ..
            }
            | PeerMsg::HashIs {
                block,
                recorded: Some(recorded),
            } => recorded.digest = evil(*block),
            _ => return false,
        }
        true
    }

    /// A liar asked for `msg`'s block (to serve a forwarded read, a
    /// partition read or a parked block) ambushes the reader: it first
    /// vouches for its bad bytes in every role that could vouch for them
    /// (the manager's `Expect` and `HashIs`), then sends them. Only the
    /// block's manager may vouch, so an honest reader refuses all but the
    /// bytes, which then fail the manager's digest.
    pub(super) fn ambush(&self, me: NodeId, from: NodeId, msg: &Msg, out: &mut Vec<(NodeId, Msg)>) {
        use PeerMsg::*;
        let (block, reader) = match *msg {
            Forward { block, reader } => (block, reader),
            PartitionRead { block } | Reclaim { block } => (block, from),
            _ => return,
        };
        let bad = evil(block);
        let recorded = Recorded {
            digest: bad,
            by: me,
        };
        out.push((
            reader,
            Expect {
                block,
                recorded,
                holder: me,
            },
        ));
        out.push((
            reader,
            HashIs {
                block,
                recorded: Some(recorded),
            },
        ));
        out.push((reader, Data { block, data: bad }));
    }

    /// Messages of its own making about `block`: each kind a member could
    /// send, to whoever it may hurt, or one it was sent, replayed.
    pub(super) fn forge(
        &mut self,
        rng: &mut Pcg64Mcg,
        me: NodeId,
        members: &[NodeId],
        block: BlockId,
        out: &mut Vec<(NodeId, Msg)>,
    ) {
        use PeerMsg::*;
        let anyone = members[rng.random_range(0..members.len())];
        let manager = manager_of(u64::from(block.route), members).unwrap_or(anyone);
        let bad = evil(block);
        // Vouching for bad bytes in an honest member's name.
        let recorded = Recorded {
            digest: bad,
            by: anyone,
        };
        let (to, msg) = match rng.random_range(0..18) {
            0 => (manager, Record { block, digest: bad }),
            1 => (anyone, Invalidate { block }),
            2 => {
                out.push((
                    anyone,
                    Expect {
                        block,
                        recorded,
                        holder: me,
                    },
                ));
                (anyone, Data { block, data: bad })
            }
            3 => (
                anyone,
                HashIs {
                    block,
                    recorded: Some(recorded),
                },
            ),
            4 => (
                anyone,
                FetchOrigin {
                    block,
                    record: true,
                },
            ),
            5 => (
                anyone,
                Forward {
                    block,
                    reader: members[rng.random_range(0..members.len())],
                },
            ),
            6 => (
                anyone,
                Singlet {
                    block,
                    singlet: true,
                },
            ),
            7 => (manager, Cached { block }),
            8 => (manager, NotHere { block }),
            9 => (manager, Dropped { block }),
            10 => (manager, Read { block }),
            11 => (anyone, PartitionRead { block }),
            12 => (anyone, Reclaim { block }),
            13 => (anyone, Place { block, data: bad }),
            14 => (
                anyone,
                Recirculate {
                    block,
                    chances: rng.random_range(0..=9),
                    data: bad,
                },
            ),
            15 => (anyone, Data { block, data: bad }),
            16 => (anyone, Missing { block }),
            _ => match self.seen.len() {
                0 => return,
                n => (anyone, self.seen[rng.random_range(0..n)].clone()),
            },
        };
        out.push((to, msg));
    }
}
