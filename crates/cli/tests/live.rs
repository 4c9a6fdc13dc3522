//! The daemon as an operator runs it: real `coopcache node` processes on
//! 127.0.0.1, read through `coopcache cat` and the HTTP gateway.
//!
//! Every node is a child process owned by a [`Node`] guard that kills it on
//! drop, so no daemon outlives its test, even one that fails. Origin files
//! are pseudo-random bytes from a seed printed by each test; set
//! `COOPCACHE_LIVE_SEED` to replay one.

use crate::cluster;
use crate::common;
use crate::common::random_bytes;

use cluster::*;
use common::{coopcache_args, seed, stderr, stdout};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_coopcache");

/// The daemon's default block size (64 KiB).
const BLOCK: u64 = 64 << 10;

// ---- origin files ------------------------------------------------------

/// The files of an origin, by path relative to its root.
type Files = BTreeMap<String, Vec<u8>>;

/// Writes `sizes` (path, bytes) of random content under `dir`.
fn write_origin(dir: &Path, seed: u64, sizes: &[(String, usize)]) -> Files {
    let mut files = Files::new();
    for (i, (path, len)) in sizes.iter().enumerate() {
        let data = random_bytes(seed ^ (i as u64 + 1).wrapping_mul(0x100_0000_01b3), *len);
        let full = dir.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(&full, &data).unwrap();
        files.insert(path.clone(), data);
    }
    files
}

fn blocks_of(len: usize) -> u64 {
    (len as u64).div_ceil(BLOCK)
}

fn sha(data: &[u8]) -> Vec<u8> {
    Sha256::digest(data).to_vec()
}

/// Block reads a node's status counts at `level` (local, manager, peer, origin).
fn reads_at(status: &Value, level: &str) -> u64 {
    status["reads"][level].as_u64().unwrap_or(0)
}

/// A counter at the top of a node's status.
fn counter(status: &Value, key: &str) -> u64 {
    status[key]
        .as_u64()
        .unwrap_or_else(|| panic!("status has no counter {key}: {status}"))
}

/// Block reads served by another node: its manager's memory or a peer.
fn from_cluster(status: &Value) -> u64 {
    reads_at(status, "peer") + reads_at(status, "manager")
}

/// `coopcache cat PATH ARGS --node HTTP`.
fn cat(node: &Node, path: &str, args: &[&str]) -> Output {
    let http = node.http.to_string();
    let mut all = vec!["cat", path];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--node", &http]);
    coopcache_args(&all)
}

/// Runs `coopcache ARGS` that should exit by itself, killing it after
/// `limit` so a daemon that starts by mistake cannot hang the test.
fn run_briefly(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "coopcache {} still running after {limit:?}: {}",
                args.join(" "),
                stderr(&out)
            );
        }
        thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

// ---- 1. a cluster reads once from the origin ---------------------------

#[test]
fn three_nodes_serve_origin_bytes_and_read_each_block_once() {
    let started = Instant::now();
    let seed = seed("three_nodes");
    let tmp = tempfile::tempdir().unwrap();
    let (keys, origin) = (tmp.path().join("keys"), tmp.path().join("origin"));
    let sizes: Vec<(String, usize)> = (0..4)
        .map(|i| (format!("data/f{i}.bin"), 1_000_003 + i * 7919))
        .collect();
    let files = write_origin(&origin, seed, &sizes);
    cluster_init(&keys, &["a", "b", "c"]);
    let extra = ["--memory", "256MiB", "--max-pinned", "32MiB"];
    let nodes = start_cluster(&["a", "b", "c"], &keys, &origin, &extra);

    status_json_lists_every_member(&nodes);
    cat_returns_origin_bytes(&nodes, &files);
    each_block_is_read_once_from_the_origin(&nodes, &files);
    one_node_shows_every_members_reads(&nodes);
    warmed_files_are_read_from_the_cluster(&nodes, &files);
    gateway_follows_http(&nodes[0], &files);
    pinned_and_evicted_from_the_cli(&nodes[0], &files);
    eprintln!("three_nodes: {:.1?}", started.elapsed());
}

fn status_json_lists_every_member(nodes: &[Node]) {
    for node in nodes {
        let out = coopcache_args(&["status", "--json", "--node", &node.http.to_string()]);
        assert!(out.status.success(), "status: {}", stderr(&out));
        let s: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(members(&s), 3, "{}: {s}", node.name);
        assert_eq!(s["name"], node.name.as_str());
    }
}

