//! coopcache's disk store against foyer's block engine, on one workload
//! (issue 43, item 3): write amplification, read latency, memory per
//! block, recovery. docs/benchmarks.md ("The disk store against foyer")
//! has the command and the figures; ARCHITECTURE.md the conclusion.
//!
//! Not a member of the workspace, so that CI never builds foyer:
//! `cargo run --release --manifest-path bench/foyer-compare/Cargo.toml -- --help`.

mod coop;
mod foyer_side;
mod measure;

use anyhow::{Context, Result, bail};
use rand::{RngCore, SeedableRng, rngs::StdRng};
use std::path::PathBuf;
use std::time::Duration;

/// Counts the heap, for the memory per block.
#[global_allocator]
static ALLOC: measure::Counting = measure::Counting;

const HELP: &str = "\
foyer-compare: coopcache's disk store (DiskStore + the core's DiskTier) against foyer's block engine

Writes --write bytes of distinct random blocks into a device of --device bytes
(so both evict), then times --reads random reads of blocks a store of that size
holds, page cache warm, dropped (root only), and with --threads readers.
Then drops each engine and opens it again.

  --device SIZE    the store's size                 [1GiB]
  --block SIZE     one block                        [64KiB]
  --write SIZE     payload written                  [2GiB]
  --reads N        reads timed per pass             [5000]
  --threads N      readers in the concurrent pass   [4]
  --runs N         runs (the table is their median) [3]
  --region SIZE    foyer's block (region) size      [16MiB]
  --buffered       foyer without direct I/O
  --sync-every SIZE  coopcache: fdatasync after this much written,
                   0 for once at the end (the store never syncs) [64MiB]
  --dir PATH       where the stores go (emptied)    [/var/tmp/foyer-compare]
Sizes: bytes, or with KiB, MiB, GiB.";

/// The workload both engines get.
pub struct Workload {
    /// Bytes in a block.
    pub block: usize,
    /// Bytes the store may take.
    pub device: u64,
    /// Payload bytes written.
    pub written: u64,
    /// Reads per pass.
    pub reads: usize,
    /// Readers in the concurrent pass.
    pub threads: usize,
    /// foyer's region ("block") size: its unit of eviction.
    pub region: usize,
    /// foyer with O_DIRECT.
    pub direct: bool,
    /// coopcache's store: bytes written between two syncs by the bench
    /// (0: one at the end).
    pub sync_every: u64,
}

impl Workload {
    /// Blocks written, keys `0..blocks()`.
    pub fn blocks(&self) -> u64 {
        self.written / self.block as u64
    }

    /// Block `k`'s content: random (incompressible), the same for both
    /// engines.
    pub fn data(&self, k: u64) -> Vec<u8> {
        let mut data = vec![0; self.block];
        StdRng::seed_from_u64(k).fill_bytes(&mut data);
        data
    }
}

/// One pass of timed reads.
#[derive(Clone, Debug)]
pub struct Reads {
    median_us: f64,
    p99_us: f64,
    hit_ratio: f64,
    /// Payload read per second of the pass's wall time (concurrent pass).
    mib_per_s: f64,
}

impl Reads {
    /// The pass's figures from each read's latency and the hits.
    pub fn new(
        mut latencies: Vec<Duration>,
        hits: usize,
        block: usize,
        wall: Option<Duration>,
    ) -> Self {
        let reads = latencies.len();
        let mib_per_s = match wall {
            Some(wall) => (hits * block) as f64 / 1048576.0 / wall.as_secs_f64(),
            None => f64::NAN,
        };
        Reads {
            median_us: measure::quantile_us(&mut latencies, 0.5),
            p99_us: measure::quantile_us(&mut latencies, 0.99),
            hit_ratio: hits as f64 / reads.max(1) as f64,
            mib_per_s,
        }
    }
}

/// One engine's figures in one run.
#[derive(Clone, Debug)]
pub struct Side {
    /// Time in the engine's write calls (and the final flush or fsync).
    pub write_secs: f64,
    /// `/proc/self/io` write_bytes over the write phase.
    pub device_write_bytes: u64,
    /// `/proc/self/io` wchar over the write phase.
    pub write_call_bytes: u64,
    /// The store's files' allocated size after it.
    pub allocated_bytes: u64,
    /// Blocks the engine holds after writing.
    pub present: u64,
    /// Heap growth from an empty engine to the end of writing, per block
    /// held.
    pub heap_per_block: f64,
    /// foyer: heap growth per block added while it fills (its index).
    pub heap_slope: Option<f64>,
    pub warm: Reads,
    /// `None` if the page cache could not be dropped (not root).
    pub cold: Option<Reads>,
    pub concurrent: Option<Reads>,
    /// Blocks back after the engine was dropped and opened again.
    pub recovered: u64,
    pub recover_secs: f64,
    /// The sample read again after recovery (page cache cold).
    pub after_recovery: Reads,
}

fn parse_size(s: &str) -> Result<u64> {
    let units = [
        ("KiB", 1 << 10),
        ("MiB", 1 << 20),
        ("GiB", 1 << 30),
        ("", 1),
    ];
    for (suffix, mult) in units {
        if let Some(n) = s.strip_suffix(suffix) {
            return Ok(n.trim().parse::<u64>().context(s.to_owned())? * mult);
        }
    }
    unreachable!("the empty suffix matches")
}

