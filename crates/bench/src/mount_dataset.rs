//! `coopcache bench mount --phases dataset` (issue 14, deliverable 7c):
//! a dataset in an S3 bucket read by training nodes, one epoch each, in
//! turn, through coopcache, through `rclone mount --vfs-cache-mode full`
//! and through `s3fs` with its cache, side by side over one MinIO.
//!
//! Each system gets one mount per simulated node and the same cache
//! budget per mount: coopcache a node's memory for blocks (one node per
//! mount, a loopback cluster in this process), rclone
//! `--vfs-cache-max-size` on a disk cache of its own per mount. s3fs has
//! no size limit for its cache (`use_cache`; only `ensure_diskfree`, a
//! floor of free disk space), so it gets a cache directory per mount and
//! no budget. With one epoch per node the baselines' caches never serve a
//! read: every node meets every file first, so each reads the whole
//! dataset from the origin; a cooperative cache reads it once.
//!
//! Origin bytes are MinIO's own count of bytes it sent
//! (`minio_api_requests_traffic_sent_bytes`), read before and after each
//! epoch and around each system's whole run (mounting and unmounting
//! included), after checking that reading a known object moves it.
//! Targets: coopcache's total at most 0.3x each baseline's, and its
//! median epoch after the first no slower than each baseline's.

use super::common::{Counters, median, rng, wrong_bytes};
use super::mount::{MountBenchArgs, Row, summary};
use super::s3_servers::{FuseProcess, Minio, S3Endpoint, find_minio, find_tool};
use crate::loopback::{LoopbackSpec, shutdown, start_cluster};
use anyhow::{Context, Result, bail};
use coopcache_console::args::parse_size;
use coopcache_mount::{MountOptions, Mounted};
use coopcache_node::NodeHandle;
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStore;
use object_store::path::Path as Key;
use rand::Rng;
use rand::seq::SliceRandom;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

/// The dataset phase's flags.
#[derive(clap::Args)]
pub(crate) struct DatasetArgs {
    /// Dataset phase: the dataset's size, split into --dataset-files
    /// files of equal size.
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    dataset_size: u64,
    /// Dataset phase: files in the dataset.
    #[arg(long, default_value_t = 256)]
    dataset_files: u32,
    /// Dataset phase: cache per mount, the same for every system
    /// (coopcache: a node's memory for blocks; rclone:
    /// --vfs-cache-max-size; s3fs has no size limit). Default: twice a
    /// mount's share of the dataset.
    #[arg(long, value_parser = parse_size)]
    dataset_budget: Option<u64>,
    /// Dataset phase: the systems compared, in this order.
    #[arg(long, value_delimiter = ',', default_value = "coopcache,rclone,s3fs")]
    systems: Vec<System>,
    /// Dataset phase: a running MinIO (http://HOST:PORT) instead of one
    /// started on loopback; its metrics must be public
    /// (MINIO_PROMETHEUS_AUTH_TYPE=public) and --bucket must exist.
    #[arg(long)]
    minio: Option<String>,
    /// Dataset phase: access key of --minio (of the one started: this).
    #[arg(long, default_value = "coopcache")]
    minio_user: String,
    /// Dataset phase: secret key of --minio.
    #[arg(long, default_value = "coopcache-bench-secret")]
    minio_password: String,
    /// Dataset phase: the bucket; the dataset goes under
    /// `coopcache-bench-dataset/` in it (removed at the end).
    #[arg(long, default_value = "coopcache-bench")]
    bucket: String,
}

/// A system the dataset is read through.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum System {
    /// A loopback coopcache cluster, one FUSE mount per node.
    Coopcache,
    /// `rclone mount --vfs-cache-mode full`, one per node.
    Rclone,
    /// `s3fs -o use_cache`, one per node.
    S3fs,
}

impl System {
    fn name(self) -> &'static str {
        match self {
            System::Coopcache => "coopcache",
            System::Rclone => "rclone",
            System::S3fs => "s3fs",
        }
    }
}

/// Where the dataset's objects go in the bucket.
pub(crate) const PREFIX: &str = "coopcache-bench-dataset";