/// A member's reads by level, as `status --json` shows them for member
/// `name` (`None` if not reported yet).
fn reads_of(s: &Value, name: &str) -> Option<Value> {
    let m = s["members"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == name)?;
    Some(m["reads"].clone()).filter(|r| !r.is_null())
}

/// `status --cluster` on one node shows every member's reads as that
/// member counts them itself (carried on its pings), and their sum.
fn one_node_shows_every_members_reads(nodes: &[Node]) {
    let status = |node: &Node| -> Value {
        let out = coopcache_args(&["status", "--json", "--node", &node.http.to_string()]);
        assert!(out.status.success(), "status: {}", stderr(&out));
        serde_json::from_str(&stdout(&out)).unwrap()
    };
    // Each member's own count, then the first node's view of it: equal
    // once a ping has carried it (the reads are over).
    let own: Vec<Value> = nodes
        .iter()
        .map(|n| reads_of(&status(n), &n.name).expect("its own reads"))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = status(&nodes[0]);
        let got: Vec<Option<Value>> = nodes.iter().map(|n| reads_of(&seen, &n.name)).collect();
        if got.iter().zip(&own).all(|(g, o)| g.as_ref() == Some(o)) {
            break;
        }
        assert!(Instant::now() < deadline, "seen {got:?}, own {own:?}");
        thread::sleep(Duration::from_millis(200));
    }
    let total = |r: &Value| -> u64 {
        r["served"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum()
    };
    for (n, r) in nodes.iter().zip(&own) {
        assert!(total(r) > 0, "{} read nothing: {r}", n.name);
        assert_eq!(r["failed"], 0, "{}: {r}", n.name);
    }
    let out = coopcache_args(&["status", "--cluster", "--node", &nodes[0].http.to_string()]);
    assert!(out.status.success(), "status --cluster: {}", stderr(&out));
    let text = stdout(&out);
    let sum: u64 = own.iter().map(total).sum();
    assert!(text.contains(&format!("all: {sum} block reads")), "{text}");
    for (n, r) in nodes.iter().zip(&own) {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{} ", n.name)))
            .unwrap_or_else(|| panic!("no line for {}: {text}", n.name));
        assert!(line.contains(&format!(" {} ", total(r))), "{line}");
    }
}

