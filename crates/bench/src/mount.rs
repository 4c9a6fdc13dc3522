//! `coopcache bench mount`: C2Cfs's experiments through real FUSE mounts
//! of a loopback cluster (one mount per node, this process), read and
//! written with plain file calls as programs would.
//!
//! - `staggered`: the mounts read one file in turn (C2Cfs section 5.4);
//!   target: total origin bytes at most 1.01 x the file.
//! - `write-read`: one mount writes and closes a file, the others read it
//!   in turn (C2Cfs's Table 2); target: 0 bytes from the origin for them.
//! - `throughput`: one file held in peers' memory read sequentially
//!   through a mount, beside the same file read from the local page cache
//!   through a plain FUSE passthrough (`coopcache_mount::mount_passthrough`)
//!   and without FUSE; target: the mount at least 0.70 of the passthrough.
//! - `dataset` (not run unless asked for: it needs MinIO, rclone and
//!   s3fs): training nodes' epochs over an S3 bucket through coopcache,
//!   `rclone mount` and `s3fs`, in `mount_dataset.rs`.
//! - `opens` (not run unless asked for): small files opened through
//!   `shared` and `exclusive` mounts, the first block served with the
//!   open's answer or not, in `mount_opens.rs`.
//! - `files` (not run unless asked for): `tar xf`, `rsync -a` of small
//!   files and a big sequential write by `dd`, `cp` and `cat`, into the
//!   origin directory itself, one-node `shared` and `exclusive` mounts
//!   over a directory with no emulated delay (whatever `--origin-delay`)
//!   and `rclone mount`, in `mount_files.rs`.
//!
//! Needs root (or fusermount3) and /dev/fuse, like `coopcache mount`.

use super::common::{Bar, Counters, in_tempdir, median, rng, write_origin_file, wrong_bytes};
use super::mount_dataset::{self, DatasetArgs};
use super::mount_files::{self, FilesArgs};
use super::mount_opens::{self, OpensArgs};
use crate::loopback::{LoopbackSpec, shutdown, start_cluster};
use anyhow::{Context, Result, bail};
use coopcache_console::args::Seed;
use coopcache_console::args::{parse_duration, parse_size};
use coopcache_mount::{MountOptions, Mounted};
use coopcache_node::NodeHandle;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct MountBenchArgs {
    /// Size of the file the staggered readers read (the paper's is 100 MB).
    #[arg(long, default_value = "100MiB", value_parser = parse_size)]
    file_size: u64,
    /// Size of the file written then read (`write-read`).
    #[arg(long, default_value = "16MiB", value_parser = parse_size)]
    write_size: u64,
    /// Mounts (nodes).
    #[arg(long, default_value_t = 4)]
    pub(super) mounts: u32,
    /// Emulated latency of every origin request.
    #[arg(long, default_value = "10ms", value_parser = parse_duration)]
    pub(super) origin_delay: Duration,
    /// Block size of the nodes (`coopcache node`'s default), for the
    /// staggered, write-read and throughput phases.
    #[arg(long, default_value = "64KiB", value_parser = parse_size)]
    block_size: u64,
    #[command(flatten)]
    pub(crate) seed: Seed,
    /// Phases to run: staggered, write-read, throughput (in the order
    /// given), dataset (coopcache against rclone and s3fs over MinIO;
    /// needs MinIO and the tools of --systems), opens (small files through
    /// shared and exclusive mounts), files (tar, rsync and big writes
    /// into the directory, shared and exclusive mounts and rclone, with
    /// no origin delay); the last three after the others.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "staggered,write-read,throughput"
    )]
    phases: Vec<Phase>,
    #[command(flatten)]
    pub(super) dataset: DatasetArgs,
    #[command(flatten)]
    opens: OpensArgs,
    #[command(flatten)]
    files: FilesArgs,
    /// JSON lines instead of a table.
    #[arg(long)]
    json: bool,
}

/// A phase of `bench mount`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Mounts read one file in turn.
    Staggered,
    /// One mount writes a file, the others read it.
    WriteRead,
    /// One file from a peer's memory, beside the page cache.
    Throughput,
    /// Epochs over a dataset in MinIO through coopcache, rclone and s3fs.
    Dataset,
    /// Small files opened through shared and exclusive mounts.
    Opens,
    /// tar, rsync and big writes into the directory, mounts and rclone.
    Files,
}

