//! A cluster of `coopcache node` processes for tests: nodes started on
//! free loopback ports with keys from `coopcache cluster init`, waited for,
//! killed on drop; and the few HTTP requests the tests make of a gateway.
#![allow(dead_code)] // each test crate uses some of these

use super::common::{coopcache_args, stderr};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::thread;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_coopcache");

/// How long a cluster may take to form or a node to answer.
pub const PATIENCE: Duration = Duration::from_secs(30);

// ---- nodes -------------------------------------------------------------

/// A loopback address with a port free a moment ago. Another process may
/// take it before the node binds it: [`Node::start`] retries then.
pub fn free_addr() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// Runs `coopcache cluster init --dir DIR --nodes NAMES`.
pub fn cluster_init(dir: &Path, names: &[&str]) {
    let out = coopcache_args(&[
        "cluster",
        "init",
        "--dir",
        dir.to_str().unwrap(),
        "--nodes",
        &names.join(","),
    ]);
    assert!(out.status.success(), "cluster init: {}", stderr(&out));
}

/// How to start one node.
pub struct NodeSpec<'a> {
    pub name: &'a str,
    pub keys: &'a Path,
    pub origin: &'a Path,
    pub join: Option<SocketAddr>,
    pub extra: &'a [&'a str],
}

/// A running `coopcache node`, killed (SIGKILL) and reaped on drop.
pub struct Node {
    pub name: String,
    pub child: Child,
    pub http: SocketAddr,
    pub listen: SocketAddr,
    pub log: PathBuf,
}

impl Node {
    /// Starts a node and waits until its gateway answers, retrying with
    /// other ports if one was taken in between.
    pub fn start(spec: &NodeSpec) -> Node {
        for _ in 0..5 {
            let mut node = Node::spawn(spec);
            match node.wait_ready() {
                Ok(()) => return node,
                Err(log) if log.contains("cannot listen") || log.contains("in use") => {
                    eprintln!("{}: port taken, retrying", spec.name);
                }
                Err(log) => panic!("node {} did not start:\n{log}", spec.name),
            }
        }
        panic!("node {}: no free ports after 5 tries", spec.name);
    }

    pub fn spawn(spec: &NodeSpec) -> Node {
        Node::spawn_at(Path::new(BIN), spec, free_addr(), free_addr())
    }

    /// Starts `bin` (this build's or another release's `coopcache`) as a
    /// node listening at `listen` and `http`, without waiting.
    pub fn spawn_at(bin: &Path, spec: &NodeSpec, listen: SocketAddr, http: SocketAddr) -> Node {
        let log = spec.keys.join(format!("{}-{}.log", spec.name, http.port()));
        let mut cmd = Command::new(bin);
        cmd.arg("node")
            .args(["--name", spec.name])
            .args(["--data-dir", spec.keys.to_str().unwrap()])
            .args(["--origin", spec.origin.to_str().unwrap()])
            .args(["--listen", &listen.to_string()])
            .args(["--http", &http.to_string()])
            .args(spec.extra);
        if let Some(seed) = spec.join {
            cmd.args(["--join", &seed.to_string()]);
        }
        let child = super::common::spawn_logging(&mut cmd, &log);
        Node {
            name: spec.name.to_string(),
            child,
            http,
            listen,
            log,
        }
    }

    /// Waits for the gateway; the node's log if it exited first.
    pub fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            if let Ok(Some(code)) = self.child.try_wait() {
                return Err(format!("exited with {code}:\n{}", self.log_text()));
            }
            if get(self.http, "/v1/status", None).is_ok_and(|r| r.code == 200) {
                return Ok(());
            }
            thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "no gateway after {PATIENCE:?}:\n{}",
            self.log_text()
        ))
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn status(&self) -> Value {
        status_at(self.http).unwrap_or_else(|e| panic!("{}: status: {e}", self.name))
    }

    /// SIGTERM, as a service manager stops a node (it leaves the cluster
    /// cleanly), and waits for it to exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.pid().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {pid}");
        self.child.wait().unwrap()
    }

    /// SIGKILL, as `kill -9` sends it.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Nodes named `names` sharing `keys`; all but the first join the first.