fn cat_returns_origin_bytes(nodes: &[Node], files: &Files) {
    let (path, data) = files.iter().next().unwrap();
    for node in nodes {
        let out = cat(node, path, &[]);
        assert!(
            out.status.success(),
            "cat via {}: {}",
            node.name,
            stderr(&out)
        );
        assert!(
            out.stdout == *data,
            "cat {path} via {}: wrong bytes",
            node.name
        );
        let out = cat(node, path, &["--offset", "70000", "--length", "200000"]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(out.stdout == data[70000..270000], "range via {}", node.name);
        let tail = (data.len() - 1000).to_string();
        let out = cat(node, path, &["--offset", &tail]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            out.stdout == data[data.len() - 1000..],
            "tail via {}",
            node.name
        );
    }
}

/// Blocks the nodes read from the origin, all together.
fn origin_reads(nodes: &[Node]) -> u64 {
    nodes
        .iter()
        .map(|n| counter(&n.status(), "origin_reads"))
        .sum()
}

/// All three nodes read a file none has read yet, one after the other:
/// the origin sees each of its blocks exactly once.
fn each_block_is_read_once_from_the_origin(nodes: &[Node], files: &Files) {
    let (path, data) = files.iter().nth(1).unwrap();
    let before = origin_reads(nodes);
    for node in nodes {
        let got = fetch(node.http, path).unwrap();
        assert!(got == *data, "{path} via {}: wrong bytes", node.name);
    }
    let read = origin_reads(nodes) - before;
    let per_node: Vec<String> = nodes
        .iter()
        .map(|n| format!("{}: {}", n.name, n.status()["reads"]))
        .collect();
    assert_eq!(
        read,
        blocks_of(data.len()),
        "origin reads for {path} by the cluster; reads by level: {per_node:?}"
    );
}

/// `coopcache warm` through one node reads two files none has read yet,
/// each block once; then the other nodes read them from the cluster.
fn warmed_files_are_read_from_the_cluster(nodes: &[Node], files: &Files) {
    let before = origin_reads(nodes);
    let warmed: Vec<(&String, &Vec<u8>)> = files.iter().skip(2).collect();
    let http = nodes[0].http.to_string();
    let mut args = vec!["warm"];
    args.extend(warmed.iter().map(|(p, _)| p.as_str()));
    args.extend(["--node", &http]);
    let out = coopcache_args(&args);
    assert!(out.status.success(), "warm: {}", stderr(&out));
    for (path, _) in &warmed {
        assert!(
            stdout(&out).contains(&format!("warmed {path}: 1 files")),
            "{}",
            stdout(&out)
        );
    }
    let blocks: u64 = warmed.iter().map(|(_, d)| blocks_of(d.len())).sum();
    assert_eq!(
        origin_reads(nodes) - before,
        blocks,
        "the warm-up's origin reads"
    );
    for node in &nodes[1..] {
        for (path, data) in &warmed {
            let got = fetch(node.http, path).unwrap();
            assert!(got == **data, "{path} via {}: wrong bytes", node.name);
        }
    }
    assert_eq!(
        origin_reads(nodes) - before,
        blocks,
        "a warmed block read again"
    );
    let out = coopcache_args(&["warm", "data/none", "--node", &http]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("404"), "{}", stderr(&out));
}

/// `coopcache pin`, `pin --list`, `status`, `unpin` and `evict` on one
/// node: what each says, and what the node then holds.
fn pinned_and_evicted_from_the_cli(node: &Node, files: &Files) {
    let http = node.http.to_string();
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--node", &http]);
        let out = coopcache_args(&all);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    let (path, data) = files.iter().next().unwrap();
    let out = run(&["pin", path]);
    assert!(out.contains(&format!("pinned {path}: 1 files")), "{out}");
    let out = run(&["pin", "--list"]);
    assert!(
        out.contains(path.as_str()) && out.contains("1 files pinned"),
        "{out}"
    );
    let s: Value = serde_json::from_str(&run(&["status", "--json"])).unwrap();
    assert_eq!(s["pinned_bytes"], data.len() as u64, "{s}");
    assert!(run(&["status"]).contains("pinned: "));
    let out = run(&["evict", "data"]);
    assert!(
        out.contains(&format!("evicted data: {} files", files.len())),
        "{out}"
    );
    let s: Value = serde_json::from_str(&run(&["status", "--json"])).unwrap();
    assert_eq!(
        (&s["pinned_bytes"], &s["cached_bytes"]),
        (&0.into(), &0.into()),
        "{s}"
    );
    run(&["pin", path]);
    let out = run(&["unpin", path]);
    assert!(out.contains(&format!("unpinned {path}: 1 files")), "{out}");
    let out = coopcache_args(&["unpin", path, "--node", &http]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("nothing pinned there"),
        "{}",
        stderr(&out)
    );
}

fn gateway_follows_http(node: &Node, files: &Files) {
    let (path, data) = files.iter().next().unwrap();
    let url = format!("/v1/files/{path}");
    let size = data.len();
    let r = get(node.http, &url, Some("bytes=100-199")).unwrap();
    assert_eq!(r.code, 206, "{}", r.text());
    assert_eq!(
        r.header("content-range"),
        Some(&*format!("bytes 100-199/{size}"))
    );
    assert!(r.body == data[100..200]);

    let r = get(node.http, &url, Some(&format!("bytes={size}-"))).unwrap();
    assert_eq!(r.code, 416, "{}", r.text());
    assert_eq!(r.header("content-range"), Some(&*format!("bytes */{size}")));

    let r = get(node.http, "/v1/files/data/no-such-file.bin", None).unwrap();
    assert_eq!(r.code, 404, "{}", r.text());
    assert!(r.text().contains("no-such-file.bin"), "{}", r.text());

    let r = get(node.http, "/metrics", None).unwrap();
    assert_eq!(r.code, 200);
    let text = r.text();
    for name in [
        "coopcache_reads_total{level=\"origin\"}",
        "coopcache_origin_reads_total",
    ] {
        assert!(text.contains(name), "/metrics lacks {name}:\n{text}");
    }
}

// ---- 2. SIGKILL of a peer during a read storm --------------------------

/// One whole-file read of the storm.
struct StormRead {
    path: String,
    start: Instant,
    end: Instant,
    result: Result<Vec<u8>, String>,
}

/// B caches every file; A reads them all with 8 threads; B is killed with
/// SIGKILL once a quarter of A's blocks came from the cluster. Every read
/// must complete with the origin's bytes, and the test checks that the
/// kill really fell inside the transfer.
#[test]
fn sigkill_of_a_peer_mid_storm_loses_no_read() {
    let started = Instant::now();
    let seed = seed("sigkill");
    let tmp = tempfile::tempdir().unwrap();
    let (keys, origin) = (tmp.path().join("keys"), tmp.path().join("origin"));
    let sizes: Vec<(String, usize)> = (0..48)
        .map(|i| (format!("storm/f{i:02}.bin"), (512 << 10) + i * 4099))
        .collect();
    let files = write_origin(&origin, seed, &sizes);
    let total: u64 = files.values().map(|d| blocks_of(d.len())).sum();
    cluster_init(&keys, &["a", "b", "c"]);
    let extra = ["--memory", "256MiB", "--origin-delay", "2ms"];
    let mut nodes = start_cluster(&["a", "b", "c"], &keys, &origin, &extra);

    for (path, data) in &files {
        assert!(fetch(nodes[1].http, path).unwrap() == *data, "{path} via b");
    }
    // B's records reach the managers asynchronously.
    wait_quiescent(&nodes);
    // C holds nothing: whatever A gets from the cluster comes from B.
    assert_eq!(counter(&nodes[2].status(), "cached_blocks"), 0);
    let a0 = nodes[0].status();

    let (reads, kill) = storm_with_kill(&mut nodes, &files, total / 4);
    let a1 = nodes[0].status();
    eprintln!(
        "sigkill: {total} blocks; at the kill A had {} from the cluster; after: {} reads {:?}, origin reads {}",
        kill.from_b,
        reads.len(),
        a1["reads"],
        counter(&a1, "origin_reads") - counter(&a0, "origin_reads")
    );

    for r in &reads {
        let got = r
            .result
            .as_ref()
            .unwrap_or_else(|e| panic!("{}: {e}", r.path));
        assert_eq!(sha(got), sha(&files[&r.path]), "{}: bytes differ", r.path);
    }
    kill_fell_mid_transfer(&reads, &kill, total, &a0, &a1);
    // The survivors go on: C reads through the loss of B too.
    let (path, data) = files.iter().last().unwrap();
    let out = cat(&nodes[2], path, &[]);
    assert!(
        out.status.success() && out.stdout == *data,
        "{}",
        stderr(&out)
    );
    eprintln!("sigkill: {:.1?}", started.elapsed());
}

/// When B died and what A's status said just before.
struct Kill {
    at: Instant,
    from_b: u64,
}

/// Reads every file through A on 8 threads and SIGKILLs B once A has
/// `threshold` more blocks from the cluster than before.
fn storm_with_kill(nodes: &mut [Node], files: &Files, threshold: u64) -> (Vec<StormRead>, Kill) {
    let a = nodes[0].http;
    let base = from_cluster(&nodes[0].status());
    let paths: Vec<String> = files.keys().cloned().collect();
    let reads = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..8)
        .map(|t| {
            let mine: Vec<String> = paths.iter().skip(t).step_by(8).cloned().collect();
            let reads = reads.clone();
            thread::spawn(move || {
                for path in mine {
                    let start = Instant::now();
                    let result = fetch(a, &path);
                    let end = Instant::now();
                    let r = StormRead {
                        path,
                        start,
                        end,
                        result,
                    };
                    reads.lock().unwrap().push(r);
                }
            })
        })
        .collect();
    let from_b = loop {
        let n = from_cluster(&status_at(a).unwrap()) - base;
        if n >= threshold || reads.lock().unwrap().len() == paths.len() {
            break n;
        }
        thread::sleep(Duration::from_millis(2));
    };
    let at = Instant::now();
    nodes[1].kill9();
    for w in workers {
        w.join().unwrap();
    }
    let reads = std::mem::take(&mut *reads.lock().unwrap());
    (reads, Kill { at, from_b })
}

