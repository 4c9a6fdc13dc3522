//! The memory budget: how many blocks a node may cache so that its data,
//! its metadata and its bounded in-flight buffers stay within `--memory`.

use coopcache_core::coop::PARKED_SHARE;

/// Bytes set aside from the budget for everything but the cache: the sum
/// of the bounded pools below and [`RUNTIME_BYTES`]. Resident memory adds
/// to the budget only what no budget can hold: the binary's code (about
/// 12-14 MiB of file-backed pages) and the allocator's slack (freed pages
/// it has not yet returned, within 100 ms). At 24 MiB, before the
/// connections were counted, the pools alone (28 MiB) did not fit in it,
/// and a cluster of 64 MiB nodes under bursts of 2,000 connections peaked
/// at 89-91 MiB resident with 70 MiB of live heap (`coopcache bench rss
/// --nodes 3`, docs/benchmarks.md).
pub const RESERVE: u64 =
    RUNTIME_BYTES + STREAM_BYTES + PEER_OUT_BYTES + PEER_IN_BYTES + GATEWAY_BYTES + LISTING_BYTES;

/// Bytes of directory listings a manager keeps in `exclusive` mode
/// (`coopcache_core::c2cfs::listings`), each counted as the larger of its
/// size in memory and on the wire: about 20,000 entries of files with
/// their versions. A listing dropped from it costs its next lister one
/// origin listing.
pub const LISTING_BYTES: u64 = 2 << 20;

/// Bytes of blocks on their way to the disk tier at once (`--disk`): a
/// block memory has dropped meanwhile is held by its write alone. A write
/// beyond is skipped (the block simply is not on disk), so a disk slower
/// than the reads that fill it cannot grow the node past its budget.
/// Counted in the budget of a node with a disk tier only.
pub const DISK_WRITE_BYTES: u64 = 4 << 20;

/// The runtime's own heap: tokio's tasks and queues, TLS sessions, the
/// directory and hash records of the files this node manages, the C2Cfs
/// commit table ([`COMMIT_FILES`]), metrics (an idle node holds about
/// 1.3 MiB of live heap); and the contents kept for opens' first blocks
/// that come before their reads
/// ([`MAX_STASHED_BYTES`](coopcache_core::protocol::MAX_STASHED_BYTES),
/// 1 MiB).
pub const RUNTIME_BYTES: u64 = (4 << 20) + coopcache_core::protocol::MAX_STASHED_BYTES as u64;

/// Files in a manager's C2Cfs commit table (`exclusive` mode): each entry
/// (a version string of tens of bytes, `Tcommit`, valid copies, its LRU
/// place) takes about 200 bytes, so the table stays under 1 MiB, within
/// [`RUNTIME_BYTES`]; the opener's side keeps as many `Tlocal` hints
/// (about 50 bytes each). A file dropped from it costs its next open one
/// origin stat.
pub const COMMIT_FILES: usize = 4096;

/// Heap a gateway connection holds outside the cache: hyper's 8 KiB read
/// and 8 KiB write buffers and its task.
pub const CONNECTION_BYTES: u64 = 16 << 10;

/// Bytes of the gateway's connections at its default cap
/// (`gateway::MAX_CONNECTIONS` of [`CONNECTION_BYTES`]).
pub const GATEWAY_BYTES: u64 = 8 << 20;

/// Bytes of blocks that streams (gateway responses, library reads) may
/// hold at once beyond the cache, out of [`RESERVE`]: a block a stream
/// fetched stays resident until its reader takes it, and may meanwhile
/// leave the cache. Without this bound, 2,000 gateway clients reading
/// 1 MiB files ahead held 300 MiB on a 64 MiB node (`coopcache bench
/// rss`).
pub const STREAM_BYTES: u64 = 8 << 20;

/// Bytes of block data queued on links to peers, all links together: a
/// `Data`, `Recirculate` or `Place` that would pass it is dropped and
/// counted, as when a link's queue is full, and the protocol recovers by
/// timeout. Most queued blocks share their bytes with the sender's cache;
/// this bounds the ones evicted while they wait, and the link's write
/// batch, which copies them; without it, 256 frames per link could hold
/// 16 MiB of evicted blocks per peer.
pub const PEER_OUT_BYTES: u64 = 8 << 20;

