//! Lying members: they run the real protocol, so they hold blocks, manage
//! files and get grants like anyone, and around it they lie in what they
//! send, forge messages of every kind, and replay what they were sent.
//! Their bytes and their records agree with each other ([`evil`]), so a
//! node that trusted a forged record would take the liar's bytes. In
//! `exclusive` seeds they also answer opens they were never asked,
//! answer them with versions that do not exist, and send lock answers and
//! requests of every kind.

use super::BLOCK_SIZE;
use super::version::{self, Listed, Version};
use crate::protocol::content_of;
use coopcache_core::c2cfs::exclusive::CommitMsg;
use coopcache_core::c2cfs::listings::ListMsg;
use coopcache_core::c2cfs::locks::{LockKind, LockMsg, LockRange, LockRequest, LockSpace};
use coopcache_core::c2cfs::{Committed, Tcommit};
use coopcache_core::coop::NodeId;
use coopcache_core::node;
use coopcache_core::protocol::{BlockId, Digest, PeerMsg, Recorded, manager_of};
use coopcache_core::warm::{WarmAnswer, WarmMsg};
use rand::Rng;
use rand_pcg::Pcg64Mcg;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

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
    seen: VecDeque<Msg>,
    /// The latest C2Cfs request nonce each member sent it: a member's
    /// nonces count up, so its next requests' are easy to guess.
    nonces: BTreeMap<NodeId, u64>,
    /// The latest listing nonce each member asked it with.
    list_nonces: BTreeMap<NodeId, u64>,
}