/// The kill is only a test of recovery if it cut transfers in flight:
/// A was being served by B before it (and had not yet got everything),
/// some reads finished before it, some were running across it, and the
/// blocks B took with it had to come from the origin after.
fn kill_fell_mid_transfer(reads: &[StormRead], kill: &Kill, total: u64, a0: &Value, a1: &Value) {
    assert!(
        kill.from_b > 0 && kill.from_b < total,
        "A had {} of {total} blocks from B at the kill: the kill missed the storm",
        kill.from_b
    );
    let before = reads.iter().filter(|r| r.end < kill.at).count();
    let across = reads
        .iter()
        .filter(|r| r.start < kill.at && r.end > kill.at)
        .count();
    eprintln!(
        "sigkill: {before} reads done before the kill, {across} in flight across it, {} after",
        reads.len() - before - across
    );
    assert!(before > 0, "no read had finished when B was killed");
    assert!(across > 0, "no read was in flight when B was killed");
    let origin = counter(a1, "origin_reads") - counter(a0, "origin_reads");
    assert!(
        origin > 0,
        "A read nothing from the origin after B died: B's blocks were not lost mid-storm"
    );
}

// ---- 3. bad input --------------------------------------------------------

#[test]
fn bad_config_key_names_the_file_and_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.toml");
    std::fs::write(&bad, "memory = \"64MiB\"\nmemroy_limit = \"1GiB\"\n").unwrap();
    let (listen, http) = (free_addr().to_string(), free_addr().to_string());
    let keys = tmp.path().join("keys");
    let args = [
        "node",
        "--config",
        bad.to_str().unwrap(),
        "--data-dir",
        keys.to_str().unwrap(),
        "--origin",
        tmp.path().to_str().unwrap(),
        "--listen",
        &listen,
        "--http",
        &http,
    ];
    let out = run_briefly(&args, PATIENCE);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains(bad.to_str().unwrap()), "file not named: {err}");
    assert!(err.contains("memroy_limit"), "key not named: {err}");
}