pub fn start_cluster(names: &[&str], keys: &Path, origin: &Path, extra: &[&str]) -> Vec<Node> {
    let first = Node::start(&NodeSpec {
        name: names[0],
        keys,
        origin,
        join: None,
        extra,
    });
    let seed = first.listen;
    let mut nodes = vec![first];
    for name in &names[1..] {
        nodes.push(Node::start(&NodeSpec {
            name,
            keys,
            origin,
            join: Some(seed),
            extra,
        }));
    }
    for node in &nodes {
        wait_until(
            &format!("{} sees {} members", node.name, names.len()),
            || members(&node.status()) == names.len(),
        );
    }
    nodes
}

/// Polls `cond` every 20 ms; fails the test after [`PATIENCE`].
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the cluster is at quiescence: every node quiet (no read in
/// flight, nothing expected from a peer) and every protocol message a node
/// sent received by its peer (`sent` and `received` by id in `status`).
pub fn wait_quiescent(nodes: &[Node]) {
    wait_until("the cluster at quiescence", || {
        let all: Vec<Value> = nodes.iter().map(|n| n.status()).collect();
        let id = |s: &Value| s["id"].to_string();
        all.iter().all(|s| s["quiet"] == true)
            && all.iter().all(|from| {
                all.iter().filter(|to| id(to) != id(from)).all(|to| {
                    let sent = &from["sent"][id(to)];
                    let received = &to["received"][id(from)];
                    sent.as_u64().unwrap_or(0) == received.as_u64().unwrap_or(0)
                })
            })
    });
}

// ---- the gateway -------------------------------------------------------

/// An HTTP answer.
pub struct Reply {
    pub code: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// `GET path` with an optional `Range` value, over a fresh connection.
pub fn get(addr: SocketAddr, path: &str, range: Option<&str>) -> std::io::Result<Reply> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let range = range.map_or(String::new(), |r| format!("Range: {r}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{range}\r\n"
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    parse_reply(&raw).ok_or_else(|| std::io::Error::other("malformed HTTP answer"))
}

pub fn parse_reply(raw: &[u8]) -> Option<Reply> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..split]).ok()?;
    let mut lines = head.split("\r\n");
    let code = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut reply = Reply {
        code,
        headers,
        body: raw[split + 4..].to_vec(),
    };
    if reply
        .header("transfer-encoding")
        .is_some_and(|v| v.contains("chunked"))
    {
        reply.body = dechunk(&reply.body)?;
    }
    Some(reply)
}

pub fn dechunk(mut raw: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = raw.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&raw[..eol]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        let data = raw.get(eol + 2..eol + 2 + size)?;
        out.extend_from_slice(data);
        raw = raw.get(eol + 4 + size..)?;
    }
}

/// A whole file through the gateway at `addr`; fails on any non-200.
pub fn fetch(addr: SocketAddr, path: &str) -> Result<Vec<u8>, String> {
    let r = get(addr, &format!("/v1/files/{path}"), None).map_err(|e| e.to_string())?;
    if r.code != 200 {
        return Err(format!("{path}: HTTP {}: {}", r.code, r.text()));
    }
    Ok(r.body)
}

pub fn status_at(addr: SocketAddr) -> Result<Value, String> {
    let r = get(addr, "/v1/status", None).map_err(|e| e.to_string())?;
    if r.code != 200 {
        return Err(format!("HTTP {}: {}", r.code, r.text()));
    }
    serde_json::from_slice(&r.body).map_err(|e| e.to_string())
}

/// Whether a node's `status` says member `name` advertises itself idle.
pub fn hears_idle(status: &Value, name: &str) -> bool {
    status["members"].as_array().is_some_and(|ms| {
        ms.iter()
            .any(|m| m["name"] == name && m["memory"]["idle"] == true)
    })
}

pub fn members(status: &Value) -> usize {
    status["members"].as_array().map_or(0, Vec::len)
}