/// What the phase needs, found before anything starts.
pub(crate) struct Plan {
    /// MinIO's binary, when the phase starts its own.
    minio: Option<PathBuf>,
    rclone: Option<PathBuf>,
    s3fs: Option<PathBuf>,
    file_size: u64,
    budget: u64,
}

/// Checks the flags and finds the programs the phase runs.
pub(crate) fn plan(args: &MountBenchArgs) -> Result<Plan> {
    let d = &args.dataset;
    if d.dataset_files == 0 || d.dataset_size < u64::from(d.dataset_files) {
        bail!("--dataset-files must be at least 1 and --dataset-size at least 1 byte a file");
    }
    if d.systems.is_empty() {
        bail!("--systems needs at least one of coopcache, rclone, s3fs");
    }
    let file_size = d.dataset_size / u64::from(d.dataset_files);
    let budget = d
        .dataset_budget
        .unwrap_or(2 * file_size * u64::from(d.dataset_files) / u64::from(args.mounts));
    if budget == 0 {
        bail!("--dataset-budget must be at least 1 byte");
    }
    let has = |s| d.systems.contains(&s);
    Ok(Plan {
        minio: match d.minio {
            Some(_) => None,
            None => Some(find_minio()?),
        },
        rclone: has(System::Rclone)
            .then(|| find_tool("rclone", "rclone"))
            .transpose()?,
        s3fs: has(System::S3fs)
            .then(|| find_tool("s3fs", "s3fs"))
            .transpose()?,
        file_size,
        budget,
    })
}

/// Runs the phase in `dir`: MinIO, the upload, then each system in turn.
pub(crate) async fn bench(args: &MountBenchArgs, plan: &Plan, dir: &Path) -> Result<Vec<Row>> {
    std::fs::create_dir_all(dir)?;
    let d = &args.dataset;
    let mut endpoint = S3Endpoint {
        url: d
            .minio
            .as_deref()
            .unwrap_or_default()
            .trim_end_matches('/')
            .to_owned(),
        user: d.minio_user.clone(),
        password: d.minio_password.clone(),
        bucket: d.bucket.clone(),
    };
    let started = match &plan.minio {
        Some(exe) => Some(Minio::start(exe, &dir.join("minio"), &endpoint).await?),
        None => None,
    };
    if let Some(minio) = &started {
        endpoint = minio.endpoint.clone();
    }
    let origin = OriginServer {
        endpoint,
        pid: started.as_ref().and_then(Minio::pid),
    };
    let endpoint = &origin.endpoint;
    let store = endpoint.store()?;
    eprintln!(
        "dataset: {} files of {} KiB into {}/{}/{PREFIX} ...",
        d.dataset_files,
        plan.file_size >> 10,
        endpoint.url,
        endpoint.bucket
    );
    let data = upload(&store, d.dataset_files, plan.file_size, args.seed.value).await?;
    // The upload's dirty pages are written back before any system runs.
    rustix::fs::sync();
    let outcome = systems(args, plan, dir, &origin, &store, &data).await;
    if d.minio.is_some() {
        remove(&store, data.len()).await;
    }
    outcome
}

async fn systems(
    args: &MountBenchArgs,
    plan: &Plan,
    dir: &Path,
    origin: &OriginServer,
    store: &object_store::aws::AmazonS3,
    data: &[Vec<u8>],
) -> Result<Vec<Row>> {
    check_metric(&origin.endpoint, store, &data[0]).await?;
    let mut rows = Vec::new();
    let mut runs = Vec::new();
    for &system in &args.dataset.systems {
        eprintln!("dataset: {} ...", system.name());
        let at = dir.join(system.name());
        std::fs::create_dir_all(&at)?;
        let run = run_system(args, plan, system, &at, origin, data).await?;
        // The next system starts from the same state: no caches of this
        // one on disk, none of its dirty pages left to write back.
        std::fs::remove_dir_all(&at)?;
        rustix::fs::sync();
        rows.extend(run.rows(system));
        runs.push((system, run));
    }
    rows.extend(targets(&runs));
    Ok(rows)
}

/// The origin every system reads, and MinIO's process if this phase
/// started it (its CPU time is counted).
struct OriginServer {
    endpoint: S3Endpoint,
    pid: Option<u32>,
}

/// The name of file `i` under the prefix.
pub(crate) fn file_name(i: usize) -> String {
    format!("f{i:04}.bin")
}