/// Bytes of frames received from peers and not yet handled by the
/// protocol, all links together. A link that would pass it stops reading
/// until the protocol catches up, and TCP pushes back on the sender:
/// nothing is dropped. Without it the event queue (1,024 events) could
/// hold 64 MiB of blocks.
pub const PEER_IN_BYTES: u64 = 4 << 20;

/// Metadata per cached block beyond its bytes: the policy's entry, the
/// store's map entry and buffer header, and its share of directory and
/// hash records at its manager (measured about 200 B; rounded up). A
/// block a private peer parks here is 40 bytes larger than its plaintext
/// (nonce and tag), still within it.
pub const PER_BLOCK_OVERHEAD: u64 = 256;

/// A private node's hash table per cached block: the notes of the blocks
/// it parks on peers (id at the host, digest, a unified block's key and
/// its host), up to [`PARKED_SHARE`] times its memory, each at its worst
/// case with the map's and the order queue's slack
/// ([`NOTE_BYTES`](coopcache_core::protocol::NOTE_BYTES)).
pub const PRIVATE_PER_BLOCK: u64 = (PARKED_SHARE * coopcache_core::protocol::NOTE_BYTES) as u64;

/// A private node's tables of reads of parked blocks in flight, full
/// ([`MAX_READS`](coopcache_core::protocol::MAX_READS) of
/// [`RECLAIM_BYTES`](coopcache_core::protocol::RECLAIM_BYTES)): counted
/// besides [`RESERVE`] on a private node only.
pub const PRIVATE_READS_BYTES: u64 =
    (coopcache_core::protocol::MAX_READS * coopcache_core::protocol::RECLAIM_BYTES) as u64;

/// Notes of parked blocks a private node caching `capacity` blocks keeps.
pub fn parked_notes(capacity: usize) -> usize {
    capacity.saturating_mul(PARKED_SHARE)
}

/// A node's memory budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Total bytes the node may use.
    pub total: u64,
    /// Block size in bytes.
    pub block_size: u32,
    /// The origin is private: the hash table of parked blocks counts too
    /// ([`PRIVATE_PER_BLOCK`]).
    pub private: bool,
}

/// A budget too small for even one block next to the reserve.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "memory budget of {total} bytes is too small: at least {min} bytes are needed (a reserve for the runtime and in-flight buffers, plus room for 16 blocks of {block_size} bytes)"
)]
pub struct BudgetError {
    /// The budget asked for.
    pub total: u64,
    /// The smallest that works.
    pub min: u64,
    /// The block size.
    pub block_size: u32,
}

impl Budget {
    /// Bytes set aside for everything but the cache: [`RESERVE`], and on
    /// a private node [`PRIVATE_READS_BYTES`].
    pub fn reserve(&self) -> u64 {
        match self.private {
            true => RESERVE + PRIVATE_READS_BYTES,
            false => RESERVE,
        }
    }

    /// Bytes each cached block counts for: its own, its metadata's and,
    /// on a private node, its share of the hash table.
    pub fn per_block(&self) -> u64 {
        let private = if self.private { PRIVATE_PER_BLOCK } else { 0 };
        u64::from(self.block_size) + PER_BLOCK_OVERHEAD + private
    }

    /// The smallest budget of `block_size` blocks (private if `private`)
    /// that caches `blocks` blocks.
    pub fn holding(blocks: u64, block_size: u32, private: bool) -> Budget {
        let mut b = Budget {
            total: 0,
            block_size,
            private,
        };
        b.total = b.reserve() + blocks * b.per_block();
        b
    }

    /// Blocks the node may cache.
    pub fn blocks(&self) -> Result<usize, BudgetError> {
        let (reserve, per_block) = (self.reserve(), self.per_block());
        let min = reserve + 16 * per_block;
        if self.total < min {
            return Err(BudgetError {
                total: self.total,
                min,
                block_size: self.block_size,
            });
        }
        Ok(((self.total - reserve) / per_block) as usize)
    }
}

