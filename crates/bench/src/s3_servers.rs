//! What `bench mount`'s dataset phase runs beside the cluster: MinIO as
//! the one S3 origin every system reads, and the FUSE file systems
//! coopcache is compared with (`rclone mount`, `s3fs`), each a child
//! process. Dropping one stops it (a mount is unmounted first), so
//! nothing is left behind on error or Ctrl-C either.

use anyhow::{Context, Result, bail};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `exe` on the PATH, or an error naming the Debian package to install.
pub(crate) fn find_tool(exe: &str, package: &str) -> Result<PathBuf> {
    on_path(exe).with_context(|| {
        format!(
            "{exe} not found on the PATH: install Debian's package `{package}` \
             (apt-get install {package}), or leave {exe} out of --systems"
        )
    })
}

pub(crate) fn on_path(exe: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(exe))
        .find(|p| p.is_file())
}

/// The MinIO binary: `$COOPCACHE_MINIO`, the PATH, then `$GOPATH/bin`
/// (default `~/go/bin`), where `scripts/test-servers.sh install` puts it.
pub(crate) fn find_minio() -> Result<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let gopath = std::env::var_os("GOPATH")
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join("go")));
    std::env::var_os("COOPCACHE_MINIO")
        .map(PathBuf::from)
        .into_iter()
        .chain(on_path("minio"))
        .chain(gopath.map(|g| g.join("bin").join("minio")))
        .find(|p| p.is_file())
        .context(
            "minio not found (COOPCACHE_MINIO, the PATH, ~/go/bin): run \
             `scripts/test-servers.sh install`, or give a running one with --minio URL",
        )
}

/// An S3 endpoint (MinIO) and the bucket the dataset goes in.
#[derive(Clone, Debug)]
pub(crate) struct S3Endpoint {
    /// `http://HOST:PORT`.
    pub url: String,
    /// Access key (MinIO's root user).
    pub user: String,
    /// Secret key.
    pub password: String,
    /// The bucket; it must exist.
    pub bucket: String,
}

