//! `coopcache bench NAME`: live benchmarks on a loopback cluster, each the
//! experiment of one of the papers or a comparison users would make, run
//! side by side with its baseline in one process so that the machine's
//! drift cancels out.
//!
//! Every benchmark takes `--json`, has small defaults that finish in a
//! minute or two on a 2-core machine and flags to scale up to the paper's
//! sizes, writes a PNG plot, checks every byte read against the origin, and
//! keeps its files in a temporary directory removed at the end (also on
//! Ctrl-C). The slow origin is `Origin::with_delay`: a sleep before every
//! origin request, never in the cache.

pub mod loopback;

mod algorithms;
mod algorithms_report;
mod baseline;
mod ceiling;
mod classes;
mod classes_report;
mod common;
mod disk;
mod disk_probes;
mod disk_replay;
mod disk_report;
mod latency;
mod latency_report;
mod measure;
mod mount;
mod mount_dataset;
mod mount_files;
mod mount_files_tree;
mod mount_opens;
mod netcache;
mod replay;
mod replay_speed;
mod rss;
mod s3;
mod s3_servers;
mod scale;
mod scale_procs;
mod scale_report;
mod staggered;
mod stream;
mod switch;
mod zipf_web;

use clap::Subcommand;

/// The benchmarks.
#[derive(Subcommand)]
pub enum BenchCmd {
    /// Netcache's experiment: one busy node reads random 1 KiB ranges of a
    /// file larger than its memory, with 0 to 6 idle peers, against the
    /// same node without cooperation.
    Netcache(netcache::NetcacheArgs),
    /// The S3 endpoint for a training cluster: boto3 readers read a
    /// dataset in MinIO for several epochs through coopcache's S3
    /// endpoints, directly, and from one MinIO per node holding a full
    /// copy, side by side; then GETs/s of small cached objects at many
    /// clients.
    S3(Box<s3::S3BenchArgs>),
    /// Netcache's busy/idle switch: an idle host full of a busy node's
    /// parked blocks starts its own workload and gets its memory back;
    /// its foreign and own bytes over time, plotted.
    Switch(switch::SwitchArgs),
    /// C2Cfs's synthetic read: nodes read the same file one after another;
    /// origin bytes per reader, and one node's overhead against reading
    /// the origin directly.
    Staggered(staggered::StaggeredArgs),
    /// C2Cfs's Filebench web-server run: nodes in turn read Zipf-popular
    /// whole files; origin bytes per node against the first.
    ZipfWeb(zipf_web::ZipfWebArgs),
    /// Remote-memory hits for 8 KiB blocks between two nodes, next to the
    /// loopback TCP ceiling and memcached and Redis on the same machine.
    Latency(Box<latency::LatencyArgs>),
    /// A multi-client workload replayed through a live loopback cluster
    /// for each algorithm, next to the simulator's prediction.
    Algorithms(Box<algorithms::AlgorithmsArgs>),
    /// The request-distribution paper's size-class policies against plain
    /// N-Chance: a WebStone-like web workload read through each node's
    /// gateway under each policy, next to the simulator's prediction.
    Classes(Box<classes::ClassesArgs>),
    /// One node reads a large file held in a peer's memory, through the
    /// library and the HTTP gateway, next to one TCP stream.
    Stream(stream::StreamArgs),
    /// Resident memory of a real `coopcache node` against its --memory
    /// budget: readers over a working set larger than the budget, a burst
    /// of connections, then rest; sampled from /proc and plotted.
    Rss(rss::RssArgs),
    /// C2Cfs's experiments through real FUSE mounts, one per node: a file
    /// read in turn, a file written then read, and read throughput from a
    /// peer's memory beside the local page cache; and (`--phases
    /// dataset`) training epochs over a MinIO bucket through coopcache,
    /// rclone and s3fs.
    Mount(mount::MountBenchArgs),
    /// The simulator's request loop (LRU) on a real trace against a plain
    /// reference LRU over the same requests: the ratio moves with
    /// coopcache's code, not with the machine.
    ReplaySpeed(replay_speed::ReplaySpeedArgs),
    /// A node's disk tier: random reads over a working set 4x the
    /// cluster's memory with and without it (and the simulator's
    /// prediction), a restart, a disk hit against a peer's memory hit, and
    /// what the disk index costs per block.
    Disk(Box<disk::DiskArgs>),
    /// Issue 44's scale: clusters of 16 to 100 real node processes on
    /// loopback addresses; per node, resident memory, sockets, idle CPU
    /// and link traffic, the time until every node sees every member, and
    /// a read's latency and link traffic as N grows.
    Scale(Box<scale::ScaleArgs>),
}

/// Runs one benchmark.
pub fn run(cmd: BenchCmd) -> anyhow::Result<()> {
    match cmd {
        BenchCmd::Netcache(args) => netcache::run(args),
        BenchCmd::S3(args) => s3::run(*args),
        BenchCmd::Switch(args) => switch::run(args),
        BenchCmd::Staggered(args) => staggered::run(args),
        BenchCmd::ZipfWeb(args) => zipf_web::run(args),
        BenchCmd::Latency(args) => latency::run(*args),
        BenchCmd::Algorithms(args) => algorithms::run(*args),
        BenchCmd::Classes(args) => classes::run(*args),
        BenchCmd::Stream(args) => stream::run(args),
        BenchCmd::Rss(args) => rss::run(args),
        BenchCmd::Mount(args) => mount::run(args),
        BenchCmd::ReplaySpeed(args) => replay_speed::run(args),
        BenchCmd::Disk(args) => disk::run(*args),
        BenchCmd::Scale(args) => scale::run(*args),
    }
}

/// Gives the benchmarks the binary's count of live heap bytes (its
/// allocator's, which a library cannot replace): `bench disk` measures
/// the disk index with it. Without it, resident memory alone.
pub fn set_heap_meter(meter: fn() -> Option<u64>) {
    let _ = disk_probes::HEAP_METER.set(meter);
}
