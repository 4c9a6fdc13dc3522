//! The node's counters: one set feeds `coopcache status`, `/v1/status`
//! and Prometheus `/metrics`.

use coopcache_core::coop::Level;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// The level label of `coopcache_reads_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LevelLabel {
    /// local, manager, peer or origin.
    pub level: &'static str,
}

/// The peer label of `coopcache_protocol_violations_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PeerLabel {
    /// The peer's name (its certificate's).
    pub peer: String,
}

/// The labels of `coopcache_gateway_closed_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClosedLabel {
    /// `http` (the gateway) or `s3` (the S3 endpoint).
    pub endpoint: &'static str,
    /// Why: `refused` (at the cap, every slot busy: 503), `evicted` (a
    /// silent connection gave its slot to a newcomer), `idle` (no byte
    /// either way for the idle timeout), `slow` (a client under the rate
    /// floor).
    pub reason: &'static str,
}

/// Connections an endpoint closed on its own, one counter per reason
/// (looked up once per endpoint, so counting costs no lock or hash).
#[derive(Clone, Debug, Default)]
pub struct ClosedCounters {
    /// Answered 503 at the cap.
    pub refused: Counter,
    /// Closed for a newcomer, having sent no request.
    pub evicted: Counter,
    /// Closed after the idle timeout.
    pub idle: Counter,
    /// Cut under the rate floor.
    pub slow: Counter,
}

/// The name of a level in metrics and status.
pub fn level_name(level: Level) -> &'static str {
    match level {
        Level::Local => "local",
        Level::ManagerMemory => "manager",
        Level::RemoteNode => "peer",
        Level::Origin => "origin",
        Level::LocalDisk => "disk",
    }
}

/// Every counter of a node.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Block reads completed, by the level that served them.
    pub reads: Family<LevelLabel, Counter>,
    /// The counters of `reads`, looked up once (a read is counted on the
    /// hot path, without the family's lock and hash).
    reads_by_level: std::sync::OnceLock<[Counter; Level::ALL.len()]>,
    /// Block reads that failed (origin error).
    pub read_errors: Counter,
    /// Connections the gateway and the S3 endpoint closed on their own,
    /// by endpoint and reason (see [`Metrics::closed_counters`]).
    pub gateway_closed: Family<ClosedLabel, Counter>,
    /// Block reads sent to the origin.
    pub origin_reads: Counter,
    /// Requests to the origin that carried them (a run of consecutive
    /// blocks goes in one).
    pub origin_requests: Counter,
    /// Bytes read from the origin.
    pub origin_bytes: Counter,
    /// Questions to the origin for a file's version.
    pub origin_stats: Counter,
    /// Names, attributes and listings asked of the origin (a mount's
    /// lookups, `getattr`s and directory reads).
    pub origin_metadata: Counter,
    /// Changes asked of the origin: drafts begun, directories and links
    /// created, removals, renames, modes and times.
    pub origin_changes: Counter,
    /// Requests that carried a file's bytes into the origin.
    pub origin_writes: Counter,
    /// The bytes they carried.
    pub origin_written_bytes: Counter,
    /// Drafts made the file at a close (C2Cfs's write-through).
    pub origin_commits: Counter,
    /// Files a warm-up read whole (`coopcache warm`).
    pub warmed_files: Counter,
    /// The bytes warm-ups read.
    pub warmed_bytes: Counter,
    /// Files this node's warm-ups had their managers read.
    pub warm_placed: Counter,
    /// Files this node asked a manager to warm and then read itself (the
    /// manager was busy, gone, or could not read it).
    pub warm_fell_back: Counter,
    /// Files this node read for its peers' warm-ups.
    pub warm_served: Counter,
    /// `exclusive` mode: opens this node's manager slice answered from its
    /// commit table, with no origin round trip.
    pub manager_opens: Counter,
    /// `exclusive` mode: directory listings this node's manager slice
    /// answered from its table, with no origin listing.
    pub manager_listings: Counter,
    /// `exclusive` mode: opens whose first block this node's manager slice
    /// served with its answer.
    pub first_served: Counter,
    /// `exclusive` mode: commits of this node no manager recorded (every
    /// member was told to forget the file instead, or it timed out).
    pub unrecorded_commits: Counter,
    /// Locks of this node's processes a file's new manager would not give
    /// back (another node took the range while views differed).
    pub locks_lost: Counter,
    /// Blocks from peers whose hash did not match the manager's record.
    pub integrity_failures: Counter,
    /// Messages refused because their sender's role does not allow them,
    /// by sender.
    pub protocol_violations: Family<PeerLabel, Counter>,
    /// Reads that waited on a peer past the timeout and went to the origin.
    pub timeouts: Counter,
    /// Malformed frames, refused handshakes, broken connections.
    pub peer_errors: Counter,
    /// Messages dropped because a peer's queue was full or it was down.
    pub dropped_messages: Counter,
    /// Forwarded singlets not sent because their peer's link was busy
    /// (`crate::link::BEST_EFFORT_QUEUED`): dropped, as N-Chance drops a
    /// singlet no peer has room for.
    pub forwards_shed: Counter,
    /// SWIM updates a peer sent about other members, dropped unapplied: a
    /// member speaks for itself only (`coopcache_core::members::swim::screen`).
    pub gossip_screened: Counter,
    /// Discovery datagrams ignored: malformed, or from another cluster.
    pub discovery_ignored: Counter,
    /// Bytes of cached block data.
    pub cached_bytes: Gauge,
    /// Bytes of pinned block data (`coopcache pin`), outside `cached_bytes`.
    pub pinned_bytes: Gauge,
    /// Blocks on the disk tier (`--disk`).
    pub disk_blocks: Gauge,
    /// Blocks written to the disk tier.
    pub disk_writes: Counter,
    /// Disk tier slots that failed a read (unreadable, rotten, too slow):
    /// each read the origin.
    pub disk_failures: Counter,
    /// Writes to the disk tier that failed (full, failing).
    pub disk_write_failures: Counter,
    /// Writes to the disk tier skipped: more writes were on their way to
    /// it than its bound.
    pub disk_writes_skipped: Counter,
    /// Times the disk tier was given up (it failed every call in a row).
    pub disk_given_up: Counter,
    /// Times a given-up disk tier was opened again and used.
    pub disk_reopened: Counter,
    /// Blocks this node's disk served to peers' reads.
    pub disk_served: Counter,
    /// Reads this node, as a block's manager, forwarded to a member's disk.
    pub disk_forwards: Counter,
    /// The memory budget.
    pub budget_bytes: Gauge,
    /// Live members, this node included.
    pub members: Gauge,
    /// Bytes of live heap allocations, as the allocator counts them. Set
    /// by the binary, which knows its allocator (0 if it does not say):
    /// beside resident memory it tells memory in use from memory the
    /// allocator keeps.
    pub heap_allocated_bytes: Gauge,
}

