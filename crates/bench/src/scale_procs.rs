//! `coopcache bench scale`'s processes: real `coopcache node` children,
//! each on a loopback address of its own, and what the kernel says of
//! them (`/proc/PID/status`, `/proc/PID/stat`, `/proc/PID/fd`, and the
//! TCP counters `ss` reads from the kernel for every peer link).
//!
//! Each node listens on `127.A.R.K+1` (ports 7170 for peers, 7171 for its
//! gateway), `A` from this process's id (two runs at once do not collide)
//! and `R` the size being measured (a size never binds where the last
//! one's sockets linger): a link is then any TCP connection with a node's
//! peer address at either end, however the dialler's port was drawn.

use anyhow::{Context, Result, bail};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Port of every node's peer listener (each node has its own address).
const PEER_PORT: u16 = 7170;
/// Port of every node's gateway.
const HTTP_PORT: u16 = 7171;
/// Nodes one size can address (the last octet, 1..=250).
pub(crate) const MAX_NODES: usize = 250;

/// The loopback address of node `k` of size number `run`.
pub(crate) fn node_ip(run: usize, k: usize) -> Ipv4Addr {
    let a = 100 + (std::process::id() % 100) as u8;
    Ipv4Addr::new(127, a, (run % 250) as u8, (k % MAX_NODES) as u8 + 1)
}

/// A `coopcache node` child process, killed when dropped.
pub(crate) struct NodeProc {
    child: tokio::process::Child,
    pub pid: u32,
    pub http: SocketAddr,
    pub peer: SocketAddr,
}

/// What a node is started with.
pub(crate) struct NodeSpec<'a> {
    /// The key directory [`issue_keys`] wrote, shared by every node.
    pub keys: &'a Path,
    pub origin: &'a Path,
    pub memory: u64,
    pub run: usize,
    pub k: usize,
    pub seed: Option<SocketAddr>,
}

/// The name of node `k` (its certificate's).
fn name(k: usize) -> String {
    format!("scale{k}")
}