/// Uploads `files` files of `size` seeded random bytes; returns them.
pub(crate) async fn upload(
    store: &object_store::aws::AmazonS3,
    files: u32,
    size: u64,
    seed: u64,
) -> Result<Vec<Vec<u8>>> {
    let mut data = Vec::new();
    for i in 0..files {
        let mut bytes = vec![0u8; usize::try_from(size)?];
        rng(seed, 1000 + u64::from(i)).fill(&mut bytes[..]);
        data.push(bytes);
    }
    futures::stream::iter(data.iter().enumerate())
        .map(|(i, bytes)| async move {
            let key = Key::from(format!("{PREFIX}/{}", file_name(i)));
            store
                .put(&key, bytes.clone().into())
                .await
                .with_context(|| format!("uploading {key}"))
        })
        .buffer_unordered(4)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(data)
}

/// Removes the uploaded objects (from a MinIO the phase did not start);
/// a failure is only reported.
async fn remove(store: &object_store::aws::AmazonS3, files: usize) {
    for i in 0..files {
        let key = Key::from(format!("{PREFIX}/{}", file_name(i)));
        if let Err(e) = store.delete(&key).await {
            eprintln!("dataset: could not remove {key}: {e}");
        }
    }
}

/// Fails unless reading `first` (file 0) whole moves MinIO's count of
/// bytes sent by at least its size: the origin bytes of every row hang
/// on that count.
pub(crate) async fn check_metric(
    endpoint: &S3Endpoint,
    store: &object_store::aws::AmazonS3,
    first: &[u8],
) -> Result<()> {
    let before = endpoint.sent_bytes().await?;
    let key = Key::from(format!("{PREFIX}/{}", file_name(0)));
    let got = store.get(&key).await?.bytes().await?;
    let moved = endpoint.sent_bytes().await?.saturating_sub(before);
    if wrong_bytes(&got, first) > 0 {
        bail!("{key} read back from MinIO differs from what was uploaded");
    }
    if moved < first.len() as u64 {
        bail!(
            "MinIO's minio_api_requests_traffic_sent_bytes moved by {moved} bytes for a GET of {} bytes: its origin byte counts cannot be trusted",
            first.len()
        );
    }
    Ok(())
}

/// One system's run: its epochs and its origin bytes in all.
struct Run {
    epochs: Vec<Epoch>,
    /// Bytes MinIO sent from before mounting to after unmounting.
    origin_bytes: u64,
}

/// One node's epoch.
struct Epoch {
    bytes: u64,
    seconds: f64,
    origin_bytes: u64,
    wrong_bytes: u64,
    /// CPU seconds of this process, the FUSE servers and MinIO.
    cpu_seconds: f64,
    /// Block reads by level (coopcache only).
    levels: Option<Counters>,
}

impl Run {
    /// The median seconds of the epochs after the first.
    fn later_median(&self) -> f64 {
        let later: Vec<f64> = self.epochs.iter().skip(1).map(|e| e.seconds).collect();
        median(&later)
    }

    fn rows(&self, system: System) -> Vec<Row> {
        let mut rows: Vec<Row> = self
            .epochs
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let level = |l: &str| e.levels.as_ref().map_or(0, |c| c.at(l));
                Row {
                    bench: "mount",
                    phase: "dataset",
                    system: Some(system.name()),
                    step: format!("{}: node {} epoch", system.name(), i + 1),
                    bytes: e.bytes,
                    seconds: e.seconds,
                    mb_per_s: e.bytes as f64 / 1e6 / e.seconds.max(f64::MIN_POSITIVE),
                    origin_bytes: e.origin_bytes,
                    peer_blocks: level("peer") + level("manager"),
                    local_blocks: level("local"),
                    origin_blocks: level("origin"),
                    wrong_bytes: e.wrong_bytes,
                    cpu_seconds: Some(e.cpu_seconds),
                    origin_ops: None,
                    target: None,
                    met: None,
                }
            })
            .collect();
        let bytes: u64 = self.epochs.iter().map(|e| e.bytes).sum();
        let later = self.later_median();
        let later_cpu: Vec<f64> = self.epochs.iter().skip(1).map(|e| e.cpu_seconds).collect();
        let total = |f: fn(&Row) -> u64| rows.iter().map(f).sum::<u64>();
        let all = Row {
            bench: "mount",
            phase: "dataset",
            system: Some(system.name()),
            step: format!("{}: all; later epochs' medians", system.name()),
            bytes,
            seconds: later,
            mb_per_s: bytes as f64 / 1e6 / self.epochs.len() as f64 / later.max(f64::MIN_POSITIVE),
            origin_bytes: self.origin_bytes,
            peer_blocks: total(|r| r.peer_blocks),
            local_blocks: total(|r| r.local_blocks),
            origin_blocks: total(|r| r.origin_blocks),
            wrong_bytes: total(|r| r.wrong_bytes),
            cpu_seconds: Some(median(&later_cpu)),
            origin_ops: None,
            target: None,
            met: None,
        };
        rows.push(all);
        rows
    }
}