impl Metrics {
    fn level_counters(&self) -> &[Counter; Level::ALL.len()] {
        self.reads_by_level.get_or_init(|| {
            Level::ALL.map(|l| {
                let label = LevelLabel {
                    level: level_name(l),
                };
                self.reads.get_or_create(&label).clone()
            })
        })
    }

    /// Counts a read served by `level`.
    pub fn read(&self, level: Level) {
        self.level_counters()[level.index()].inc();
    }

    /// Counts `n` protocol violations by the peer named `peer`.
    pub fn violation(&self, peer: &str, n: u64) {
        self.protocol_violations
            .get_or_create(&PeerLabel {
                peer: peer.to_string(),
            })
            .inc_by(n);
    }

    /// The counters of connections `endpoint` closes on its own.
    pub fn closed_counters(&self, endpoint: &'static str) -> ClosedCounters {
        let get = |reason| {
            self.gateway_closed
                .get_or_create(&ClosedLabel { endpoint, reason })
                .clone()
        };
        ClosedCounters {
            refused: get("refused"),
            evicted: get("evicted"),
            idle: get("idle"),
            slow: get("slow"),
        }
    }

    /// Reads served by `level` so far.
    pub fn reads_at(&self, level: Level) -> u64 {
        self.level_counters()[level.index()].get()
    }

