//! `coopcache bench s3` (issue 42): what the S3 endpoint saves a
//! training cluster. A dataset in MinIO is read for several epochs by
//! boto3 readers (`reader.py`, one process each, every object in an order
//! of its own, each checked against its SHA-256), through coopcache's S3
//! endpoint (a loopback cluster over the bucket, one node per reader) and
//! directly from MinIO, and from one MinIO per node (`replicas.rs`: each
//! reader's own full copy, filled from the origin first), side by side in
//! one run; then GETs per second of small objects already cached, at many
//! concurrent clients (Rust's `object_store`, which Python could not keep
//! busy), through the endpoints and from MinIO (not the per-node replicas:
//! each is one more MinIO, as the direct row measures).
//!
//! Origin bytes are MinIO's own count of bytes it sent, read around each
//! epoch and around each replica's fill (the dataset phase of `bench
//! mount` checks that count first). Targets: coopcache's origin bytes at
//! most 0.3x direct reads', and its median epoch after the first no slower
//! than direct reads'. The "space" rows set what one node holds beside it:
//! coopcache's memory against a replica's disk.

mod gets;
mod replicas;

use crate::common::median;
use crate::loopback::{LoopbackSpec, shutdown, start_cluster};
use crate::mount_dataset::{PREFIX, check_metric, file_name, upload};
use crate::s3_servers::{Minio, S3Endpoint, find_minio};
use anyhow::{Context, Result, bail};
use coopcache_console::args::{Seed, parse_duration, parse_size};
use coopcache_node::NodeHandle;
use coopcache_node::join::token::hex;
use coopcache_node::s3::{AccessKeys, S3Options};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The reader every epoch runs, once per reader.
const READER: &str = include_str!("reader.py");

/// The key the endpoints admit (the bench's own cluster, on loopback).
const KEY: &str = "coopcache-bench";
const SECRET: &str = "coopcache-bench-secret";

#[derive(clap::Args)]
pub struct S3BenchArgs {
    /// The dataset's size, split into --files objects of equal size.
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    dataset_size: u64,
    /// Objects in the dataset.
    #[arg(long, default_value_t = 256)]
    files: u32,
    /// Epochs: each reader reads the whole dataset once per epoch.
    #[arg(long, default_value_t = 4)]
    epochs: u32,
    /// boto3 readers, all at once; coopcache runs one node per reader.
    #[arg(long, default_value_t = 4)]
    readers: u32,
    /// Memory of each coopcache node. Default: twice a node's share of
    /// the dataset (the cluster holds it twice over).
    #[arg(long, value_parser = parse_size)]
    memory: Option<u64>,
    /// Small objects for the GETs/s phase (0: no such phase).
    #[arg(long, default_value_t = 1000)]
    small_objects: u32,
    /// Size of each small object.
    #[arg(long, default_value = "4KiB", value_parser = parse_size)]
    small_size: u64,
    /// Concurrent clients of the GETs/s phase.
    #[arg(long, default_value_t = 64)]
    clients: u32,
    /// How long each system is measured in the GETs/s phase.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    gets_for: Duration,
    /// The Python with boto3 the readers run under [default:
    /// target/s3-clients/bin/python (scripts/test-deps.sh makes it), else
    /// python3].
    #[arg(long)]
    python: Option<PathBuf>,
    #[command(flatten)]
    seed: Seed,
    /// JSON lines instead of a table.
    #[arg(long)]
    json: bool,
}

/// One line of the report.
#[derive(serde::Serialize)]
pub(super) struct Row {
    phase: &'static str,
    system: &'static str,
    step: String,
    bytes: u64,
    seconds: f64,
    /// MB/s for an epoch, GETs/s for the GETs phase.
    rate: f64,
    origin_bytes: u64,
    wrong_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    met: Option<bool>,
}

impl Row {
    /// A row that measures nothing itself (a ratio or a size said in its
    /// step): zeros elsewhere.
    pub(super) fn note(phase: &'static str, system: &'static str, step: String) -> Row {
        Row {
            phase,
            system,
            step,
            bytes: 0,
            seconds: 0.0,
            rate: 0.0,
            origin_bytes: 0,
            wrong_bytes: 0,
            target: None,
            met: None,
        }
    }
}

/// A system the dataset is read through.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum System {
    Coopcache,
    Minio,
    /// One MinIO per reader, each a full copy of the dataset.
    MinioPerNode,
}