fn main() -> Result<()> {
    let mut w = Workload {
        block: 64 << 10,
        device: 1 << 30,
        written: 2 << 30,
        reads: 5000,
        threads: 4,
        region: 16 << 20,
        direct: true,
        sync_every: 64 << 20,
    };
    let (mut runs, mut root) = (3, PathBuf::from("/var/tmp/foyer-compare"));
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--device" => w.device = parse_size(&value()?)?,
            "--block" => w.block = parse_size(&value()?)? as usize,
            "--write" => w.written = parse_size(&value()?)?,
            "--reads" => w.reads = value()?.parse()?,
            "--threads" => w.threads = value()?.parse()?,
            "--runs" => runs = value()?.parse()?,
            "--region" => w.region = parse_size(&value()?)? as usize,
            "--dir" => root = value()?.into(),
            "--buffered" => w.direct = false,
            "--sync-every" => w.sync_every = parse_size(&value()?)?,
            "-h" | "--help" => {
                println!("{HELP}");
                return Ok(());
            }
            _ => bail!("unknown flag {flag}\n\n{HELP}"),
        }
    }
    let runtime = tokio::runtime::Runtime::new()?;
    let slots = coop::slots(&w, &root.join("scratch"))?;
    println!(
        "{} blocks of {} KiB written into {} MiB; {} reads of the last {} written \
         (what coopcache's {} slots hold); foyer regions of {} MiB, direct I/O {}",
        w.blocks(),
        w.block >> 10,
        w.device >> 20,
        w.reads,
        slots.min(w.blocks()),
        slots,
        w.region >> 20,
        w.direct,
    );
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let dir = root.join(format!("run{run}"));
        let _ = std::fs::remove_dir_all(&dir);
        let window = slots.min(w.blocks());
        let mut rng = StdRng::seed_from_u64(run as u64);
        let sample: Vec<u64> =
            rand::seq::index::sample(&mut rng, window as usize, w.reads.min(window as usize))
                .into_iter()
                .map(|i| w.blocks() - window + i as u64)
                .collect();
        // Alternate which goes first, so that a drift of the machine
        // (other builds on its 2 cores) weighs on both.
        let coop_side = |w: &Workload| coop::run(w, &coop::dir(&dir), &sample);
        let foyer_side =
            |w: &Workload| runtime.block_on(foyer_side::run(w, &dir.join("foyer"), &sample));
        let (a, b) = if run % 2 == 0 {
            let a = coop_side(&w)?;
            (a, foyer_side(&w)?)
        } else {
            let b = foyer_side(&w)?;
            (coop_side(&w)?, b)
        };
        println!("run {run}: coopcache {a:?}\nrun {run}: foyer {b:?}");
        ours.push(a);
        theirs.push(b);
        std::fs::remove_dir_all(&dir)?;
    }
    print_table(&w, &ours, &theirs);
    Ok(())
}

/// The median over runs of each figure, as a Markdown table.
fn print_table(w: &Workload, ours: &[Side], theirs: &[Side]) {
    let payload = (w.blocks() * w.block as u64) as f64;
    type Figure = (&'static str, fn(&Side, f64) -> f64, usize);
    let rows: [Figure; 19] = [
        ("write time, s", |s, _| s.write_secs, 1),
        (
            "write throughput, MiB/s",
            |s, p| p / s.write_secs / 1048576.0,
            0,
        ),
        (
            "bytes passed to write calls / payload",
            |s, p| s.write_call_bytes as f64 / p,
            3,
        ),
        (
            "bytes sent to the device / payload (write amplification)",
            |s, p| s.device_write_bytes as f64 / p,
            3,
        ),
        (
            "allocated on disk, MiB",
            |s, _| s.allocated_bytes as f64 / 1048576.0,
            0,
        ),
        ("blocks held after writing", |s, _| s.present as f64, 0),
        ("heap per block held, bytes", |s, _| s.heap_per_block, 0),
        (
            "heap growth per block added, bytes",
            |s, _| s.heap_slope.unwrap_or(0.0),
            0,
        ),
        (
            "read, page cache warm: median µs",
            |s, _| s.warm.median_us,
            0,
        ),
        ("read, page cache warm: p99 µs", |s, _| s.warm.p99_us, 0),
        (
            "read, page cache warm: hit ratio",
            |s, _| s.warm.hit_ratio,
            3,
        ),
        (
            "read, page cache dropped: median µs",
            |s, _| s.cold.as_ref().map_or(f64::NAN, |r| r.median_us),
            0,
        ),
        (
            "read, page cache dropped: p99 µs",
            |s, _| s.cold.as_ref().map_or(f64::NAN, |r| r.p99_us),
            0,
        ),
        (
            "read, page cache dropped: hit ratio",
            |s, _| s.cold.as_ref().map_or(f64::NAN, |r| r.hit_ratio),
            3,
        ),
        (
            "concurrent reads (--threads), dropped: median µs",
            |s, _| s.concurrent.as_ref().map_or(f64::NAN, |r| r.median_us),
            0,
        ),
        (
            "concurrent reads (--threads), dropped: MiB/s",
            |s, _| s.concurrent.as_ref().map_or(f64::NAN, |r| r.mib_per_s),
            0,
        ),
        ("recovery: blocks back", |s, _| s.recovered as f64, 0),
        ("recovery: seconds", |s, _| s.recover_secs, 2),
        (
            "recovery: hit ratio of the reads after it",
            |s, _| s.after_recovery.hit_ratio,
            3,
        ),
    ];
    println!(
        "\n| median of {} runs | coopcache DiskStore + DiskTier | foyer block engine |",
        ours.len()
    );
    println!("| --- | ---: | ---: |");
    for (name, figure, digits) in rows {
        let mut a: Vec<f64> = ours.iter().map(|s| figure(s, payload)).collect();
        let mut b: Vec<f64> = theirs.iter().map(|s| figure(s, payload)).collect();
        let (a, b) = (measure::median(&mut a), measure::median(&mut b));
        println!("| {name} | {a:.digits$} | {b:.digits$} |");
    }
}
