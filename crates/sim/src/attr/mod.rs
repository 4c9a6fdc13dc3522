//! Simulating attribute caches: direct simulation of one configuration,
//! and miss-ratio curves over total cache size from one stack-distance
//! pass per sub-cache stream.

mod direct;
mod stack;

pub use direct::simulate;
pub use stack::StackAnalysis;

use crate::trace::{Op, Request};
use coopcache_core::attr::{
    Access, AttrConfig, FileRequest, FileType, NotationError, Resolved, block_key, span,
};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fmt;

/// File requests as the block requests a cluster's nodes make: each request
/// split into the blocks of the sub-cache `resolved` routes it to, keyed as
/// the attribute cache keys them ([`block_key`]), `size` the sub-cache's
/// block size. Requests whose ids do not fit a key are skipped.
pub fn block_requests(
    requests: impl Iterator<Item = FileRequest>,
    resolved: Resolved,
) -> impl Iterator<Item = Request> {
    requests.enumerate().flat_map(move |(n, r)| {
        let block = resolved.block_size(resolved.route(r.kind, r.file_size));
        let op = match r.access {
            Access::Read => Op::Read,
            Access::Write => Op::Write,
        };
        // The keys `request_keys` gives, without borrowing `resolved` past
        // this request: none if the last block does not fit a key.
        let (subcache, first, end) = span(&resolved, &r);
        let fits = block_key(subcache, r.file, end.saturating_sub(1)).is_some();
        let indexes = if fits { first..end } else { 0..0 };
        indexes
            .filter_map(move |i| block_key(subcache, r.file, i))
            .map(move |id| Request {
                id,
                time: n as u64,
                size: block.min(u64::from(u32::MAX)) as u32,
                client: r.client,
                op,
            })
    })
}

/// One cache of `block` bytes for every request: how file requests become
/// blocks without an attribute cache.
pub fn uniform(block: u64) -> Resolved {
    let text = format!("x/{block} Unix");
    let config: AttrConfig = text.parse().expect("a one-sub-cache notation parses");
    config
        .resolve(block.max(1))
        .expect("one block fits one block")
}

/// What an attribute cache of one total size did with a trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AttrPoint {
    /// Total cache bytes.
    pub total: u64,
    /// Read requests.
    pub read_requests: u64,
    /// Read requests with at least one missing block.
    pub read_misses: u64,
    /// Write requests.
    pub write_requests: u64,
    /// Dirty blocks evicted (one origin write each).
    pub write_expulsions: u64,
    /// Blocks read from the origin.
    pub origin_read_blocks: u64,
    /// Bytes read from the origin.
    pub origin_read_bytes: u64,
    /// Bytes written to the origin by expulsions.
    pub origin_write_bytes: u64,
}

impl AttrPoint {
    /// Read request miss ratio.
    pub fn read_miss_ratio(&self) -> f64 {
        ratio(self.read_misses, self.read_requests)
    }

    /// Write expulsions per write request.
    pub fn expulsions_per_write(&self) -> f64 {
        ratio(self.write_expulsions, self.write_requests)
    }

    /// Origin accesses: one per read request miss and per write expulsion
    /// (the paper's disk accesses, section 4.4).
    pub fn origin_accesses(&self) -> u64 {
        self.read_misses + self.write_expulsions
    }

    /// Origin bytes, both ways.
    pub fn origin_bytes(&self) -> u64 {
        self.origin_read_bytes + self.origin_write_bytes
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// A configuration to evaluate across sizes: one fixed notation, or the
/// paper's variable scheme (Table 1), which changes with the size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// The same sub-caches at every size (`x` takes the rest).
    Fixed(AttrConfig),
    /// The configuration Table 1 gives for each size.
    Variable,
}

impl Scheme {
    /// The configuration at `total` bytes.
    pub fn at(&self, total: u64) -> AttrConfig {
        match self {
            Scheme::Fixed(c) => c.clone(),
            Scheme::Variable => AttrConfig::variable(total),
        }
    }

    /// Every configuration the scheme can use.
    fn configs(&self) -> Vec<AttrConfig> {
        match self {
            Scheme::Fixed(c) => vec![c.clone()],
            Scheme::Variable => AttrConfig::TABLE_1
                .iter()
                .map(|t| t.parse().expect("Table 1 parses"))
                .collect(),
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scheme::Fixed(c) if *c == AttrConfig::unix_baseline() => f.write_str("unix"),
            Scheme::Fixed(c) => write!(f, "{c}"),
            Scheme::Variable => f.write_str("variable"),
        }
    }
}

impl std::str::FromStr for Scheme {
    type Err = NotationError;