#[test]
fn an_algorithm_the_daemon_does_not_run_is_named_with_those_it_does() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("keys");
    let args = [
        "node",
        "--algorithm",
        "wlru",
        "--origin",
        tmp.path().to_str().unwrap(),
        "--data-dir",
        keys.to_str().unwrap(),
    ];
    let out = run_briefly(&args, PATIENCE);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("wlru") && err.contains("simulator only"),
        "{err}"
    );
    for live in ["base", "greedy", "nchance", "hash", "direct"] {
        assert!(err.contains(live), "{live} not offered: {err}");
    }
}

#[test]
fn missing_origin_directory_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("keys");
    let missing = "/does/not/exist/coopcache-origin";
    let (listen, http) = (free_addr().to_string(), free_addr().to_string());
    let args = [
        "node",
        "--origin",
        missing,
        "--data-dir",
        keys.to_str().unwrap(),
        "--listen",
        &listen,
        "--http",
        &http,
    ];
    let out = run_briefly(&args, PATIENCE);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains(missing), "directory not named: {err}");
    assert!(!err.contains("panicked"), "{err}");
    // Checked before any keys are made: nothing is left behind.
    assert!(!keys.exists(), "a CA was created for a node that never ran");
}

/// Paths that leave the origin are refused by name, through the raw
/// gateway (literal and percent-encoded `..`) and through `coopcache cat`.
#[test]
fn paths_outside_the_origin_are_refused() {
    let seed = seed("paths");
    let tmp = tempfile::tempdir().unwrap();
    let (keys, origin) = (tmp.path().join("keys"), tmp.path().join("origin"));
    write_origin(&origin, seed, &[("in.bin".to_string(), 1000)]);
    cluster_init(&keys, &["a"]);
    let nodes = start_cluster(&["a"], &keys, &origin, &["--memory", "64MiB"]);

    for raw in [
        "/v1/files/../etc/passwd",
        "/v1/files/..%2F..%2Fetc%2Fpasswd",
    ] {
        let r = get(nodes[0].http, raw, None).unwrap();
        assert_eq!(r.code, 400, "GET {raw}: {}", r.text());
        assert!(r.text().contains("refused"), "GET {raw}: {}", r.text());
    }

    let out = cat(&nodes[0], "../etc/passwd", &[]);
    assert!(!out.status.success(), "cat ../etc/passwd succeeded");
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(err.contains("../etc/passwd"), "path not named: {err}");
    assert!(
        err.contains("refused") || err.contains("inside the origin"),
        "`cat ../etc/passwd` does not say the path is refused: {err}"
    );
}