/// A message of any of the node's machines.
pub(super) type Msg = node::Msg<BlockId, Digest, Version, Listed>;

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
    pub(super) fn observe(&mut self, from: NodeId, msg: &Msg) {
        if let node::Msg::Commit(
            CommitMsg::Open { nonce, .. }
            | CommitMsg::Commit { nonce, .. }
            | CommitMsg::Forget { nonce, .. },
        ) = *msg
        {
            let latest = self.nonces.entry(from).or_default();
            *latest = (*latest).max(nonce);
        }
        if let node::Msg::List(ListMsg::List { nonce, .. }) = *msg {
            let latest = self.list_nonces.entry(from).or_default();
            *latest = (*latest).max(nonce);
        }
        if self.seen.len() == KEPT {
            self.seen.pop_front();
        }
        self.seen.push_back(msg.clone());
    }

    /// `msg` as the liar sends it: its contents or digest wrong. Returns
    /// whether it lied.
    pub(super) fn tamper(&mut self, rng: &mut Pcg64Mcg, msg: &mut Msg) -> bool {
        let msg = match msg {
            node::Msg::Read(m) => m,
            // A lying manager answers an open with a version the origin
            // never had: the opener's read of it must fail, not serve.
            node::Msg::Commit(CommitMsg::Opened {
                answer: Some((_, v)),
                ..
            }) => {
                v.file ^= 0x5eed;
                return true;
            }
            _ => return false,
        };
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
            node::Msg::Read(Forward { block, reader }) => (block, reader),
            node::Msg::Read(PartitionRead { block } | Reclaim { block }) => (block, from),
            _ => return,
        };
        let bad = evil(block);
        let recorded = Recorded {
            digest: bad,
            by: me,
        };
        out.push((
            reader,
            node::Msg::Read(Expect {
                block,
                recorded,
                holder: me,
            }),
        ));
        out.push((
            reader,
            node::Msg::Read(HashIs {
                block,
                recorded: Some(recorded),
            }),
        ));
        out.push((reader, node::Msg::Read(Data { block, data: bad })));
    }

    /// Messages of its own making about `block`: each kind a member could
    /// send, to whoever it may hurt, or one it was sent, replayed.
    pub(super) fn forge(
        &mut self,
        rng: &mut Pcg64Mcg,
        me: NodeId,
        members: &[NodeId],
        (path, block): (u32, BlockId),
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
        let nonce = self.nonces.get(&anyone).map_or(1, |n| n + 1);
        if rng.random_bool(1.0 / 3.0) {
            let forged = forge_c2cfs(rng, path, block, nonce);
            out.extend(forged.into_iter().map(|m| (anyone, m)));
            return;
        }
        let (to, msg) = match rng.random_range(0..23) {
            0 => (manager, Record { block, digest: bad }),
            1 => (anyone, Invalidate { block }),
            2 => {
                out.push((
                    anyone,
                    node::Msg::Read(Expect {
                        block,
                        recorded,
                        holder: me,
                    }),
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
            // A liar claiming its disk has the block draws readers to it.
            9 => (
                manager,
                Dropped {
                    block,
                    on_disk: true,
                },
            ),
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
            17 => (manager, Evict { block }),
            // A warm-up asked of anyone (it reads its own origin, or says
            // it is busy or not the manager), and an answer nobody asked.
            18 => {
                let path = version::name(path);
                out.push((anyone, node::Msg::Warm(WarmMsg::Warm { nonce, path })));
                return;
            }
            19 => {
                let answer = WarmAnswer::Read { bytes: 1 };
                out.push((anyone, node::Msg::Warm(WarmMsg::Warmed { nonce, answer })));
                return;
            }
            // A listing asked of anyone, or a change told to anyone (both
            // a member's right), and a listing nobody asked for.
            20 => {
                let dir: Arc<str> = version::DIR.into();
                let msg = match rng.random_bool(0.5) {
                    true => ListMsg::List { nonce, dir },
                    false => ListMsg::Changed {
                        nonce,
                        dir,
                        subtree: rng.random_bool(0.5),
                    },
                };
                out.push((anyone, node::Msg::List(msg)));
                return;
            }
            21 => {
                // Answers to the listing a member last asked of it (still
                // waiting while the liar's origin lists) and its next
                // ones: of the directory, or of another one, which the
                // lister must refuse.
                let dir = match rng.random_bool(0.5) {
                    true => version::DIR,
                    false => "/elsewhere",
                };
                let listing = Some(Listed {
                    dir: dir.into(),
                    files: 0,
                });
                let first = self.list_nonces.get(&anyone).copied().unwrap_or(0);
                for nonce in first..first + SPRAY {
                    let listing = listing.clone();
                    let msg = ListMsg::Listed { nonce, listing };
                    out.push((anyone, node::Msg::List(msg)));
                }
                return;
            }
            _ => {
                if let n @ 1.. = self.seen.len() {
                    out.push((anyone, self.seen[rng.random_range(0..n)].clone()));
                }
                return;
            }
        };
        out.push((to, node::Msg::Read(msg)));
    }
}

/// Answers to opens sprayed at once, for consecutive nonces: a member's
/// requests to other managers move its counter past the last one the
/// liar saw.
const SPRAY: u64 = 8;

/// C2Cfs messages of the liar's making about `path` (whose `block` the
/// liar drew): answers to opens, commits and locks its target may be
/// waiting for (`nonce`, the next its target may use, and the following
/// ones), carrying a version of the path the origin never had, and
/// requests of its own.
fn forge_c2cfs(rng: &mut Pcg64Mcg, path: u32, block: BlockId, nonce: u64) -> Vec<Msg> {
    let fake = Version {
        path,
        file: block.file ^ 0x5eed,
    };
    let path = version::name(path);
    let tcommit = Tcommit {
        epoch: rng.random(),
        serial: rng.random_range(0..8),
    };
    let request = LockRequest {
        nonce,
        path: path.clone(),
        space: LockSpace::Posix,
        owner: rng.random_range(0..4),
        kind: LockKind::Exclusive,
        range: LockRange::WHOLE,
        wait: rng.random(),
        pid: 1,
    };
    let served = rng.random();
    vec![match rng.random_range(0..9) {
        0 => {
            return (nonce..nonce + SPRAY)
                .map(|nonce| {
                    let answer = Some((tcommit, fake));
                    node::Msg::Commit(CommitMsg::Opened {
                        nonce,
                        answer,
                        served,
                    })
                })
                .collect();
        }
        1 => node::Msg::Commit(CommitMsg::Opened {
            nonce,
            answer: None,
            served: false,
        }),
        2 => node::Msg::Commit(CommitMsg::Committed {
            nonce,
            answer: Some(Committed {
                tcommit,
                valid: true,
            }),
        }),
        3 => node::Msg::Commit(CommitMsg::Forget { nonce, path }),
        4 => node::Msg::Commit(CommitMsg::Commit {
            nonce,
            path,
            topen: Some(tcommit),
        }),
        5 => node::Msg::Commit(CommitMsg::Open {
            nonce,
            path,
            first: None,
        }),
        6 => node::Msg::Lock(LockMsg::Lock(request)),
        7 => node::Msg::Lock(LockMsg::Granted {
            nonce,
            result: Ok(()),
        }),
        _ => node::Msg::Commit(CommitMsg::Forgot { nonce }),
    }]
}