    /// The Prometheus text exposition of every counter.
    pub fn encode(&self) -> String {
        let mut r = Registry::with_prefix("coopcache");
        r.register("reads", "Block reads by serving level", self.reads.clone());
        r.register(
            "protocol_violations",
            "Peer messages refused because the sender's role does not allow them",
            self.protocol_violations.clone(),
        );
        r.register(
            "gateway_closed",
            "Connections the gateway or S3 endpoint closed on its own: refused at the cap (503), evicted for a newcomer, idle, or slow (under the rate floor)",
            self.gateway_closed.clone(),
        );
        let counters: [(&str, &str, &Counter); 35] = [
            (
                "warmed_files",
                "Files warm-ups read whole (coopcache warm)",
                &self.warmed_files,
            ),
            ("warmed_bytes", "Bytes warm-ups read", &self.warmed_bytes),
            (
                "warm_placed",
                "Files this node's warm-ups had their managers read",
                &self.warm_placed,
            ),
            (
                "warm_fell_back",
                "Files asked of a manager to warm and read here after all (busy, gone, or not read there)",
                &self.warm_fell_back,
            ),
            (
                "warm_served",
                "Files this node read for its peers' warm-ups",
                &self.warm_served,
            ),
            ("read_errors", "Block reads that failed", &self.read_errors),
            (
                "origin_reads",
                "Reads sent to the origin",
                &self.origin_reads,
            ),
            (
                "origin_requests",
                "Requests to the origin (a run of consecutive blocks goes in one)",
                &self.origin_requests,
            ),
            (
                "origin_bytes",
                "Bytes read from the origin",
                &self.origin_bytes,
            ),
            (
                "origin_stats",
                "Questions to the origin for a file's version",
                &self.origin_stats,
            ),
            (
                "origin_metadata_requests",
                "Names, attributes and listings asked of the origin (mount lookups, getattrs, readdirs)",
                &self.origin_metadata,
            ),
            (
                "origin_changes",
                "Changes asked of the origin (drafts begun, creates, removals, renames, modes, times)",
                &self.origin_changes,
            ),
            (
                "origin_writes",
                "Requests that carried a file's bytes into the origin",
                &self.origin_writes,
            ),
            (
                "origin_written_bytes",
                "Bytes written into the origin",
                &self.origin_written_bytes,
            ),
            (
                "origin_commits",
                "Drafts made the file at a close (write-through)",
                &self.origin_commits,
            ),
            (
                "manager_opens",
                "Opens a manager answered from its commit table (exclusive mode)",
                &self.manager_opens,
            ),
            (
                "manager_listings",
                "Directory listings a manager answered from its table (exclusive mode)",
                &self.manager_listings,
            ),
            (
                "first_blocks_served",
                "Opens whose first block a manager served with its answer (exclusive mode)",
                &self.first_served,
            ),
            (
                "unrecorded_commits",
                "Commits no manager recorded (exclusive mode)",
                &self.unrecorded_commits,
            ),
            (
                "locks_lost",
                "Locks a file's new manager would not give back",
                &self.locks_lost,
            ),
            (
                "integrity_failures",
                "Peer blocks whose hash did not match",
                &self.integrity_failures,
            ),
            (
                "disk_writes",
                "Blocks written to the disk tier",
                &self.disk_writes,
            ),
            (
                "disk_failures",
                "Disk tier slots that failed a read (unreadable, rotten, too slow)",
                &self.disk_failures,
            ),
            (
                "disk_write_failures",
                "Writes to the disk tier that failed (a full or failing disk)",
                &self.disk_write_failures,
            ),
            (
                "disk_writes_skipped",
                "Writes to the disk tier skipped: the disk was behind by its bound",
                &self.disk_writes_skipped,
            ),
            (
                "disk_given_up",
                "Times the disk tier was given up: it failed every call in a row",
                &self.disk_given_up,
            ),
            (
                "disk_reopened",
                "Times a given-up disk tier was opened again and used",
                &self.disk_reopened,
            ),
            (
                "disk_served",
                "Blocks this node's disk served to peers' reads",
                &self.disk_served,
            ),
            (
                "disk_forwards",
                "Reads this node, as a block's manager, forwarded to a member's disk",
                &self.disk_forwards,
            ),
            (
                "timeouts",
                "Reads that timed out waiting on a peer",
                &self.timeouts,
            ),
            (
                "peer_errors",
                "Bad frames, refused handshakes and broken peer connections",
                &self.peer_errors,
            ),
            (
                "dropped_messages",
                "Messages dropped on a full queue or a down peer",
                &self.dropped_messages,
            ),
            (
                "forwards_shed",
                "Forwarded singlets not sent because their peer's link was busy",
                &self.forwards_shed,
            ),
            (
                "gossip_screened",
                "SWIM updates about third members dropped unapplied",
                &self.gossip_screened,
            ),
            (
                "discovery_ignored",
                "Discovery datagrams ignored: malformed or another cluster's",
                &self.discovery_ignored,
            ),
        ];
        for (name, help, c) in counters {
            r.register(name, help, c.clone());
        }
        r.register(
            "cached_bytes",
            "Bytes of cached blocks",
            self.cached_bytes.clone(),
        );
        r.register(
            "pinned_bytes",
            "Bytes of pinned blocks (coopcache pin), outside cached_bytes",
            self.pinned_bytes.clone(),
        );
        r.register(
            "disk_blocks",
            "Blocks on the disk tier",
            self.disk_blocks.clone(),
        );
        r.register("budget_bytes", "Memory budget", self.budget_bytes.clone());
        r.register("members", "Live members", self.members.clone());
        r.register(
            "heap_allocated_bytes",
            "Bytes of live heap allocations (0 if the allocator does not report them)",
            self.heap_allocated_bytes.clone(),
        );
        let rss = Gauge::<i64>::default();
        rss.set(resident_bytes().unwrap_or(0));
        r.register(
            "process_resident_memory_bytes",
            "Resident memory of this process (VmRSS)",
            rss,
        );
        let mut s = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut s, &r);
        s
    }
}

/// This process's resident memory (`VmRSS`), from `/proc/self/statm` (its
/// second field, in pages); `None` where there is no such file.
fn resident_bytes() -> Option<i64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: i64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * rustix::param::page_size() as i64)
}
