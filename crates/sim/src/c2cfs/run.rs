//! The replay: schemes, their figures, and the pass over a trace.

use std::collections::HashMap;
use std::str::FromStr;

use coopcache_core::CapacityError;
use coopcache_core::c2cfs::{CommitTable, Source};
use coopcache_core::coop::NodeId;
use serde::Serialize;

use super::node::{Copy, Node};
use crate::chunks::for_each_chunk;
use crate::coop::ClientOutOfRange;
use crate::error::TraceError;
use crate::trace::{Op, Request, Requests};

/// How an open learns whether a copy is current.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// NFS close-to-open: every open asks the origin for the file's
    /// version (a GETATTR); a cached copy of that version is read, else
    /// the origin. No peers.
    Nfs,
    /// C2Cfs, `shared` mode: every open asks the file's manager and the
    /// origin's version; a valid peer serves if the two agree.
    Shared,
    /// C2Cfs, `exclusive` mode (every write goes through the cluster, the
    /// paper's setting): every open asks the file's manager alone.
    Exclusive,
}

impl Scheme {
    /// Its name, as `--consistency` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Nfs => "nfs",
            Scheme::Shared => "c2cfs",
            Scheme::Exclusive => "c2cfs-exclusive",
        }
    }
}

impl std::fmt::Display for Scheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scheme {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "nfs" => Ok(Scheme::Nfs),
            "c2cfs" | "c2cfs-shared" | "shared" => Ok(Scheme::Shared),
            "c2cfs-exclusive" | "exclusive" => Ok(Scheme::Exclusive),
            _ => Err(format!(
                "`{s}`: expected nfs, c2cfs (shared mode) or c2cfs-exclusive"
            )),
        }
    }
}

/// What a replay measured after its warm-up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ConsistencyStats {
    /// Reads (open, read, close).
    pub reads: u64,
    /// Writes (open, write, close), deletes included.
    pub writes: u64,
    /// Reads served by the reader's own copy.
    pub local: u64,
    /// Reads served by a peer holding the latest version.
    pub from_peers: u64,
    /// Reads served by the origin.
    pub origin_reads: u64,
    /// Bytes peers sent.
    pub peer_bytes: u64,
    /// Bytes read from the origin.
    pub origin_read_bytes: u64,
    /// Writes through to the origin (one per close after writing).
    pub origin_writes: u64,
    /// Bytes written to the origin.
    pub origin_write_bytes: u64,
    /// Opens that asked the origin for the file's version.
    pub origin_getattrs: u64,
    /// Messages to file managers: opens, holdings, commits, drops.
    pub manager_messages: u64,
    /// Reads that returned a version older than the origin's: a
    /// close-to-open violation, always 0 unless the scheme is broken.
    pub stale_reads: u64,
}

impl ConsistencyStats {
    /// Every operation the origin served: reads, writes and version
    /// questions.
    pub fn origin_ops(&self) -> u64 {
        self.origin_reads + self.origin_writes + self.origin_getattrs
    }
}