/// A node with a certificate from another cluster's CA dials the first
/// cluster: it never becomes a member, and serves its own reads from the
/// origin alone.
#[test]
fn node_of_another_cluster_is_kept_out() {
    let started = Instant::now();
    let seed = seed("intruder");
    let tmp = tempfile::tempdir().unwrap();
    let (keys, origin) = (tmp.path().join("keys"), tmp.path().join("origin"));
    let other = tmp.path().join("other-keys");
    let files = write_origin(&origin, seed, &[("x/f.bin".to_string(), 1_000_003)]);
    cluster_init(&keys, &["a", "b"]);
    cluster_init(&other, &["x"]);
    let nodes = start_cluster(&["a", "b"], &keys, &origin, &["--memory", "64MiB"]);
    let (path, data) = files.iter().next().unwrap();
    assert!(fetch(nodes[0].http, path).unwrap() == *data);
    let errors = |nodes: &[Node]| -> u64 {
        nodes
            .iter()
            .map(|n| counter(&n.status(), "peer_errors"))
            .sum()
    };
    let errors0 = errors(&nodes);

    let intruder = Node::start(&NodeSpec {
        name: "x",
        keys: &other,
        origin: &origin,
        join: Some(nodes[0].listen),
        extra: &["--memory", "64MiB"],
    });
    thread::sleep(Duration::from_secs(3));
    for node in &nodes {
        assert_eq!(members(&node.status()), 2, "{} let x in", node.name);
    }
    assert_eq!(members(&intruder.status()), 1, "x joined a foreign cluster");
    assert!(
        errors(&nodes) >= errors0 + 2,
        "the cluster saw fewer than 2 refused handshakes in 3 s: did x dial at all? {}",
        intruder.log_text()
    );
    // The operator of x hears why, once (not on every retry), and the
    // cluster's operator is not flooded: every refusal is counted, one is
    // said per 10 s.
    let said = |log: &str, what: &str| log.lines().filter(|l| l.contains(what)).count();
    let log = intruder.log_text();
    assert_eq!(said(&log, "cannot reach peer"), 1, "{log}");
    assert!(log.contains("another cluster's CA"), "{log}");
    let seed_log = nodes[0].log_text();
    assert_eq!(
        said(&seed_log, "inbound peer connection failed"),
        1,
        "{seed_log}"
    );

    let out = cat(&intruder, path, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout == *data, "x served wrong bytes");
    let s = intruder.status();
    assert_eq!(from_cluster(&s), 0, "x got blocks from the cluster: {s}");
    assert_eq!(counter(&s, "origin_reads"), blocks_of(data.len()), "{s}");
    eprintln!("intruder: {:.1?}", started.elapsed());
}

/// `/metrics` passes `promtool check metrics` as curl and promtool get it
/// (no `Accept`: the 0.0.4 text format), and a scraper asking for
/// OpenMetrics gets OpenMetrics.
#[test]
fn metrics_pass_promtool_and_follow_accept() {
    let tmp = tempfile::tempdir().unwrap();
    let (keys, origin) = (tmp.path().join("keys"), tmp.path().join("origin"));
    let files = write_origin(&origin, seed("metrics"), &[("f".to_string(), 100_000)]);
    cluster_init(&keys, &["a"]);
    let node = start_cluster(&["a"], &keys, &origin, &["--memory", "64MiB"]).remove(0);
    assert!(fetch(node.http, "f").unwrap() == files["f"]);
    let text = get(node.http, "/metrics", None).unwrap();
    assert_eq!(text.code, 200);
    assert!(
        text.header("content-type")
            .unwrap()
            .contains("version=0.0.4"),
        "{:?}",
        text.headers
    );
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (apt-get install prometheus; .ci/run installs it)");
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(&text.body)
        .unwrap();
    let out = promtool.wait_with_output().unwrap();
    let said = format!("{}{}", stderr(&out), String::from_utf8_lossy(&out.stdout));
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool: {said}\n{}",
        String::from_utf8_lossy(&text.body)
    );
    let body = String::from_utf8(text.body).unwrap();
    assert!(body.contains("# HELP coopcache_reads_total "), "{body}");
    assert!(
        body.contains("coopcache_process_resident_memory_bytes "),
        "{body}"
    );

    let mut s = TcpStream::connect(node.http).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n\r\n")
        .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let open = parse_reply(&raw).unwrap();
    assert!(
        open.header("content-type")
            .unwrap()
            .starts_with("application/openmetrics-text"),
        "{:?}",
        open.headers
    );
    let body = String::from_utf8(open.body).unwrap();
    assert!(body.trim_end().ends_with("# EOF"), "{body}");
    assert!(body.contains("# HELP coopcache_reads "), "{body}");
}

