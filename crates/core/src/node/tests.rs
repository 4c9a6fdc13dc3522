//! Two joined nodes over a FIFO wire: an open's first block is carried by
//! the open itself, and every machine hears one membership and one clock.

use super::*;
use crate::c2cfs::exclusive::{CommitConfig, manager_key, path_key};
use crate::coop::{AlgorithmKind, Level, LiveShape};
use crate::policy::PolicyKind;
use crate::protocol::{BlockId, Digest, ProtocolConfig, ReadFailure, Served, manager_of, route_of};
use std::collections::VecDeque;

const BLOCK_SIZE: u32 = 4096;
const MEMBERS: [NodeId; 2] = [0, 1];

type N = Node<BlockId, Digest, u64, Dir>;
type M = Msg<BlockId, Digest, u64, Dir>;

/// A listing of these tests: a directory with no entries.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Dir(Arc<str>);

impl Listing for Dir {
    fn bytes(&self) -> usize {
        0
    }

    fn dir(&self) -> &str {
        &self.0
    }
}

/// The first block of `version` of `path`, routed by the path, as the
/// daemon names it.
fn first_block(path: &str, version: &u64) -> BlockId {
    BlockId {
        file: path_key(path) ^ version.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        index: 0,
        route: route_of(path_key(path)),
    }
}

/// The origin's contents of a block: a digest of its id.
fn content(block: BlockId) -> Digest {
    let mut hash = [0u8; 32];
    hash[..8].copy_from_slice(&block.file.to_le_bytes());
    hash[8..12].copy_from_slice(&block.index.to_le_bytes());
    Digest {
        hash,
        len: BLOCK_SIZE,
    }
}

fn node(id: NodeId) -> N {
    let shape = LiveShape {
        capacity: 64,
        policy: PolicyKind::Lru,
        chances: 2,
        seed: 1,
        classes: Default::default(),
    };
    let kind = AlgorithmKind::Greedy;
    let machines = kind.build_live(id, &shape).unwrap();
    let reads = NodeProtocol::new(
        id,
        kind,
        machines,
        ProtocolConfig::for_node(64, BLOCK_SIZE),
        0,
    );
    let commits = CommitProtocol::new(
        id,
        1,
        CommitConfig {
            capacity: 64,
            timeout_us: 1_000_000,
            stable_us: 0,
            serve_first: true,
        },
    )
    .unwrap();
    let mut n = Node::new(
        reads,
        commits,
        LockProtocol::new(id, Default::default()),
        ListProtocol::new(id, Default::default()).unwrap(),
        first_block,
    );
    n.set_members(&MEMBERS, 0);
    n
}

/// A path node `manager` manages among the two.
fn managed_by(manager: NodeId) -> Arc<str> {
    (0..10_000)
        .map(|i| format!("/data/f{i}"))
        .find(|p| manager_of(manager_key(p), &MEMBERS) == Some(manager))
        .unwrap()
        .into()
}

/// Two nodes, the wire between them, and what each did besides sending.
struct Pair {
    nodes: [N; 2],
    wire: VecDeque<(NodeId, NodeId, M)>,
    /// Every output but sends, by node, in order.
    seen: [Vec<Output<BlockId, Digest, u64, Dir>>; 2],
    /// Every message sent: (from, to, message).
    sent: Vec<(NodeId, NodeId, M)>,
    /// The origin's version of every file.
    version: u64,
    now: u64,
}

impl Pair {
    fn new() -> Pair {
        Pair {
            nodes: [node(0), node(1)],
            wire: VecDeque::new(),
            seen: [Vec::new(), Vec::new()],
            sent: Vec::new(),
            version: 7,
            now: 10,
        }
    }

    /// Takes node `id`'s outputs: sends go on the wire, origin reads and
    /// stats are answered at once, the rest is kept.
    fn collect(&mut self, id: NodeId) {
        let now = self.now;
        let i = id as usize;
        while let Some(o) = self.nodes[i].poll() {
            let send = match &o {
                Output::Read(ReadAction::Send { to, msg }) => Some((*to, Msg::Read(msg.clone()))),
                Output::Commit(CommitAction::Send { to, msg }) => {
                    Some((*to, Msg::Commit(msg.clone())))
                }
                Output::Lock(LockAction::Send { to, msg }) => Some((*to, Msg::Lock(msg.clone()))),
                _ => None,
            };
            if let Some((to, msg)) = send {
                self.sent.push((id, to, msg.clone()));
                self.wire.push_back((id, to, msg));
                continue;
            }
            match &o {
                Output::Read(ReadAction::ReadOrigin { block }) => {
                    let block = *block;
                    self.nodes[i].handle_origin_done(block, Ok(content(block)), now);
                }
                Output::Commit(CommitAction::Stat { path }) => {
                    let (path, v) = (path.clone(), self.version);
                    self.nodes[i].handle_stat(&path, Ok(v), now);
                }
                _ => {}
            }
            self.seen[i].push(o);
        }
    }