/// One step of the benchmark.
#[derive(serde::Serialize)]
pub(super) struct Row {
    pub bench: &'static str,
    pub phase: &'static str,
    /// The system read (`dataset` only: coopcache, rclone, s3fs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<&'static str>,
    pub step: String,
    pub bytes: u64,
    pub seconds: f64,
    pub mb_per_s: f64,
    /// Origin bytes read by the whole cluster during this step (in the
    /// dataset phase: bytes the origin sent, by its own count).
    pub origin_bytes: u64,
    pub peer_blocks: u64,
    pub local_blocks: u64,
    pub origin_blocks: u64,
    pub wrong_bytes: u64,
    /// CPU seconds the step cost this process, the FUSE servers and the
    /// origin (`dataset` only; MinIO's only if the phase started it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
    /// What the origin was asked during the step, by kind (the
    /// staggered, write-read and throughput phases).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin_ops: Option<OriginOps>,
    /// The target this row is judged by, and whether it is met.
    pub target: Option<String>,
    pub met: Option<bool>,
}

/// The requests the origin saw during a step, by kind: the server
/// operations C2Cfs's Tables 1 and 2 count, summed over the nodes.
#[derive(serde::Serialize, Clone, Copy, Debug, Default)]
pub(super) struct OriginOps {
    /// Names, attributes and listings (NFS's LOOKUP, GETATTR, READDIR).
    pub metadata: u64,
    /// Versions asked at opens, or by a manager (C2Cfs's revalidation).
    pub versions: u64,
    /// Requests that read blocks (a run of blocks goes in one).
    pub reads: u64,
    /// Changes: drafts begun, creates, removals, renames, modes, times.
    pub changes: u64,
    /// Requests that carried a file's bytes in (NFS's WRITE).
    pub writes: u64,
    /// Drafts made the file at a close (the write-through's commit).
    pub commits: u64,
}

impl OriginOps {
    fn of(d: &Counters) -> OriginOps {
        OriginOps {
            metadata: d.origin.metadata,
            versions: d.origin_stats,
            reads: d.origin_requests,
            changes: d.origin.changes,
            writes: d.origin.writes,
            commits: d.origin.commits,
        }
    }

    fn total(&self) -> u64 {
        self.metadata + self.versions + self.reads + self.changes + self.writes + self.commits
    }
}

const MB: f64 = 1e6;

pub(crate) fn run(args: MountBenchArgs) -> Result<()> {
    if args.mounts < 2 || args.file_size == 0 || args.write_size == 0 {
        bail!("--mounts must be at least 2, --file-size and --write-size at least 1 byte");
    }
    if args.phases.is_empty() {
        bail!(
            "--phases needs at least one of staggered, write-read, throughput, dataset, opens, files"
        );
    }
    if args.phases.contains(&Phase::Opens)
        && (args.opens.open_files == 0 || args.opens.open_passes == 0)
    {
        bail!("--open-files and --open-passes must be at least 1");
    }
    let f = &args.files;
    if args.phases.contains(&Phase::Files)
        && (f.files_count == 0 || f.files_passes == 0 || f.files_write_size == 0)
    {
        bail!("--files-count, --files-passes and --files-write-size must be at least 1");
    }
    let dataset = args.phases.contains(&Phase::Dataset);
    let dataset_plan = if dataset {
        Some(mount_dataset::plan(&args)?)
    } else {
        None
    };
    let classic = args
        .phases
        .iter()
        .any(|p| !matches!(p, Phase::Dataset | Phase::Opens | Phase::Files));
    let opens = args.phases.contains(&Phase::Opens);
    let files = args.phases.contains(&Phase::Files);
    let a = &args;
    let (rows, open_rows, (file_rows, notes)) =
        in_tempdir("coopcache-bench-mount-", |dir| async move {
            let mut rows = Vec::new();
            if classic {
                rows.extend(bench(a, dir.join("classic")).await?);
            }
            if let Some(plan) = dataset_plan {
                rows.extend(mount_dataset::bench(a, &plan, &dir.join("dataset")).await?);
            }
            let mut open_rows = Vec::new();
            if opens {
                open_rows = mount_opens::bench(a, &a.opens, &dir.join("opens")).await?;
            }
            let mut file_rows = (Vec::new(), Vec::new());
            if files {
                file_rows = mount_files::bench(a, &a.files, &dir.join("files")).await?;
            }
            Ok((rows, open_rows, file_rows))
        })?;
    if args.json {
        coopcache_console::output::print_json(&rows)?;
        coopcache_console::output::print_json(&open_rows)?;
        coopcache_console::output::print_json(&file_rows)?;
    } else {
        if !rows.is_empty() {
            table(&rows);
        }
        if !open_rows.is_empty() {
            mount_opens::table(&open_rows);
        }
        if !file_rows.is_empty() {
            mount_files::table(&file_rows, &notes);
        }
    }
    let wrong: u64 =
        rows.iter().map(|r| r.wrong_bytes).sum::<u64>() + mount_opens::wrong(&open_rows);
    if wrong > 0 {
        bail!("{wrong} wrong bytes delivered");
    }
    Ok(())
}