/// SIGTERM stops a node cleanly: it exits 0, and its peers are told, so
/// they drop it at once as a member that left, without the warnings of a
/// failure (a cut link, a dial to a dead address).
#[test]
fn a_node_stopped_by_sigterm_leaves_and_its_peers_are_told() {
    let tmp = tempfile::tempdir().unwrap();
    let (keys, origin) = (tmp.path().join("keys"), tmp.path().join("origin"));
    let files = write_origin(&origin, seed("leave"), &[("f".to_string(), 300_000)]);
    cluster_init(&keys, &["a", "b", "c"]);
    let mut nodes = start_cluster(&["a", "b", "c"], &keys, &origin, &["--memory", "64MiB"]);
    for node in &nodes {
        assert!(fetch(node.http, "f").unwrap() == files["f"]);
    }
    let kill = Command::new("kill")
        .args(["-TERM", &nodes[2].pid().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = nodes[2].child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", nodes[2].log_text());
    for node in &nodes[..2] {
        wait_until(&format!("{} sees c gone", node.name), || {
            members(&node.status()) == 2
        });
    }
    // Long enough for a failure to have been noticed and said.
    thread::sleep(Duration::from_secs(2));
    for node in &nodes[..2] {
        let log = node.log_text();
        assert!(
            log.contains("member left the cluster"),
            "{}: {log}",
            node.name
        );
        // What a failure looks like: a cut link, a dial to a dead address
        // (not any warning: SWIM may suspect a slow node under load).
        let failure = ["link lost", "member down", "cannot reach peer"];
        let warned: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("WARN") && failure.iter().any(|f| l.contains(f)))
            .collect();
        assert!(
            warned.is_empty(),
            "{} warned about a clean stop: {warned:#?}",
            node.name
        );
        assert!(fetch(node.http, "f").unwrap() == files["f"]);
    }
    assert!(nodes[2].log_text().contains("left the cluster"));
    nodes.truncate(2);
}

/// A node whose seed is not there says so, with the cause, at WARN.
#[test]
fn joining_a_dead_seed_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let (keys, origin) = (tmp.path().join("keys"), tmp.path().join("origin"));
    write_origin(&origin, seed("dead-seed"), &[("f".to_string(), 10)]);
    cluster_init(&keys, &["a"]);
    let dead = free_addr();
    let node = Node::start(&NodeSpec {
        name: "a",
        keys: &keys,
        origin: &origin,
        join: Some(dead),
        extra: &["--memory", "64MiB"],
    });
    wait_until("the node says it cannot reach its seed", || {
        node.log_text().contains("cannot reach peer")
    });
    let log = node.log_text();
    let line = log
        .lines()
        .find(|l| l.contains("cannot reach peer"))
        .unwrap();
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains(&dead.to_string()), "{line}");
    assert!(line.contains("connection refused"), "{line}");
}