    /// `unix` (the baseline), `variable` (Table 1), or a notation.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "unix" => Ok(Scheme::Fixed(AttrConfig::unix_baseline())),
            "variable" => Ok(Scheme::Variable),
            notation => notation.parse().map(Scheme::Fixed),
        }
    }
}

/// A sub-cache's stream: which requests it takes (a bit per file type and
/// large-or-not) and its block size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct StreamKey {
    mask: u8,
    block: u64,
    cutoff: u64,
}

fn bit(kind: FileType, large: bool) -> u8 {
    1 << (kind as u8 * 2 + u8::from(large))
}

/// The streams of `config`'s sub-caches, in order.
fn streams(config: &AttrConfig) -> Vec<StreamKey> {
    (0..config.subcaches.len())
        .map(|i| {
            let mut mask = 0;
            for kind in FileType::ALL {
                for large in [false, true] {
                    if config.route_index(kind, large) == Some(i) {
                        mask |= bit(kind, large);
                    }
                }
            }
            StreamKey {
                mask,
                block: config.subcaches[i].block,
                cutoff: config.cutoff,
            }
        })
        .collect()
}

/// Stack-distance analyses of every sub-cache stream some schemes need,
/// over one trace: the miss-ratio curves of all of them at every size.
pub struct Curves {
    streams: BTreeMap<StreamKey, StackAnalysis>,
    read_requests: u64,
    write_requests: u64,
}

impl Curves {
    /// Analyses `requests` for `schemes`, one pass per distinct stream, in
    /// parallel.
    pub fn new(requests: &[FileRequest], schemes: &[Scheme]) -> Curves {
        let mut keys: Vec<StreamKey> = schemes
            .iter()
            .flat_map(|s| s.configs())
            .flat_map(|c| streams(&c))
            .collect();
        keys.sort();
        keys.dedup();
        let streams = keys
            .par_iter()
            .map(|&k| (k, analyse(requests, k)))
            .collect();
        Curves {
            streams,
            read_requests: requests.iter().filter(|r| r.access == Access::Read).count() as u64,
            write_requests: requests
                .iter()
                .filter(|r| r.access == Access::Write)
                .count() as u64,
        }
    }

    /// The figures of `scheme` at `total` bytes, or why it has none there
    /// (a fixed part larger than the total).
    pub fn point(&self, scheme: &Scheme, total: u64) -> Result<AttrPoint, NotationError> {
        let config = scheme.at(total);
        let resolved = config.resolve(total)?;
        let mut p = AttrPoint {
            total: resolved.total,
            read_requests: self.read_requests,
            write_requests: self.write_requests,
            ..AttrPoint::default()
        };
        for (key, &(_, blocks, block)) in streams(&config).iter().zip(&resolved.subcaches) {
            let Some(s) = self.streams.get(key) else {
                continue;
            };
            p.read_misses += s.read_misses(blocks);
            p.write_expulsions += s.write_expulsions(blocks);
            let missed = s.block_misses(blocks);
            p.origin_read_blocks += missed;
            p.origin_read_bytes += missed * block;
            p.origin_write_bytes += s.write_expulsions(blocks) * block;
        }
        Ok(p)
    }
}

/// One stream's pass: the requests it takes, split into its blocks.
fn analyse(requests: &[FileRequest], key: StreamKey) -> StackAnalysis {
    let mut s = StackAnalysis::default();
    for r in requests {
        if key.mask & bit(r.kind, r.file_size >= key.cutoff) == 0 {
            continue;
        }
        let (offset, len) = r.range();
        let (first, end) = (
            offset / key.block,
            offset.saturating_add(len - 1) / key.block + 1,
        );
        // The same keys as the attribute cache's, and the same requests
        // skipped (those whose ids do not fit a key).
        if block_key(0, r.file, end - 1).is_none() {
            continue;
        }
        let write = r.access == Access::Write;
        if !write {
            s.begin_read();
        }
        for key in (first..end).filter_map(|index| block_key(0, r.file, index)) {
            s.reference(key, write);
        }
        if !write {
            s.end_read();
        }
    }
    s.finish();
    s
}