impl System {
    fn name(self) -> &'static str {
        match self {
            System::Coopcache => "coopcache",
            System::Minio => "minio",
            System::MinioPerNode => replicas::NAME,
        }
    }

    /// The access key and secret a client of `system` signs with.
    fn key(self, minio: &S3Endpoint) -> [&str; 2] {
        match self {
            System::Coopcache => [KEY, SECRET],
            // The replicas have the origin's user and password.
            System::Minio | System::MinioPerNode => [&minio.user, &minio.password],
        }
    }
}

pub(crate) fn run(args: S3BenchArgs) -> Result<()> {
    if args.files == 0 || args.dataset_size < u64::from(args.files) {
        bail!("--files must be at least 1 and --dataset-size at least 1 byte a file");
    }
    if args.epochs == 0 || args.readers == 0 || args.clients == 0 {
        bail!("--epochs, --readers and --clients must be at least 1");
    }
    let python = match &args.python {
        Some(p) => p.clone(),
        None => {
            let venv = Path::new("target/s3-clients/bin/python");
            if venv.exists() {
                venv.into()
            } else {
                "python3".into()
            }
        }
    };
    let probe = std::process::Command::new(&python)
        .args(["-c", "import boto3"])
        .output()
        .with_context(|| format!("running {}", python.display()))?;
    if !probe.status.success() {
        bail!(
            "{} cannot import boto3: run scripts/test-deps.sh (it makes target/s3-clients) or give --python",
            python.display()
        );
    }
    let minio = find_minio()?;
    let a = &args;
    let rows = coopcache_console::tasks::in_tempdir("coopcache-bench-s3-", |dir| async move {
        bench(a, &python, &minio, &dir).await
    })?;
    if args.json {
        coopcache_console::output::print_json(&rows)?;
    } else {
        table(&rows);
    }
    let wrong: u64 = rows.iter().map(|r| r.wrong_bytes).sum();
    if wrong > 0 {
        bail!("{wrong} wrong bytes delivered");
    }
    Ok(())
}

async fn bench(args: &S3BenchArgs, python: &Path, minio: &Path, dir: &Path) -> Result<Vec<Row>> {
    let like = S3Endpoint {
        url: String::new(),
        user: "coopcache".into(),
        password: "coopcache-bench-secret".into(),
        bucket: "coopcache-bench".into(),
    };
    let server = Minio::start(minio, &dir.join("minio"), &like).await?;
    let endpoint = server.endpoint.clone();
    let store = endpoint.store()?;
    let size = args.dataset_size / u64::from(args.files);
    eprintln!(
        "s3: {} objects of {} KiB into {}/{}/{PREFIX} ...",
        args.files,
        size >> 10,
        endpoint.url,
        endpoint.bucket
    );
    let data = upload(&store, args.files, size, args.seed.value).await?;
    check_metric(&endpoint, &store, &data[0]).await?;
    let digests = dir.join("digests.json");
    let map: serde_json::Map<String, serde_json::Value> = data
        .iter()
        .enumerate()
        .map(|(i, d)| (file_name(i), hex(&Sha256::digest(d)).into()))
        .collect();
    std::fs::write(&digests, serde_json::to_vec(&map)?)?;
    drop(data);
    let script = dir.join("reader.py");
    std::fs::write(&script, READER)?;
    let ctx = Ctx {
        args,
        python,
        script: &script,
        digests: &digests,
        minio: &endpoint,
    };

    let mut rows = Vec::new();
    let mut runs = Vec::new();
    let mut space = vec![replicas::space_row(
        "coopcache",
        format!("coopcache: memory per node ({} nodes)", args.readers),
        node_memory(args),
    )];
    for system in [System::Coopcache, System::Minio, System::MinioPerNode] {
        eprintln!("s3: {} ...", system.name());
        let run = match system {
            System::Coopcache => {
                let cluster = Cluster::start(args, dir, &endpoint).await?;
                let run = ctx
                    .epochs(system, &cluster.urls, "coopcache-bench-dataset", "")
                    .await;
                cluster.stop();
                run?
            }
            System::Minio => {
                let urls = vec![endpoint.url.clone(); args.readers as usize];
                let prefix = format!("{PREFIX}/");
                ctx.epochs(system, &urls, &endpoint.bucket, &prefix).await?
            }
            System::MinioPerNode => {
                let nodes = replicas::Replicas::start(
                    minio,
                    &dir.join("replicas"),
                    &endpoint,
                    args.readers,
                )
                .await?;
                let fill = nodes.fill(&endpoint, args.files).await?;
                let prefix = format!("{PREFIX}/");
                let mut run = ctx
                    .epochs(system, &nodes.urls(), &endpoint.bucket, &prefix)
                    .await?;
                run.fill_origin_bytes = fill.iter().map(|r| r.origin_bytes).sum();
                rows.extend(fill);
                space.extend(nodes.footprint()?);
                run
            }
        };
        rows.extend(run.rows(system));
        runs.push(run);
    }
    rows.extend(targets(&runs[0], &runs[1]));
    rows.extend(replicas::versus(&runs[0], &runs[2]));
    rows.extend(space);
    if args.small_objects > 0 {
        rows.extend(gets::phase(args, dir, &endpoint, &store).await?);
    }
    Ok(rows)
}