/// The targets: coopcache against each baseline run.
fn targets(runs: &[(System, Run)]) -> Vec<Row> {
    let Some((_, coop)) = runs.iter().find(|(s, _)| *s == System::Coopcache) else {
        return Vec::new();
    };
    let mut rows = Vec::new();
    for (system, run) in runs.iter().filter(|(s, _)| *s != System::Coopcache) {
        let name = system.name();
        let share = coop.origin_bytes as f64 / (run.origin_bytes as f64).max(1.0);
        let mut row = summary(
            "dataset",
            &format!("origin bytes coopcache / {name}"),
            coop.origin_bytes,
            share,
            "<= 0.30",
            share <= 0.30,
        );
        row.system = Some(name);
        rows.push(row);
        let speed = coop.later_median() / run.later_median().max(f64::MIN_POSITIVE);
        let mut row = summary(
            "dataset",
            &format!("later epoch s coopcache / {name}"),
            0,
            speed,
            "<= 1.00",
            speed <= 1.0,
        );
        row.system = Some(name);
        rows.push(row);
    }
    rows
}

/// The mounts of one system, one per node. [`Mounts::stop`] unmounts
/// them and stops what serves them; dropping them (on an error) unmounts
/// them too, and the cluster's nodes stop with the runtime.
enum Mounts {
    Coopcache {
        nodes: Vec<Arc<NodeHandle>>,
        mounts: Vec<Mounted>,
    },
    Fuse(Vec<FuseProcess>),
}

impl Mounts {
    fn dir(&self, i: usize) -> &Path {
        match self {
            Mounts::Coopcache { mounts, .. } => mounts[i].dir(),
            Mounts::Fuse(procs) => procs[i].dir(),
        }
    }

    /// The processes serving the mounts, other than this one.
    fn pids(&self) -> Vec<u32> {
        match self {
            Mounts::Coopcache { .. } => Vec::new(),
            Mounts::Fuse(procs) => procs.iter().map(FuseProcess::pid).collect(),
        }
    }

    /// The cluster's counters (coopcache only).
    async fn counters(&self) -> Result<Option<Counters>> {
        match self {
            Mounts::Coopcache { nodes, .. } => Ok(Some(Counters::sum(nodes).await?)),
            Mounts::Fuse(_) => Ok(None),
        }
    }

    /// Unmounts everything (coopcache's off the runtime, which serves
    /// the mounts' last calls).
    async fn stop(self) {
        match self {
            Mounts::Coopcache { nodes, mounts } => {
                for m in mounts {
                    let _ = tokio::task::spawn_blocking(move || m.unmount()).await;
                }
                shutdown(&nodes);
            }
            Mounts::Fuse(procs) => {
                let _ = tokio::task::spawn_blocking(move || drop(procs)).await;
            }
        }
    }
}