/// Two processes with `--discover` (one by flag, one by its TOML file)
/// and no `--join` find each other on loopback multicast and serve the
/// origin's bytes as one cluster.
#[test]
fn processes_with_discovery_and_no_seeds_form_a_cluster() {
    let seed = seed("discover");
    let tmp = tempfile::tempdir().unwrap();
    let (keys, origin) = (tmp.path().join("keys"), tmp.path().join("origin"));
    let files = write_origin(&origin, seed, &[("d/f.bin".to_string(), 300_001)]);
    cluster_init(&keys, &["d0", "d1"]);
    // A group port of this process's own, so parallel runs do not meet.
    let group = format!("239.255.70.98:{}", 20000 + std::process::id() % 20000);
    let config = tmp.path().join("d1.toml");
    std::fs::write(
        &config,
        format!("discover = true\ndiscover_group = \"{group}\"\n"),
    )
    .unwrap();
    let by_flag = ["--discover", "--discover-group", group.as_str()];
    let by_file = ["--config", config.to_str().unwrap()];
    let nodes: Vec<Node> = [("d0", &by_flag[..]), ("d1", &by_file[..])]
        .into_iter()
        .map(|(name, extra)| {
            Node::start(&NodeSpec {
                name,
                keys: &keys,
                origin: &origin,
                join: None,
                extra,
            })
        })
        .collect();
    for node in &nodes {
        wait_until(&format!("{} discovers the other", node.name), || {
            members(&node.status()) == 2
        });
    }
    let (path, data) = files.iter().next().unwrap();
    assert!(fetch(nodes[0].http, path).unwrap() == *data);
    assert!(fetch(nodes[1].http, path).unwrap() == *data);
    let s = nodes[1].status();
    assert!(
        from_cluster(&s) > 0,
        "d1 got nothing from d0, which held every block: {s}"
    );
}

// ---- 4. the memory budget ------------------------------------------------

/// Peak resident memory of a process, sampled from /proc every 5 ms.
#[derive(Default, Clone, Copy, Debug)]
struct Peak {
    rss_kib: u64,
    anon_kib: u64,
    file_kib: u64,
    samples: u64,
}

fn proc_kib(status: &str, key: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Samples `pid` until `stop`; the peak of each kind of resident memory.
fn sample_rss(pid: u32, stop: Arc<AtomicBool>) -> thread::JoinHandle<Peak> {
    thread::spawn(move || {
        let mut peak = Peak::default();
        while !stop.load(Ordering::SeqCst) {
            let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
                break;
            };
            peak.rss_kib = peak.rss_kib.max(proc_kib(&s, "VmRSS:"));
            peak.anon_kib = peak.anon_kib.max(proc_kib(&s, "RssAnon:"));
            peak.file_kib = peak.file_kib.max(proc_kib(&s, "RssFile:"));
            peak.samples += 1;
            thread::sleep(Duration::from_millis(5));
        }
        peak
    })
}

/// One node with a 48 MiB budget reads a 96 MiB working set twice: its
/// resident memory never exceeds the budget.
#[test]
fn resident_memory_stays_within_the_budget() {
    let started = Instant::now();
    let seed = seed("budget");
    let budget: u64 = 48 << 20;
    let tmp = tempfile::tempdir().unwrap();
    let (keys, origin) = (tmp.path().join("keys"), tmp.path().join("origin"));
    let sizes: Vec<(String, usize)> = (0..24)
        .map(|i| (format!("big/f{i:02}.bin"), 4 << 20))
        .collect();
    let files = write_origin(&origin, seed, &sizes);
    cluster_init(&keys, &["solo"]);
    let nodes = start_cluster(&["solo"], &keys, &origin, &["--memory", "48MiB"]);
    let node = &nodes[0];

    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sample_rss(node.pid(), stop.clone());
    for pass in 0..2 {
        thread::scope(|s| {
            for t in 0..8 {
                let (files, http) = (&files, node.http);
                s.spawn(move || {
                    for (path, data) in files.iter().skip(t).step_by(8) {
                        let got = fetch(http, path).unwrap();
                        assert!(got == *data, "pass {pass}: {path}: wrong bytes");
                    }
                });
            }
        });
    }
    let status = node.status();
    stop.store(true, Ordering::SeqCst);
    let peak = sampler.join().unwrap();
    eprintln!(
        "budget: {} MiB; peak VmRSS {:.1} MiB (anon {:.1}, file {:.1}) over {} samples; cached {:.1} MiB in {} blocks; {:.1?}",
        budget >> 20,
        peak.rss_kib as f64 / 1024.0,
        peak.anon_kib as f64 / 1024.0,
        peak.file_kib as f64 / 1024.0,
        peak.samples,
        counter(&status, "cached_bytes") as f64 / 1048576.0,
        counter(&status, "cached_blocks"),
        started.elapsed()
    );
    assert!(peak.samples > 10, "too few samples: {peak:?}");
    assert!(
        peak.rss_kib * 1024 <= budget,
        "resident memory {:.1} MiB exceeds the {} MiB budget: {peak:?}",
        peak.rss_kib as f64 / 1024.0,
        budget >> 20
    );
}