/// Parses a size like `2GiB`, `512MiB`, `64KiB`, `1G`, `100M` or `4096`
/// (plain bytes).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => {
            return Err(format!(
                "size `{s}`: unknown unit `{unit}` (expected B, KiB, MiB, GiB or TiB)"
            ));
        }
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("size `{s}`: expected a number with an optional unit, like 2GiB"))?;
    if !n.is_finite() || n < 0.0 {
        return Err(format!("size `{s}`: expected a non-negative number"));
    }
    Ok((n * mult as f64) as u64)
}

/// What this machine can give a node: its physical memory, or its
/// cgroup's memory limit where that is lower, and where the figure came
/// from; `None` where neither can be read (not Linux). A budget above it
/// is a promise the kernel cannot keep: the node would be killed, or
/// swap, long before its cache filled.
pub fn machine_memory() -> Option<(u64, String)> {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| meminfo_total(&m))
        .map(|b| (b, "physical memory (/proc/meminfo)".to_string()));
    let limit = cgroup_limit();
    match (total, limit) {
        (Some(t), Some(l)) if l.0 < t.0 => Some(l),
        (Some(t), _) => Some(t),
        (None, l) => l,
    }
}

/// `MemTotal` of /proc/meminfo, in bytes.
fn meminfo_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// This process's cgroup memory limit (v2 `memory.max`, v1
/// `memory.limit_in_bytes`), if it has one.
fn cgroup_limit() -> Option<(u64, String)> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let file = match controllers {
            "" => format!("/sys/fs/cgroup{path}/memory.max"),
            c if c.split(',').any(|c| c == "memory") => {
                format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes")
            }
            _ => continue,
        };
        if let Some(limit) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| cgroup_value(&t))
        {
            return Some((limit, format!("the cgroup's limit ({file})")));
        }
    }
    None
}

/// A cgroup limit file's value: `max` (or v1's huge number) is no limit.
fn cgroup_value(text: &str) -> Option<u64> {
    let v: u64 = text.trim().parse().ok()?;
    (v < 1 << 60).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("64 KiB"), Ok(64 << 10));
        assert_eq!(parse_size("1.5M"), Ok(3 << 19));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(
            parse_size("2 parsecs")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_size("GiB").is_err());
    }

    #[test]
    fn blocks_leave_the_reserve_free() {
        let b = Budget {
            total: 2 << 30,
            block_size: 65536,
            private: false,
        };
        let n = b.blocks().unwrap() as u64;
        assert!(n * (65536 + PER_BLOCK_OVERHEAD) + RESERVE <= 2 << 30);
        assert!((n + 1) * (65536 + PER_BLOCK_OVERHEAD) + RESERVE > 2 << 30);
        let tiny = Budget {
            total: 1 << 20,
            block_size: 65536,
            private: false,
        };
        let private = Budget { private: true, ..b };
        let p = private.blocks().unwrap() as u64;
        assert!(p < n, "the private hash table takes room");
        let reserve = RESERVE + PRIVATE_READS_BYTES;
        assert!(p * (65536 + PER_BLOCK_OVERHEAD + PRIVATE_PER_BLOCK) + reserve <= 2 << 30);
        for (blocks, private) in [(16, false), (16, true), (1000, true)] {
            let least = Budget::holding(blocks, 65536, private);
            assert_eq!(least.blocks(), Ok(blocks as usize));
            let less = Budget {
                total: least.total - 1,
                ..least
            };
            assert!(less.blocks().map_or(true, |n| n < blocks as usize));
        }
        assert!(tiny.blocks().unwrap_err().to_string().contains("too small"));
    }

    #[test]
    fn the_machine_limit_reads_meminfo_and_cgroup_files() {
        assert_eq!(
            meminfo_total("MemTotal:       24575412 kB\nMemFree: 1 kB\n"),
            Some(24_575_412 * 1024)
        );
        assert_eq!(meminfo_total("MemFree: 1 kB\n"), None);
        assert_eq!(cgroup_value("max\n"), None);
        assert_eq!(cgroup_value("9223372036854771712\n"), None);
        assert_eq!(cgroup_value("1073741824\n"), Some(1 << 30));
        // This machine has some memory, and says where the figure is from.
        if cfg!(target_os = "linux") {
            let (bytes, from) = machine_memory().expect("Linux has /proc/meminfo");
            assert!(bytes > 64 << 20 && !from.is_empty());
        }
    }
}
