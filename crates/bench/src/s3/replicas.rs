//! `bench s3`'s third system, `minio-per-node`: the baseline a user would
//! build instead of a cooperative cache. Every reader node gets a MinIO
//! of its own holding a full copy of the dataset, copied from the origin
//! MinIO before the first epoch, and reader `i` reads only from replica
//! `i`. What that costs the origin is the copy (`readers` x the dataset,
//! charged to the fill rows, one per replica, not to an epoch); what it
//! costs each node is a full copy on its disk (reported beside
//! coopcache's memory per node).

use super::{Row, Run};
use crate::mount_dataset::{PREFIX, file_name};
use crate::rss::vm_rss;
use crate::s3_servers::{Minio, S3Endpoint};
use anyhow::{Context, Result};
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStore;
use object_store::path::Path as Key;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The system's name in the rows.
pub(super) const NAME: &str = "minio-per-node";

/// One MinIO per reader node, each over a data directory of its own;
/// all stopped when dropped.
pub(super) struct Replicas {
    servers: Vec<Minio>,
    dirs: Vec<PathBuf>,
}

impl Replicas {
    /// Starts `n` MinIO servers of `exe` under `dir`, each with the
    /// origin's user, password and bucket (empty).
    pub(super) async fn start(exe: &Path, dir: &Path, origin: &S3Endpoint, n: u32) -> Result<Self> {
        let (mut servers, mut dirs) = (Vec::new(), Vec::new());
        for i in 0..n {
            let at = dir.join(format!("replica-{i}"));
            std::fs::create_dir_all(&at)?;
            servers.push(
                Minio::start(exe, &at, origin)
                    .await
                    .with_context(|| format!("starting replica {i}"))?,
            );
            dirs.push(at.join("data"));
        }
        Ok(Replicas { servers, dirs })
    }

    /// Where reader `i` reads: replica `i`.
    pub(super) fn urls(&self) -> Vec<String> {
        self.servers
            .iter()
            .map(|s| s.endpoint.url.clone())
            .collect()
    }

    /// Copies the dataset's `files` objects from `origin` into each
    /// replica in turn (as each node would fill its own), one row per
    /// replica: bytes copied, time, and what the origin sent meanwhile
    /// (its own count, as for the epochs).
    pub(super) async fn fill(&self, origin: &S3Endpoint, files: u32) -> Result<Vec<Row>> {
        let from = origin.store()?;
        let mut rows = Vec::new();
        for (i, server) in self.servers.iter().enumerate() {
            let to = server.endpoint.store()?;
            let sent = origin.sent_bytes().await?;
            let started = Instant::now();
            let copied: Vec<u64> = futures::stream::iter(0..files as usize)
                .map(|f| {
                    let (from, to) = (&from, &to);
                    async move {
                        let key = Key::from(format!("{PREFIX}/{}", file_name(f)));
                        let bytes = from.get(&key).await?.bytes().await?;
                        let len = bytes.len() as u64;
                        to.put(&key, bytes.into())
                            .await
                            .with_context(|| format!("copying {key} into replica {i}"))?;
                        anyhow::Ok(len)
                    }
                })
                .buffer_unordered(4)
                .try_collect()
                .await?;
            let seconds = started.elapsed().as_secs_f64();
            let origin_bytes = origin.sent_bytes().await?.saturating_sub(sent);
            let bytes: u64 = copied.iter().sum();
            eprintln!(
                "s3: {NAME} fill replica {}: {} MiB in {seconds:.1} s, {} MiB from MinIO",
                i + 1,
                bytes >> 20,
                origin_bytes >> 20
            );
            rows.push(Row {
                phase: "dataset",
                system: NAME,
                step: format!("{NAME}: fill replica {}", i + 1),
                bytes,
                seconds,
                rate: bytes as f64 / 1e6 / seconds.max(f64::MIN_POSITIVE),
                origin_bytes,
                wrong_bytes: 0,
                target: None,
                met: None,
            });
        }
        Ok(rows)
    }

    /// What one node pays for its replica: the largest replica's data
    /// directory on disk (allocated blocks, MinIO's metadata included)
    /// and the largest replica server's resident memory.
    pub(super) fn footprint(&self) -> Result<Vec<Row>> {
        let mut disk = 0;
        for d in &self.dirs {
            disk = disk.max(disk_usage(d)?);
        }
        let mut rss = 0;
        for s in &self.servers {
            if let Some(pid) = s.pid() {
                rss = rss.max(vm_rss(pid)?);
            }
        }
        let n = self.servers.len();
        Ok(vec![
            space_row(NAME, format!("{NAME}: disk per node ({n} nodes)"), disk),
            space_row(NAME, format!("{NAME}: MinIO RSS per node ({n} nodes)"), rss),
        ])
    }
}

/// coopcache against the per-node replicas, no target: the ratios of
/// what the origin sent in all (the fill included) and of the later
/// epochs' medians.
pub(super) fn versus(coop: &Run, replicas: &Run) -> Vec<Row> {
    let share = coop.origin_bytes() as f64 / (replicas.origin_bytes() as f64).max(1.0);
    let speed = coop.later_median() / replicas.later_median().max(f64::MIN_POSITIVE);
    [
        format!("coopcache / per-node, origin bytes: {share:.3}"),
        format!("coopcache / per-node, later epoch s: {speed:.3}"),
    ]
    .into_iter()
    .map(|step| Row::note("dataset", NAME, step))
    .collect()
}

/// A row of the "space" phase: `bytes` is what one node holds.
pub(super) fn space_row(system: &'static str, step: String, bytes: u64) -> Row {
    Row {
        bytes,
        ..Row::note("space", system, step)
    }
}

/// Bytes allocated on disk under `dir`, as `du` counts them.
fn disk_usage(dir: &Path) -> Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += meta.blocks() * 512;
        if meta.is_dir() {
            total += disk_usage(&entry.path())?;
        }
    }
    Ok(total)
}