async fn bench(args: &MountBenchArgs, dir: PathBuf) -> Result<Vec<Row>> {
    std::fs::create_dir_all(&dir)?;
    let origin = dir.join("origin");
    let file = write_origin_file(
        &origin,
        "staggered.bin",
        args.file_size,
        &mut rng(args.seed.value, 1),
    )?;
    let held = write_origin_file(
        &origin,
        "held.bin",
        args.file_size,
        &mut rng(args.seed.value, 2),
    )?;
    let mut spec = LoopbackSpec::new(&dir, args.mounts, origin.clone())?;
    spec.origin_delay = args.origin_delay;
    spec.block_size = u32::try_from(args.block_size)
        .ok()
        .filter(|b| (4096..=4 << 20).contains(b))
        .with_context(|| format!("--block-size {}: expected 4 KiB to 4 MiB", args.block_size))?;
    // Files change during the run: every open asks the origin.
    spec.attr_ttl = Duration::ZERO;
    // Room for both big files and the written one, as C2Cfs's clients.
    let cache = 2 * args.file_size + args.write_size + (args.file_size >> 3);
    let nodes = start_cluster(&spec, &vec![cache; args.mounts as usize]).await?;
    let mut mounts = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let at = dir.join(format!("mnt{i}"));
        std::fs::create_dir_all(&at)?;
        let opts = MountOptions::default();
        let m = coopcache_mount::mount(&at, node.clone(), tokio::runtime::Handle::current(), &opts)
            .with_context(|| format!("mounting node {i} (root and /dev/fuse needed)"))?;
        mounts.push(m);
    }
    let result = phases(args, &nodes, &mounts, &origin, &file, &held).await;
    for m in mounts {
        let _ = tokio::task::spawn_blocking(move || m.unmount()).await;
    }
    shutdown(&nodes);
    result
}

async fn phases(
    args: &MountBenchArgs,
    nodes: &[Arc<NodeHandle>],
    mounts: &[Mounted],
    origin: &Path,
    file: &[u8],
    held: &[u8],
) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let steps = |p: &Phase| match p {
        Phase::Staggered | Phase::WriteRead => u64::from(args.mounts),
        Phase::Throughput => u64::from(args.mounts) - 1,
        Phase::Dataset | Phase::Opens | Phase::Files => 0,
    };
    let bar = Bar::new(args.phases.iter().map(steps).sum(), "steps");
    for phase in &args.phases {
        match phase {
            Phase::Staggered => staggered(args, nodes, mounts, file, &bar, &mut rows).await?,
            Phase::WriteRead => write_read(args, nodes, mounts, &bar, &mut rows).await?,
            Phase::Throughput => throughput(nodes, mounts, origin, held, &bar, &mut rows).await?,
            Phase::Dataset | Phase::Opens | Phase::Files => {}
        }
    }
    drop(bar);
    Ok(rows)
}

/// Each mount reads the file after the one before.
async fn staggered(
    args: &MountBenchArgs,
    nodes: &[Arc<NodeHandle>],
    mounts: &[Mounted],
    file: &[u8],
    bar: &Bar,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let mut total = 0;
    for (i, m) in mounts.iter().enumerate() {
        let row = step(nodes, "staggered", format!("reader {}", i + 1), || {
            read_file(&m.dir().join("staggered.bin"), file)
        })
        .await?;
        total += row.origin_bytes;
        rows.push(row);
        bar.inc();
    }
    let ratio = total as f64 / args.file_size as f64;
    rows.push(summary(
        "staggered",
        "total origin bytes / file",
        total,
        ratio,
        "<= 1.01",
        ratio <= 1.01,
    ));
    Ok(())
}