/// Why a replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum ConsistencyError {
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A node's cache could not be built.
    #[error(transparent)]
    Capacity(#[from] CapacityError),
    /// The trace names a client the cluster lacks.
    #[error(transparent)]
    Client(#[from] ClientOutOfRange),
}

/// Files a manager's table keeps (beyond, the least recently used entry is
/// dropped, which costs origin reads, never a stale one).
const MANAGER_FILES: usize = 1 << 20;

/// One scheme's replay.
pub struct ConsistencySim {
    scheme: Scheme,
    nodes: Vec<Node>,
    table: CommitTable<u64, u64>,
    /// The origin's version of each object written so far (others are at
    /// version 0).
    origin: HashMap<u64, u64>,
    /// Bytes of an object whose request gives no size.
    block_size: u64,
    warmup: u64,
    seen: u64,
    stats: ConsistencyStats,
}

impl ConsistencySim {
    /// A cluster of `nodes` clients caching `capacity` bytes each (LRU,
    /// each object weighing its size, or `block_size` where the trace gives
    /// none).
    pub fn new(
        scheme: Scheme,
        nodes: u32,
        capacity: u64,
        block_size: u64,
        warmup: u64,
    ) -> Result<Self, CapacityError> {
        Ok(ConsistencySim {
            scheme,
            nodes: (0..nodes)
                .map(|_| Node::new(capacity))
                .collect::<Result<_, _>>()?,
            table: CommitTable::new(1, MANAGER_FILES)?,
            origin: HashMap::new(),
            block_size,
            warmup,
            seen: 0,
            stats: ConsistencyStats::default(),
        })
    }

    /// The scheme replayed.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// What was measured so far.
    pub fn stats(&self) -> &ConsistencyStats {
        &self.stats
    }

    /// Runs one request.
    pub fn request(&mut self, r: &Request) -> Result<(), ClientOutOfRange> {
        self.seen += 1;
        let nodes = self.nodes.len();
        if r.client as usize >= nodes {
            return Err(ClientOutOfRange {
                request: self.seen,
                client: r.client,
                nodes,
            });
        }
        let measured = self.seen > self.warmup;
        let before = self.stats;
        let bytes = if r.size > 0 {
            u64::from(r.size)
        } else {
            self.block_size
        };
        match r.op {
            Op::Read => self.read(r.client, r.id, bytes),
            Op::Write | Op::Delete => self.write(r.client, r.id, bytes),
        }
        if !measured {
            self.stats = before;
        }
        Ok(())
    }

    fn origin_version(&self, id: u64) -> u64 {
        self.origin.get(&id).copied().unwrap_or(0)
    }

    fn read(&mut self, node: NodeId, id: u64, bytes: u64) {
        self.stats.reads += 1;
        let current = self.origin_version(id);
        let mine = self.nodes[node as usize].copy(id);
        // Where the open reads from: NFS trusts a copy of the origin's
        // version; C2Cfs asks the file's manager (and, shared, the origin).
        let (source, opened) = if self.scheme == Scheme::Nfs {
            self.stats.origin_getattrs += 1;
            let fresh = mine.is_some_and(|c| c.version == current);
            (if fresh { Source::Local } else { Source::Origin }, None)
        } else {
            self.stats.manager_messages += 1;
            let opened = self.table.open(id);
            let shared = (self.scheme == Scheme::Shared).then_some(&current);
            if shared.is_some() {
                self.stats.origin_getattrs += 1;
            }
            let tlocal = mine.and_then(|c| c.tlocal);
            let source = opened.source(node, tlocal, shared, self.seen as usize);
            (source, Some(opened))
        };
        let got = match source {
            Source::Local => None,
            Source::Peer(p) => {
                self.stats.from_peers += 1;
                self.stats.peer_bytes += bytes;
                let theirs = self.nodes[p as usize].copy(id);
                Some(theirs.map_or(u64::MAX, |c| c.version))
            }
            Source::Origin => {
                self.stats.origin_reads += 1;
                self.stats.origin_read_bytes += bytes;
                Some(current)
            }
        };
        let version = match got {
            None => {
                self.stats.local += 1;
                self.nodes[node as usize].touch(id);
                mine.map_or(u64::MAX, |c| c.version)
            }
            Some(v) => {
                let copy = Copy {
                    version: v,
                    tlocal: None,
                };
                if self.keep(node, id, bytes, copy)
                    && let Some(o) = opened
                {
                    self.stats.manager_messages += 1;
                    let tlocal = self.table.holding(id, node, o.tcommit, v);
                    self.nodes[node as usize].confirm(id, tlocal);
                }
                v
            }
        };
        if version != current {
            self.stats.stale_reads += 1;
        }
    }

    fn write(&mut self, node: NodeId, id: u64, bytes: u64) {
        self.stats.writes += 1;
        let topen = if self.scheme == Scheme::Nfs {
            self.stats.origin_getattrs += 1;
            None
        } else {
            self.stats.manager_messages += 1;
            if self.scheme == Scheme::Shared {
                self.stats.origin_getattrs += 1;
            }
            Some(self.table.open(id).tcommit)
        };
        // Write-through at the close, then the commit.
        let version = self.origin_version(id) + 1;
        self.origin.insert(id, version);
        self.stats.origin_writes += 1;
        self.stats.origin_write_bytes += bytes;
        let tlocal = topen.and_then(|topen| {
            self.stats.manager_messages += 1;
            let done = self.table.commit(id, node, topen, version);
            done.valid.then_some(done.tcommit)
        });
        let kept = self.keep(node, id, bytes, Copy { version, tlocal });
        if !kept && tlocal.is_some() {
            // Too large for the writer's cache: it serves nobody.
            self.stats.manager_messages += 1;
            self.table.dropped(id, node);
        }
    }

    /// Caches `copy` of `bytes` on `node`; each object evicted leaves its
    /// valid set. False if it did not fit.
    fn keep(&mut self, node: NodeId, id: u64, bytes: u64, copy: Copy) -> bool {
        let Self {
            nodes,
            table,
            stats,
            scheme,
            ..
        } = self;
        let size = u32::try_from(bytes).unwrap_or(u32::MAX);
        nodes[node as usize].keep(id, size, copy, |dropped| {
            if *scheme != Scheme::Nfs {
                stats.manager_messages += 1;
                table.dropped(dropped, node);
            }
        })
    }
}

/// Replays `requests` through every sim in `sims` in one pass, calling
/// `on_chunk` with the requests read so far.
pub fn simulate(
    requests: Requests,
    sims: &mut [ConsistencySim],
    mut on_chunk: impl FnMut(u64),
) -> Result<(), ConsistencyError> {
    let mut done = 0u64;
    for_each_chunk(requests, Vec::new, |chunk: &Vec<Request>| {
        for sim in sims.iter_mut() {
            for r in chunk {
                sim.request(r)?;
            }
        }
        done += chunk.len() as u64;
        on_chunk(done);
        Ok::<(), ConsistencyError>(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(client: u32, id: u64, op: Op) -> Request {
        Request {
            id,
            client,
            op,
            size: 1000,
            ..Request::default()
        }
    }

    fn replay(scheme: Scheme, requests: &[Request]) -> ConsistencyStats {
        let mut sim = ConsistencySim::new(scheme, 4, 8000, 8192, 0).unwrap();
        for r in requests {
            sim.request(r).unwrap();
        }
        *sim.stats()
    }

    #[test]
    fn the_papers_read_write_experiment_one_writer_three_readers() {
        // Table 2's shape: one client writes a file and closes it, three
        // others read it.
        let mut trace = vec![req(0, 7, Op::Write)];
        trace.extend((1..4).map(|c| req(c, 7, Op::Read)));
        let nfs = replay(Scheme::Nfs, &trace);
        assert_eq!((nfs.origin_reads, nfs.origin_writes), (3, 1));
        assert_eq!(nfs.origin_getattrs, 4);
        for scheme in [Scheme::Shared, Scheme::Exclusive] {
            let c2c = replay(scheme, &trace);
            assert_eq!(c2c.origin_reads, 0, "{scheme}: readers fetch from peers");
            assert_eq!(c2c.from_peers, 3);
            assert_eq!(c2c.origin_writes, 1);
            assert_eq!(c2c.stale_reads, 0);
        }
        assert_eq!(replay(Scheme::Exclusive, &trace).origin_getattrs, 0);
        assert_eq!(replay(Scheme::Shared, &trace).origin_getattrs, 4);
    }

    #[test]
    fn a_write_makes_other_copies_stale_and_the_writer_serves_the_next_reader() {
        let trace = [
            req(0, 1, Op::Read), // origin
            req(1, 1, Op::Read), // from node 0
            req(2, 1, Op::Write),
            req(0, 1, Op::Read), // its copy is stale: from node 2
            req(0, 1, Op::Read), // now local
        ];
        let s = replay(Scheme::Exclusive, &trace);
        assert_eq!((s.origin_reads, s.from_peers, s.local), (1, 2, 1));
        assert_eq!(s.stale_reads, 0);
        let nfs = replay(Scheme::Nfs, &trace);
        assert_eq!((nfs.origin_reads, nfs.local), (3, 1));
    }

    #[test]
    fn an_evicted_copy_leaves_the_valid_set() {
        // Node 0 caches 8 objects of 1000 bytes: reading 9 others evicts
        // object 1, so
        // node 1 must read the origin, not ask node 0.
        let mut trace = vec![req(0, 1, Op::Read)];
        trace.extend((100..109).map(|id| req(0, id, Op::Read)));
        trace.push(req(1, 1, Op::Read));
        let s = replay(Scheme::Exclusive, &trace);
        assert_eq!(s.from_peers, 0);
        assert_eq!(s.origin_reads, 11);
    }

    #[test]
    fn an_object_larger_than_the_writers_cache_is_served_by_the_origin() {
        let big = |client, op| Request {
            size: 9000,
            ..req(client, 3, op)
        };
        let s = replay(Scheme::Exclusive, &[big(0, Op::Write), big(1, Op::Read)]);
        assert_eq!((s.from_peers, s.origin_reads, s.stale_reads), (0, 1, 0));
    }

    #[test]
    fn a_client_beyond_the_cluster_is_an_error_naming_it() {
        let mut sim = ConsistencySim::new(Scheme::Nfs, 2, 8000, 8192, 0).unwrap();
        let err = sim.request(&req(5, 1, Op::Read)).unwrap_err();
        assert_eq!((err.client, err.nodes, err.request), (5, 2, 1));
    }
}