/// Mounts `system` once per node, has each node read every file once in
/// an order of its own, node after node, and unmounts.
async fn run_system(
    args: &MountBenchArgs,
    plan: &Plan,
    system: System,
    dir: &Path,
    origin: &OriginServer,
    data: &[Vec<u8>],
) -> Result<Run> {
    let endpoint = &origin.endpoint;
    let before = endpoint.sent_bytes().await?;
    let mounts = match system {
        System::Coopcache => mount_coopcache(args, plan, dir, endpoint).await?,
        System::Rclone => Mounts::Fuse(mount_baseline(args, plan, rclone, dir, endpoint)?),
        System::S3fs => Mounts::Fuse(mount_baseline(args, plan, s3fs, dir, endpoint)?),
    };
    let mut epochs = Vec::new();
    let mut failed = None;
    for node in 0..args.mounts as usize {
        match epoch(&mounts, node, origin, data, args.seed.value).await {
            Ok(e) => epochs.push(e),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    mounts.stop().await;
    if let Some(e) = failed {
        return Err(e.context(format!("reading through {}", system.name())));
    }
    let origin_bytes = endpoint.sent_bytes().await?.saturating_sub(before);
    Ok(Run {
        epochs,
        origin_bytes,
    })
}

/// Node `node` reads every file once, in its own shuffled order.
async fn epoch(
    mounts: &Mounts,
    node: usize,
    origin: &OriginServer,
    data: &[Vec<u8>],
    seed: u64,
) -> Result<Epoch> {
    let mut order: Vec<usize> = (0..data.len()).collect();
    order.shuffle(&mut rng(seed, 2000 + node as u64));
    let counters = mounts.counters().await?;
    let sent = origin.endpoint.sent_bytes().await?;
    let dir = mounts.dir(node);
    let pids: Vec<Option<u32>> = std::iter::once(None)
        .chain(mounts.pids().into_iter().chain(origin.pid).map(Some))
        .collect();
    let cpu = || pids.iter().map(|&p| cpu_seconds(p)).sum::<f64>();
    let cpu_before = cpu();
    // The file calls block: off the runtime's workers, which serve
    // coopcache's mounts.
    let (bytes, seconds, wrong) = tokio::task::block_in_place(|| -> Result<(u64, f64, u64)> {
        let (mut bytes, mut seconds, mut wrong) = (0, 0.0, 0);
        let mut got = Vec::new();
        for &i in &order {
            let started = Instant::now();
            read_whole(&dir.join(file_name(i)), &mut got)?;
            seconds += started.elapsed().as_secs_f64();
            bytes += got.len() as u64;
            if got != data[i] {
                wrong += wrong_bytes(&got, &data[i]);
            }
        }
        Ok((bytes, seconds, wrong))
    })?;
    let cpu_seconds = cpu() - cpu_before;
    let origin_bytes = origin.endpoint.sent_bytes().await?.saturating_sub(sent);
    let levels = match (counters, mounts.counters().await?) {
        (Some(before), Some(after)) => Some(after.since(&before)),
        _ => None,
    };
    Ok(Epoch {
        bytes,
        seconds,
        origin_bytes,
        wrong_bytes: wrong,
        cpu_seconds,
        levels,
    })
}

/// Reads `path` whole into `got` in 1 MiB calls, as a data loader
/// would; `got` keeps its memory from file to file, so the reader pays no
/// page faults the systems do not cause.
fn read_whole(path: &Path, got: &mut Vec<u8>) -> Result<()> {
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    got.clear();
    loop {
        let len = got.len();
        got.resize(len + (1 << 20), 0);
        let n = f
            .read(&mut got[len..])
            .with_context(|| format!("reading {}", path.display()))?;
        got.truncate(len + n);
        if n == 0 {
            return Ok(());
        }
    }
}

/// CPU seconds (user and system) process `pid`, or this one, has used
/// (`utime` and `stime` of /proc/PID/stat); 0 for a process gone.
pub(super) fn cpu_seconds(pid: Option<u32>) -> f64 {
    let path = pid.map_or("/proc/self/stat".into(), |p| format!("/proc/{p}/stat"));
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    // The command name, in parentheses, may hold spaces: fields count
    // from after it, where the state (field 3) comes first.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<u64>().ok())
        .sum();
    ticks as f64 / f64::from(rustix::param::clock_ticks_per_second() as u32)
}

/// A loopback cluster over the bucket, `plan.budget` of blocks a node,
/// each node mounted.
async fn mount_coopcache(
    args: &MountBenchArgs,
    plan: &Plan,
    dir: &Path,
    endpoint: &S3Endpoint,
) -> Result<Mounts> {
    let mut spec = LoopbackSpec::new(dir, args.mounts, dir.join("unused"))?;
    spec.origin = format!("s3://{}/{PREFIX}", endpoint.bucket);
    spec.origin_options = endpoint.origin_options();
    let nodes = start_cluster(&spec, &vec![plan.budget; args.mounts as usize]).await?;
    let mut mounts = Mounts::Coopcache {
        nodes: nodes.clone(),
        mounts: Vec::new(),
    };
    for (i, node) in nodes.iter().enumerate() {
        let at = dir.join(format!("mnt{i}"));
        std::fs::create_dir_all(&at)?;
        let rt = tokio::runtime::Handle::current();
        let m = coopcache_mount::mount(&at, node.clone(), rt, &MountOptions::default())
            .with_context(|| format!("mounting node {i} (root and /dev/fuse needed)"))?;
        if let Mounts::Coopcache { mounts, .. } = &mut mounts {
            mounts.push(m);
        }
    }
    Ok(mounts)
}

/// The command that mounts the dataset on a directory with a cache
/// directory of its own: [`rclone`] or [`s3fs`].
type MountCommand = fn(&Plan, &Path, &S3Endpoint, &Path, &Path) -> Result<Command>;

/// One mount a node of rclone or s3fs (`command`), each with a cache
/// directory of its own.
fn mount_baseline(
    args: &MountBenchArgs,
    plan: &Plan,
    command: MountCommand,
    dir: &Path,
    endpoint: &S3Endpoint,
) -> Result<Vec<FuseProcess>> {
    // Mounting waits for the process: off the runtime's workers.
    tokio::task::block_in_place(|| {
        (0..args.mounts as usize)
            .map(|i| {
                let at = dir.join(format!("mnt{i}"));
                let cache = dir.join(format!("cache{i}"));
                std::fs::create_dir_all(&at)?;
                std::fs::create_dir_all(&cache)?;
                let cmd = command(plan, dir, endpoint, &at, &cache)?;
                FuseProcess::start(cmd, &at, &dir.join(format!("mount{i}.log")))
            })
            .collect()
    })
}

/// `rclone mount` of the dataset on `at` with a full VFS cache of
/// `plan.budget` in `cache`, its remote in a config file beside.
fn rclone(
    plan: &Plan,
    dir: &Path,
    endpoint: &S3Endpoint,
    at: &Path,
    cache: &Path,
) -> Result<Command> {
    let config = dir.join("rclone.conf");
    std::fs::write(
        &config,
        format!(
            "[origin]\ntype = s3\nprovider = Minio\nenv_auth = false\n\
             access_key_id = {}\nsecret_access_key = {}\nendpoint = {}\n",
            endpoint.user, endpoint.password, endpoint.url
        ),
    )?;
    let mut cmd = Command::new(plan.rclone.as_ref().context("rclone was not looked for")?);
    cmd.arg("mount")
        .arg(format!("origin:{}/{PREFIX}", endpoint.bucket))
        .arg(at)
        .arg("--config")
        .arg(&config)
        .arg("--cache-dir")
        .arg(cache)
        .args(["--vfs-cache-mode", "full"])
        .args(["--vfs-cache-max-size", &plan.budget.to_string()]);
    Ok(cmd)
}

/// `s3fs` of the dataset on `at`, in the foreground, caching whole files
/// in `cache` (it has no size limit for them).
fn s3fs(
    plan: &Plan,
    dir: &Path,
    endpoint: &S3Endpoint,
    at: &Path,
    cache: &Path,
) -> Result<Command> {
    use std::os::unix::fs::PermissionsExt;
    let passwd = dir.join("s3fs.passwd");
    std::fs::write(
        &passwd,
        format!("{}:{}\n", endpoint.user, endpoint.password),
    )?;
    // s3fs refuses a password file others can read.
    std::fs::set_permissions(&passwd, std::fs::Permissions::from_mode(0o600))?;
    let opt = |o: String| ["-o".to_owned(), o];
    let mut cmd = Command::new(plan.s3fs.as_ref().context("s3fs was not looked for")?);
    cmd.arg(format!("{}:/{PREFIX}", endpoint.bucket))
        .arg(at)
        .arg("-f")
        .args(opt(format!("url={}", endpoint.url)))
        .args(opt("use_path_request_style".into()))
        .args(opt(format!("passwd_file={}", passwd.display())))
        .args(opt(format!("use_cache={}", cache.display())));
    Ok(cmd)
}