/// Mount 0 writes and closes a file, the others read it.
async fn write_read(
    args: &MountBenchArgs,
    nodes: &[Arc<NodeHandle>],
    mounts: &[Mounted],
    bar: &Bar,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let written: Vec<u8> = (0..args.write_size).map(|i| (i * 31 % 251) as u8).collect();
    let target = mounts[0].dir().join("written.bin");
    let w = written.clone();
    rows.push(
        step(nodes, "write-read", "writer".into(), move || {
            let t = Instant::now();
            std::fs::write(&target, &w)?;
            Ok((w.len() as u64, t.elapsed().as_secs_f64(), 0))
        })
        .await?,
    );
    bar.inc();
    let mut readers_origin = 0;
    for (i, m) in mounts.iter().enumerate().skip(1) {
        let row = step(nodes, "write-read", format!("reader {i}"), || {
            read_file(&m.dir().join("written.bin"), &written)
        })
        .await?;
        readers_origin += row.origin_bytes;
        rows.push(row);
        bar.inc();
    }
    rows.push(summary(
        "write-read",
        "readers' origin bytes",
        readers_origin,
        readers_origin as f64,
        "0",
        readers_origin == 0,
    ));
    Ok(())
}

/// `held.bin` in node 1's memory, read through each other mount in turn
/// (every block from a peer's memory: no mount has read it before),
/// alternating with the same file through a plain FUSE passthrough of the
/// origin directory (the file in the page cache), then once from the page
/// cache without FUSE. Medians of the passes, and CPU per GB of each.
async fn throughput(
    nodes: &[Arc<NodeHandle>],
    mounts: &[Mounted],
    origin: &Path,
    held: &[u8],
    bar: &Bar,
    rows: &mut Vec<Row>,
) -> Result<()> {
    read_file(&mounts[1].dir().join("held.bin"), held)?;
    let direct_path = origin.join("held.bin");
    read_file(&direct_path, held)?; // into the page cache
    let at = origin.with_file_name("passthrough");
    std::fs::create_dir_all(&at)?;
    let passthrough = coopcache_mount::mount_passthrough(&at, origin)
        .context("mounting the FUSE passthrough (root and /dev/fuse needed)")?;
    let mut coop = Vec::new();
    let mut plain = Vec::new();
    for (i, m) in mounts.iter().enumerate().filter(|(i, _)| *i != 1) {
        let path = m.dir().join("held.bin");
        let step_name = format!("mount {i}, from peers' memory");
        coop.push(timed_step(nodes, step_name, || read_file(&path, held)).await?);
        let path = passthrough.dir().join("held.bin");
        let step_name = "FUSE passthrough, page cache".to_string();
        plain.push(timed_step(nodes, step_name, || read_file(&path, held)).await?);
        bar.inc();
    }
    let _ = tokio::task::spawn_blocking(move || passthrough.unmount()).await;
    // The holder's own mount, its pages dropped from the kernel's cache:
    // FUSE and the node's memory without a peer, to tell the two costs
    // apart.
    let own = mounts[1].dir().join("held.bin");
    drop_pages(&own)?;
    let local = timed_step(nodes, "mount 1, from its own memory".into(), || {
        read_file(&own, held)
    })
    .await?;
    let direct = timed_step(nodes, "page cache, no FUSE".into(), || {
        read_file(&direct_path, held)
    })
    .await?;
    let mbps = |rows: &[Row]| median(&rows.iter().map(|r| r.mb_per_s).collect::<Vec<_>>());
    let (through, fuse) = (mbps(&coop), mbps(&plain));
    let share = through / fuse.max(f64::MIN_POSITIVE);
    rows.extend(coop);
    rows.extend(plain);
    rows.push(local);
    rows.push(direct);
    rows.push(summary(
        "throughput",
        "mount / FUSE passthrough (medians)",
        0,
        share,
        ">= 0.70",
        share >= 0.70,
    ));
    Ok(())
}

/// Drops `path`'s clean pages from the kernel's page cache, so the next
/// read goes through the file system again.
fn drop_pages(path: &Path) -> Result<()> {
    let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed)
        .with_context(|| format!("dropping the cached pages of {}", path.display()))?;
    Ok(())
}

/// [`step`] of the throughput phase, with the CPU this process (nodes,
/// mounts, passthrough and reader) spent in it.
async fn timed_step(
    nodes: &[Arc<NodeHandle>],
    name: String,
    f: impl FnOnce() -> Result<(u64, f64, u64)>,
) -> Result<Row> {
    let cpu = super::mount_dataset::cpu_seconds(None);
    let mut row = step(nodes, "throughput", name, f).await?;
    row.cpu_seconds = Some(super::mount_dataset::cpu_seconds(None) - cpu);
    Ok(row)
}