/// What every epoch needs.
struct Ctx<'a> {
    args: &'a S3BenchArgs,
    python: &'a Path,
    script: &'a Path,
    digests: &'a Path,
    minio: &'a S3Endpoint,
}

/// One system's epochs.
struct Run {
    epochs: Vec<Epoch>,
    /// What the origin sent before the first epoch (the per-node
    /// replicas' fill); counted in the "all" row, not in an epoch's.
    fill_origin_bytes: u64,
}

struct Epoch {
    bytes: u64,
    seconds: f64,
    origin_bytes: u64,
    wrong_bytes: u64,
}

impl Run {
    /// Origin bytes in all, the fill's included.
    fn origin_bytes(&self) -> u64 {
        self.fill_origin_bytes + self.epochs.iter().map(|e| e.origin_bytes).sum::<u64>()
    }

    fn later_median(&self) -> f64 {
        let later: Vec<f64> = self.epochs.iter().skip(1).map(|e| e.seconds).collect();
        if later.is_empty() {
            self.epochs.first().map_or(0.0, |e| e.seconds)
        } else {
            median(&later)
        }
    }

    fn rows(&self, system: System) -> Vec<Row> {
        let mut rows: Vec<Row> = self
            .epochs
            .iter()
            .enumerate()
            .map(|(i, e)| Row {
                phase: "dataset",
                system: system.name(),
                step: format!("{}: epoch {}", system.name(), i + 1),
                bytes: e.bytes,
                seconds: e.seconds,
                rate: e.bytes as f64 / 1e6 / e.seconds.max(f64::MIN_POSITIVE),
                origin_bytes: e.origin_bytes,
                wrong_bytes: e.wrong_bytes,
                target: None,
                met: None,
            })
            .collect();
        let bytes: u64 = self.epochs.iter().map(|e| e.bytes).sum();
        rows.push(Row {
            phase: "dataset",
            system: system.name(),
            step: format!("{}: all; later epochs' median", system.name()),
            bytes,
            seconds: self.later_median(),
            rate: bytes as f64
                / 1e6
                / self.epochs.len() as f64
                / self.later_median().max(f64::MIN_POSITIVE),
            origin_bytes: self.origin_bytes(),
            wrong_bytes: self.epochs.iter().map(|e| e.wrong_bytes).sum(),
            target: None,
            met: None,
        });
        rows
    }
}

fn targets(coop: &Run, direct: &Run) -> Vec<Row> {
    let share = coop.origin_bytes() as f64 / (direct.origin_bytes() as f64).max(1.0);
    let speed = coop.later_median() / direct.later_median().max(f64::MIN_POSITIVE);
    let row = |step: String, target: &str, met| Row {
        target: Some(target.into()),
        met: Some(met),
        ..Row::note("dataset", "coopcache", step)
    };
    vec![
        row(
            format!("origin bytes coopcache / direct: {share:.3}"),
            "<= 0.30",
            share <= 0.30,
        ),
        row(
            format!("later epoch s coopcache / direct: {speed:.3}"),
            "<= 1.00",
            speed <= 1.0,
        ),
    ]
}

/// Memory of each coopcache node: --memory, else twice a node's share of
/// the dataset.
fn node_memory(args: &S3BenchArgs) -> u64 {
    let share = args.dataset_size.div_ceil(u64::from(args.readers));
    args.memory.unwrap_or(2 * share).max(16 << 20)
}