impl S3Endpoint {
    /// The options of an `s3://` origin on this endpoint.
    pub(crate) fn origin_options(&self) -> Vec<(String, String)> {
        [
            ("endpoint", self.url.as_str()),
            ("access_key_id", &self.user),
            ("secret_access_key", &self.password),
            ("region", "us-east-1"),
            ("allow_http", "true"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    /// A client of the bucket, to upload the dataset.
    pub(crate) fn store(&self) -> Result<AmazonS3> {
        let mut builder = AmazonS3Builder::new().with_bucket_name(&self.bucket);
        for (key, value) in self.origin_options() {
            builder = builder.with_config(key.parse()?, value);
        }
        Ok(builder.build()?)
    }

    /// Bytes MinIO has sent in answers to S3 requests since it started
    /// (`minio_api_requests_traffic_sent_bytes{type="s3"}`, summed over
    /// servers). The v3 metrics are read because they are current; the
    /// v2 cluster metrics are cached for about 10 s. A MinIO that has
    /// answered no S3 request yet has no such sample: 0 (a MinIO without
    /// the metric at all fails the dataset phase's check of it).
    pub(crate) async fn sent_bytes(&self) -> Result<u64> {
        let url = format!("{}/minio/metrics/v3/api/requests", self.url);
        let reply = reqwest::get(&url)
            .await
            .with_context(|| format!("reading MinIO's metrics at {url}"))?;
        if !reply.status().is_success() {
            bail!(
                "MinIO's metrics at {url} answered {}: start it with \
                 MINIO_PROMETHEUS_AUTH_TYPE=public",
                reply.status()
            );
        }
        Ok(parse_sent_bytes(&reply.text().await?).unwrap_or(0))
    }
}

/// The sum of the S3 `minio_api_requests_traffic_sent_bytes` samples of
/// a Prometheus text page (MinIO writes large counters as `1.5e+07`).
fn parse_sent_bytes(text: &str) -> Option<u64> {
    let samples: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with("minio_api_requests_traffic_sent_bytes{"))
        .filter(|l| l.contains("type=\"s3\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    (!samples.is_empty()).then(|| samples.iter().sum::<f64>() as u64)
}

/// A MinIO server on a free loopback port over a temporary data
/// directory, its metrics public; killed when dropped.
pub(crate) struct Minio {
    /// Where it answers.
    pub endpoint: S3Endpoint,
    child: tokio::process::Child,
}

impl Minio {
    /// Starts `exe` over `dir/data` on a free port, with `like`'s user,
    /// password and bucket (empty), and waits until it is ready.
    pub(crate) async fn start(exe: &Path, dir: &Path, like: &S3Endpoint) -> Result<Minio> {
        let data = dir.join("data");
        // A top-level directory of an empty data directory is a bucket.
        std::fs::create_dir_all(data.join(&like.bucket))?;
        let (port, console) = (free_port()?, free_port()?);
        let endpoint = S3Endpoint {
            url: format!("http://127.0.0.1:{port}"),
            ..like.clone()
        };
        let log = std::fs::File::create(dir.join("minio.log"))?;
        let mut cmd = tokio::process::Command::new(exe);
        cmd.args([
            "server",
            "--quiet",
            "--address",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["--console-address", &format!("127.0.0.1:{console}")])
        .arg(&data)
        .env("MINIO_ROOT_USER", &endpoint.user)
        .env("MINIO_ROOT_PASSWORD", &endpoint.password)
        .env("MINIO_PROMETHEUS_AUTH_TYPE", "public")
        .env("MINIO_BROWSER", "off")
        .env("MINIO_UPDATE", "off")
        .env("MINIO_CI_CD", "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", exe.display()))?;
        let ready = format!("{}/minio/health/ready", endpoint.url);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if reqwest::get(&ready)
                .await
                .is_ok_and(|r| r.status().is_success())
            {
                break;
            }
            if let Some(status) = child.try_wait()? {
                bail!(
                    "minio exited with {status}: {}",
                    log_tail(&dir.join("minio.log"))
                );
            }
            if Instant::now() > deadline {
                bail!("minio not ready within 30 s on {}", endpoint.url);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(Minio { endpoint, child })
    }
}

impl Minio {
    /// Its process id (`None` once it has exited).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The last lines of a log, for an error message.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}

/// A FUSE file system served by a child process (rclone, s3fs), mounted
/// on `dir` until dropped: then unmounted (`fusermount3 -u`, lazily with
/// `umount -l` if that fails) and the process waited for, killed if it
/// lingers.
pub(crate) struct FuseProcess {
    dir: PathBuf,
    child: Child,
}

impl FuseProcess {
    /// Runs `cmd` (which mounts on `dir` and stays in the foreground),
    /// its output in `log`, and waits until `dir` is a mount point. The
    /// child does not see the `AWS_*` environment: everything it needs is
    /// in `cmd` (and a CA bundle in the environment breaks rclone's plain
    /// HTTP client).
    pub(crate) fn start(mut cmd: Command, dir: &Path, log: &Path) -> Result<FuseProcess> {
        let name = cmd.get_program().to_string_lossy().into_owned();
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("AWS_") {
                cmd.env_remove(key);
            }
        }
        let out = std::fs::File::create(log)?;
        cmd.stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        let child = cmd.spawn().with_context(|| format!("starting {name}"))?;
        let mut fuse = FuseProcess {
            dir: dir.to_path_buf(),
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !is_mount_point(dir)? {
            if let Some(status) = fuse.child.try_wait()? {
                bail!(
                    "{name} exited with {status} before mounting: {}",
                    log_tail(log)
                );
            }
            if Instant::now() > deadline {
                bail!(
                    "{name} did not mount {} within 20 s: {}",
                    dir.display(),
                    log_tail(log)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(fuse)
    }

    /// The mounted directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The serving process's id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for FuseProcess {
    fn drop(&mut self) {
        unmount(&self.dir);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Unmounts `dir`: `fusermount3 -u`, else a lazy `umount -l`.
fn unmount(dir: &Path) {
    let quiet = |exe: &str, flag: &str| {
        Command::new(exe)
            .arg(flag)
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !quiet("fusermount3", "-u") && is_mount_point(dir).unwrap_or(true) {
        quiet("umount", "-l");
    }
}

/// Whether `dir` is a mount point of this process's namespace.
fn is_mount_point(dir: &Path) -> Result<bool> {
    let dir = dir.to_str().context("mount point is not UTF-8")?;
    let table = std::fs::read_to_string("/proc/self/mountinfo")?;
    // The fifth field; spaces and backslashes are octal-escaped.
    let escaped = dir.replace('\\', "\\134").replace(' ', "\\040");
    Ok(table
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(escaped.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sent_bytes_sum_s3_samples_in_exponent_form() {
        let page = "# HELP minio_api_requests_traffic_sent_bytes ...\n\
            minio_api_requests_traffic_sent_bytes{server=\"a\",type=\"s3\"} 1.5001858e+07\n\
            minio_api_requests_traffic_sent_bytes{server=\"b\",type=\"s3\"} 42\n\
            minio_api_requests_traffic_sent_bytes{server=\"a\",type=\"admin\"} 7\n\
            minio_api_requests_traffic_received_bytes{server=\"a\",type=\"s3\"} 9\n";
        assert_eq!(parse_sent_bytes(page), Some(15_001_858 + 42));
        assert_eq!(parse_sent_bytes("# nothing\n"), None);
    }
}