    fn run(&mut self) {
        for id in 0..2 {
            self.collect(id);
        }
        while let Some((from, to, msg)) = self.wire.pop_front() {
            self.now += 1;
            self.nodes[to as usize].handle_message(from, msg, self.now);
            self.collect(to);
        }
    }

    fn completed(
        &self,
        id: NodeId,
        block: BlockId,
    ) -> Option<&Result<Served<Digest>, ReadFailure>> {
        self.seen[id as usize].iter().find_map(|o| match o {
            Output::Read(ReadAction::Complete { block: b, result }) if *b == block => Some(result),
            _ => None,
        })
    }
}

#[test]
fn an_open_carries_its_first_block_and_the_opener_never_asks_for_it() {
    let mut p = Pair::new();
    let path = managed_by(1);
    let block = first_block(&path, &p.version);
    p.nodes[0].handle_open(1, path.clone(), true, p.now);
    p.run();

    // The opener knew which version the block's read reads before its
    // caller heard the answer, and the caller's answer names it.
    let opener = &p.seen[0];
    let first = opener
        .iter()
        .position(|o| matches!(o, Output::FirstRead { block: b, version: 7, .. } if *b == block))
        .expect("the opener started the carried read");
    let opened = opener
        .iter()
        .position(|o| {
            matches!(
                o,
                Output::Commit(CommitAction::Opened {
                    req: 1,
                    answer: Some((_, 7))
                })
            )
        })
        .expect("the open was answered with the origin's version");
    assert!(first < opened, "{opener:?}");
    // No machine's output leaked a pairing action to the driver.
    assert!(!p.seen.iter().flatten().any(|o| matches!(
        o,
        Output::Commit(
            CommitAction::ServeFirst { .. }
                | CommitAction::AwaitFirst { .. }
                | CommitAction::ReadFirst { .. }
        )
    )));
    // The read ended at the opener as its own read would, from the
    // origin (no one held it), without a `Read` of its own.
    assert_eq!(
        p.completed(0, block),
        Some(&Ok(Served {
            data: content(block),
            level: Level::Origin
        }))
    );
    let asked = p
        .sent
        .iter()
        .any(|(from, _, m)| *from == 0 && *m == Msg::Read(PeerMsg::Read { block }));
    assert!(!asked, "the opener sent its own Read: {:?}", p.sent);
    assert_eq!(p.nodes[0].reads().stats().violations.len(), 0);
    assert_eq!(p.nodes[1].reads().stats().violations.len(), 0);
}

#[test]
fn a_second_open_elsewhere_is_served_the_first_block_from_the_first_readers_memory() {
    let mut p = Pair::new();
    // Managed by 0: node 1 opens, reads from the origin (carried), then
    // node 0's user reads the same block and is forwarded to node 1.
    let path = managed_by(0);
    let block = first_block(&path, &p.version);
    p.nodes[1].handle_open(1, path.clone(), true, p.now);
    p.run();
    assert!(matches!(
        p.completed(1, block),
        Some(Ok(Served {
            level: Level::Origin,
            ..
        }))
    ));
    p.nodes[0].handle_read(block, p.now);
    p.run();
    assert_eq!(
        p.completed(0, block),
        Some(&Ok(Served {
            data: content(block),
            level: Level::RemoteNode
        }))
    );
}

#[test]
fn every_machine_hears_one_membership_and_the_earliest_deadline_wins() {
    let mut n = node(0);
    n.set_members(&[0, 1, 2], 5);
    assert_eq!(n.reads().members(), &[0, 1, 2]);
    assert_eq!(n.commits().members(), &[0, 1, 2]);
    // A read waiting on a peer arms the reads' timer; a lock call on a
    // file another node manages arms the lock machine's: the node's
    // deadline is the earlier of them.
    let path = managed_by(1);
    let block = first_block(&path, &7);
    n.handle_read(block, 10);
    while n.poll().is_some() {}
    let reads = n
        .reads()
        .poll_timeout()
        .expect("a read waits on its manager");
    assert_eq!(
        n.poll_timeout(),
        Some(reads.min(n.locks().poll_timeout().unwrap_or(u64::MAX)))
    );
    // Firing it times the read out through the node.
    n.handle_timeout(reads);
    let mut outs = Vec::new();
    while let Some(o) = n.poll() {
        outs.push(o);
    }
    assert!(
        outs.iter()
            .any(|o| matches!(o, Output::Read(ReadAction::ReadOrigin { block: b }) if *b == block)),
        "{outs:?}"
    );
}