impl Ctx<'_> {
    /// Every epoch of `system`: reader `i` reads through `urls[i]`,
    /// bucket `bucket`, keys under `prefix`.
    async fn epochs(
        &self,
        system: System,
        urls: &[String],
        bucket: &str,
        prefix: &str,
    ) -> Result<Run> {
        let mut epochs = Vec::new();
        for epoch in 0..self.args.epochs {
            let sent = self.minio.sent_bytes().await?;
            let started = Instant::now();
            let mut readers = Vec::new();
            for (i, url) in urls.iter().enumerate() {
                let seed = self.args.seed.value * 1_000_000 + u64::from(epoch) * 1000 + i as u64;
                let child = tokio::process::Command::new(self.python)
                    .arg(self.script)
                    .args([url.as_str(), bucket, prefix])
                    .args(system.key(self.minio))
                    .arg(self.digests)
                    .arg(seed.to_string())
                    .env_remove("AWS_CA_BUNDLE")
                    .kill_on_drop(true)
                    .output();
                readers.push(child);
            }
            let mut bytes = 0;
            let mut wrong = 0;
            for out in futures::future::join_all(readers).await {
                let out = out.context("running a boto3 reader")?;
                if !out.status.success() {
                    bail!(
                        "a boto3 reader of {} failed: {}",
                        system.name(),
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
                let r: serde_json::Value =
                    serde_json::from_slice(&out.stdout).with_context(|| {
                        format!(
                            "a reader printed {:?}",
                            String::from_utf8_lossy(&out.stdout)
                        )
                    })?;
                bytes += r["bytes"].as_u64().unwrap_or(0);
                wrong += r["wrong_bytes"].as_u64().unwrap_or(0);
            }
            let seconds = started.elapsed().as_secs_f64();
            let origin_bytes = self.minio.sent_bytes().await?.saturating_sub(sent);
            eprintln!(
                "s3: {} epoch {}: {:.1} s, {} MiB from MinIO",
                system.name(),
                epoch + 1,
                seconds,
                origin_bytes >> 20
            );
            epochs.push(Epoch {
                bytes,
                seconds,
                origin_bytes,
                wrong_bytes: wrong,
            });
        }
        Ok(Run {
            epochs,
            fill_origin_bytes: 0,
        })
    }
}

/// A loopback cluster over the bucket, one S3 endpoint per node.
pub(super) struct Cluster {
    nodes: Vec<Arc<NodeHandle>>,
    servers: Vec<tokio::task::JoinHandle<()>>,
    pub urls: Vec<String>,
}

impl Cluster {
    pub(super) async fn start(
        args: &S3BenchArgs,
        dir: &Path,
        endpoint: &S3Endpoint,
    ) -> Result<Cluster> {
        let at = dir.join("coopcache");
        std::fs::create_dir_all(&at)?;
        let mut spec = LoopbackSpec::new(&at, args.readers, at.join("unused"))?;
        spec.origin = format!("s3://{}", endpoint.bucket);
        spec.origin_options = endpoint.origin_options();
        // As a node started with its defaults: every read asks the origin
        // for the object's version (close-to-open), none is trusted for
        // an hour as the loopback spec's default would.
        spec.attr_ttl = Duration::ZERO;
        let memory = node_memory(args);
        let nodes = start_cluster(&spec, &vec![memory; args.readers as usize]).await?;
        let keys = AccessKeys::parse(&format!("{KEY} {SECRET}\n"), "the bench's keys")?;
        let opts = S3Options {
            keys: Some(keys),
            ..S3Options::default()
        };
        let (mut servers, mut urls) = (Vec::new(), Vec::new());
        for node in &nodes {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            urls.push(format!("http://{}", listener.local_addr()?));
            let (node, opts) = (node.clone(), opts.clone());
            servers.push(tokio::spawn(async move {
                if let Err(e) = coopcache_node::s3::serve(listener, node, &opts).await {
                    eprintln!("s3: an endpoint stopped: {e}");
                }
            }));
        }
        Ok(Cluster {
            nodes,
            servers,
            urls,
        })
    }

    pub(super) fn stop(self) {
        for s in &self.servers {
            s.abort();
        }
        shutdown(&self.nodes);
    }
}

fn table(rows: &[Row]) {
    println!(
        "{:<8} {:<52} {:>9} {:>8} {:>10} {:>11} {:>6}  target",
        "phase", "step", "MiB", "seconds", "MB/s|GET/s", "origin MiB", "wrong"
    );
    for r in rows {
        let target = match (&r.target, r.met) {
            (Some(t), Some(met)) => format!("{t} {}", if met { "met" } else { "MISSED" }),
            _ => String::new(),
        };
        println!(
            "{:<8} {:<52} {:>9.1} {:>8.2} {:>10.0} {:>11.1} {:>6}  {target}",
            r.phase,
            r.step,
            r.bytes as f64 / 1048576.0,
            r.seconds,
            r.rate,
            r.origin_bytes as f64 / 1048576.0,
            r.wrong_bytes,
        );
    }
}