/// Runs `f` (a blocking file operation giving bytes, seconds and wrong
/// bytes) and the cluster's counters around it.
async fn step(
    nodes: &[Arc<NodeHandle>],
    phase: &'static str,
    step: String,
    f: impl FnOnce() -> Result<(u64, f64, u64)>,
) -> Result<Row> {
    let before = Counters::sum(nodes).await?;
    // The file calls block: off the runtime's workers, which serve them.
    let (bytes, seconds, wrong) = tokio::task::block_in_place(f)?;
    let d = Counters::sum(nodes).await?.since(&before);
    Ok(Row {
        bench: "mount",
        phase,
        system: None,
        step,
        bytes,
        seconds,
        mb_per_s: bytes as f64 / MB / seconds.max(f64::MIN_POSITIVE),
        origin_bytes: d.origin_bytes,
        peer_blocks: d.at("peer") + d.at("manager"),
        local_blocks: d.at("local"),
        origin_blocks: d.at("origin"),
        wrong_bytes: wrong,
        cpu_seconds: None,
        origin_ops: Some(OriginOps::of(&d)),
        target: None,
        met: None,
    })
}

pub(super) fn summary(
    phase: &'static str,
    step: &str,
    bytes: u64,
    value: f64,
    target: &str,
    met: bool,
) -> Row {
    Row {
        bench: "mount",
        phase,
        system: None,
        step: format!("{step}: {value:.3}"),
        bytes,
        seconds: 0.0,
        mb_per_s: 0.0,
        origin_bytes: bytes,
        peer_blocks: 0,
        local_blocks: 0,
        origin_blocks: 0,
        wrong_bytes: 0,
        cpu_seconds: None,
        origin_ops: None,
        target: Some(target.into()),
        met: Some(met),
    }
}

/// Reads `path` whole in 1 MiB calls; bytes, seconds, wrong bytes.
fn read_file(path: &Path, want: &[u8]) -> Result<(u64, f64, u64)> {
    let t = Instant::now();
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut got = Vec::with_capacity(want.len());
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    let seconds = t.elapsed().as_secs_f64();
    Ok((got.len() as u64, seconds, wrong_bytes(&got, want)))
}

fn table(rows: &[Row]) {
    steps_table(rows);
    origin_table(rows);
}

fn steps_table(rows: &[Row]) {
    println!(
        "{:<11} {:<42} {:>9} {:>8} {:>9} {:>12} {:>6} {:>6} {:>6} {:>6}  target",
        "phase", "step", "MiB", "seconds", "MB/s", "origin MiB", "peer", "local", "origin", "cpu s"
    );
    for r in rows {
        let target = match (&r.target, r.met) {
            (Some(t), Some(met)) => format!("{t} {}", if met { "met" } else { "MISSED" }),
            _ => String::new(),
        };
        let cpu = r.cpu_seconds.map_or(String::new(), |c| format!("{c:.1}"));
        println!(
            "{:<11} {:<42} {:>9.1} {:>8.3} {:>9.0} {:>12.2} {:>6} {:>6} {:>6} {cpu:>6}  {target}",
            r.phase,
            r.step,
            r.bytes as f64 / 1048576.0,
            r.seconds,
            r.mb_per_s,
            r.origin_bytes as f64 / 1048576.0,
            r.peer_blocks,
            r.local_blocks,
            r.origin_blocks,
        );
    }
}

/// The origin's requests per step, as C2Cfs's Tables 1 and 2 count the
/// server's operations per client.
fn origin_table(rows: &[Row]) {
    let counted: Vec<(&Row, &OriginOps)> = rows
        .iter()
        .filter_map(|r| Some((r, r.origin_ops.as_ref()?)))
        .collect();
    if counted.is_empty() {
        return;
    }
    println!("\norigin requests per step:");
    println!(
        "{:<11} {:<42} {:>8} {:>8} {:>6} {:>7} {:>6} {:>7} {:>6}",
        "phase", "step", "metadata", "versions", "reads", "changes", "writes", "commits", "total"
    );
    for (r, o) in counted {
        println!(
            "{:<11} {:<42} {:>8} {:>8} {:>6} {:>7} {:>6} {:>7} {:>6}",
            r.phase,
            r.step,
            o.metadata,
            o.versions,
            o.reads,
            o.changes,
            o.writes,
            o.commits,
            o.total()
        );
    }
}