/// Issues the cluster's CA and `n` node certificates into `keys` at once
/// (`coopcache cluster init`), so that the nodes can start together: a
/// node issuing its own from a shared directory (`--init`) must wait for
/// the one before it.
pub(crate) async fn issue_keys(keys: &Path, n: usize) -> Result<()> {
    let exe = std::env::current_exe().context("finding the coopcache binary")?;
    let names: Vec<String> = (0..n).map(name).collect();
    let out = tokio::process::Command::new(exe)
        .args(["cluster", "init", "--dir"])
        .arg(keys)
        .arg("--nodes")
        .arg(names.join(","))
        .stdin(Stdio::null())
        .output()
        .await
        .context("running coopcache cluster init")?;
    if !out.status.success() {
        bail!(
            "coopcache cluster init --dir {} failed: {}",
            keys.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

impl NodeProc {
    /// Starts node `k`; [`NodeProc::serving`] waits for its gateway.
    pub(crate) fn spawn(spec: NodeSpec<'_>) -> Result<NodeProc> {
        let ip = node_ip(spec.run, spec.k);
        let peer = SocketAddr::V4(SocketAddrV4::new(ip, PEER_PORT));
        let http = SocketAddr::V4(SocketAddrV4::new(ip, HTTP_PORT));
        let exe = std::env::current_exe().context("finding the coopcache binary")?;
        let mut command = tokio::process::Command::new(exe);
        command
            .arg("node")
            .arg("--name")
            .arg(name(spec.k))
            .arg("--listen")
            .arg(peer.to_string())
            .arg("--http")
            .arg(http.to_string())
            .arg("--memory")
            .arg(spec.memory.to_string())
            .arg("--origin")
            .arg(spec.origin)
            .arg("--data-dir")
            .arg(spec.keys)
            .arg("--log-level")
            .arg("error");
        if let Some(seed) = spec.seed {
            command.arg("--join").arg(seed.to_string());
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting coopcache node {}", name(spec.k)))?;
        let pid = child
            .id()
            .with_context(|| format!("coopcache node {} exited at once", name(spec.k)))?;
        Ok(NodeProc {
            child,
            pid,
            http,
            peer,
        })
    }

    /// Waits until the node's gateway accepts connections (60 s at most);
    /// if it exits first, says why from its log.
    pub(crate) async fn serving(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while tokio::net::TcpStream::connect(self.http).await.is_err() {
            if let Some(status) = self.child.try_wait()? {
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    use tokio::io::AsyncReadExt;
                    let _ = e.read_to_string(&mut err).await;
                }
                bail!(
                    "the node on {} exited with {status} before serving: {}",
                    self.peer,
                    err.trim()
                );
            }
            if Instant::now() > deadline {
                bail!(
                    "the node on {} did not open its gateway {} within 60 s",
                    self.peer,
                    self.http
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Nothing reads its log from here on: a full pipe must not stall it
        // (it logs errors only).
        if let Some(mut e) = self.child.stderr.take() {
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut e, &mut tokio::io::sink()).await;
            });
        }
        Ok(())
    }

    /// Kills the node and waits for it to exit.
    pub(crate) async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// A process's resident set in bytes.
pub(crate) fn rss(pid: u32) -> Result<u64> {
    super::rss::vm_rss(pid)
}

/// A process's socket descriptors (its peer links both ways, its two
/// listeners, and any gateway client connected at the time).
pub(crate) fn sockets(pid: u32) -> Result<usize> {
    let dir = format!("/proc/{pid}/fd");
    let mut n = 0;
    for fd in std::fs::read_dir(&dir).with_context(|| format!("reading {dir}"))? {
        // A descriptor closed while listed has no link left to read.
        let Ok(target) = std::fs::read_link(fd?.path()) else {
            continue;
        };
        if target.to_string_lossy().starts_with("socket:") {
            n += 1;
        }
    }
    Ok(n)
}

/// CPU time a process has used so far (user and system), in seconds.
pub(crate) fn cpu_seconds(pid: u32) -> Result<f64> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    // The command name (field 2) is in parentheses and may hold spaces:
    // fields are counted after its closing one (state is field 3).
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .with_context(|| format!("no command name in {path}"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| -> Result<u64> {
        fields
            .get(i - 3)
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("no field {i} in {path}"))
    };
    let ticks = field(14)? + field(15)?;
    Ok(ticks as f64 / rustix::param::clock_ticks_per_second() as f64)
}

/// TCP counters summed over every peer link of one size's nodes: what
/// the kernel counted, TLS records and all.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LinkTraffic {
    /// Payload bytes sent (`bytes_sent`), both ends of every link.
    pub bytes: u64,
    /// Segments that carried data (`data_segs_out`): one per batch of
    /// frames written at once, or more for a batch beyond the MSS.
    pub segments: u64,
    /// Established link sockets (two per connection on loopback).
    pub sockets: u64,
}

impl LinkTraffic {
    /// What was sent between `earlier` and these counters.
    pub(crate) fn since(&self, earlier: &LinkTraffic) -> LinkTraffic {
        LinkTraffic {
            bytes: self.bytes.saturating_sub(earlier.bytes),
            segments: self.segments.saturating_sub(earlier.segments),
            sockets: self.sockets,
        }
    }
}

/// Reads the counters of every established TCP socket with an end on a
/// peer address of size `run` (`ss -tin`, the kernel's `tcp_info`).
pub(crate) async fn link_traffic(run: usize) -> Result<LinkTraffic> {
    let out = tokio::process::Command::new("ss")
        .args(["-tinH", "state", "established"])
        .arg(format!("( sport = :{PEER_PORT} or dport = :{PEER_PORT} )"))
        .stdin(Stdio::null())
        .output()
        .await
        .context("running `ss` (iproute2) to read the links' TCP counters")?;
    if !out.status.success() {
        bail!(
            "`ss -tin` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(parse_ss(&String::from_utf8_lossy(&out.stdout), run))
}

/// Sums `ss -tinH` output: an address line (`recv-q send-q local peer`)
/// then an indented line of counters, per socket; only sockets with an
/// end on one of size `run`'s peer addresses count.
fn parse_ss(text: &str, run: usize) -> LinkTraffic {
    let ours = |addr: &str| {
        addr.parse::<SocketAddr>().is_ok_and(|a| match a {
            SocketAddr::V4(a) => {
                let ip = a.ip().octets();
                let want = node_ip(run, 0).octets();
                a.port() == PEER_PORT && ip[..3] == want[..3]
            }
            SocketAddr::V6(_) => false,
        })
    };
    let mut t = LinkTraffic::default();
    let mut counting = false;
    for line in text.lines() {
        if !line.starts_with([' ', '\t']) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            counting = cols.len() >= 4 && (ours(cols[2]) || ours(cols[3]));
            if counting {
                t.sockets += 1;
            }
            continue;
        }
        if !counting {
            continue;
        }
        for word in line.split_whitespace() {
            let value = |key: &str| word.strip_prefix(key).and_then(|v| v.parse::<u64>().ok());
            if let Some(v) = value("bytes_sent:") {
                t.bytes += v;
            } else if let Some(v) = value("data_segs_out:") {
                t.segments += v;
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ss_output_counts_only_this_runs_links() {
        let a = node_ip(3, 0);
        let b = node_ip(3, 1);
        let other = node_ip(4, 0);
        let text = format!(
            "0 0 {a}:7170 127.0.0.1:40000\n\t bbr bytes_sent:100 bytes_acked:100 data_segs_out:2 x\n\
             0 0 127.0.0.1:40000 {b}:7170\n\t bbr bytes_sent:50 data_segs_out:1\n\
             0 0 {other}:7170 127.0.0.1:40001\n\t bytes_sent:999 data_segs_out:9\n\
             0 0 {a}:7171 127.0.0.1:40002\n\t bytes_sent:999 data_segs_out:9\n"
        );
        let t = parse_ss(&text, 3);
        assert_eq!((t.bytes, t.segments, t.sockets), (150, 3, 2));
    }

    #[test]
    fn this_process_reads_its_own_proc_figures() {
        let me = std::process::id();
        assert!(rss(me).unwrap() > 0);
        assert!(cpu_seconds(me).unwrap() >= 0.0);
        let _listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        assert!(sockets(me).unwrap() >= 1);
    }
}
