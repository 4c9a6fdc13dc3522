//! How `coopcache node` starts: a data directory without a cluster CA is
//! refused unless `--init` (or `init = true`) asks for a new cluster, and
//! `--check-config` checks everything, prints the settings and starts
//! nothing.

use crate::common;

use common::*;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_coopcache");

fn free_addr() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// `coopcache node` over origin `dir` with its keys in `keys`, on free
/// loopback ports, plus `extra`.
fn node_args(dir: &Path, keys: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["node", "--origin", path(dir), "--data-dir", path(keys)]
        .map(String::from)
        .into();
    args.extend(["--listen".into(), free_addr(), "--http".into(), free_addr()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn run(args: &[String]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

/// A node started in the background, killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a node and waits until its gateway (`--http`) accepts.
fn start(args: &[String], log: &Path) -> Running {
    let http: SocketAddr = args[args.iter().position(|a| a == "--http").unwrap() + 1]
        .parse()
        .unwrap();
    let mut child = Running(
        Command::new(BIN)
            .args(args)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(http).is_err() {
        let log_text = || std::fs::read_to_string(log).unwrap_or_default();
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!("the node exited with {status}:\n{}", log_text());
        }
        assert!(
            Instant::now() < deadline,
            "no gateway after 30 s:\n{}",
            log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn a_data_dir_without_a_cluster_ca_is_refused_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("mistyped-keys");
    let out = run(&node_args(tmp.path(), &keys, &[]));
    assert!(
        !out.status.success(),
        "a node started on {}",
        keys.display()
    );
    let err = stderr(&out);
    for needle in [
        path(&keys),
        "no cluster CA",
        "--init",
        "coopcache cluster init",
    ] {
        assert!(err.contains(needle), "`{needle}` missing from: {err}");
    }
    assert!(!keys.exists(), "a refused start wrote {}", keys.display());
}

#[test]
fn init_creates_a_cluster_and_is_harmless_where_one_exists() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("keys");
    // `init = true` in the file creates the CA and the node's certificate.
    let config = tmp.path().join("node.toml");
    std::fs::write(&config, "init = true\nname = \"first\"\n").unwrap();
    let first = start(
        &node_args(tmp.path(), &keys, &["--config", path(&config)]),
        &tmp.path().join("first.log"),
    );
    drop(first);
    let ca = std::fs::read(keys.join("ca.pem")).expect("--init wrote no ca.pem");
    assert!(keys.join("first.pem").exists() && keys.join("first.key").exists());
    // `--init` on a directory with a CA leaves the CA alone; a second
    // node is issued its certificate from it and starts.
    let second = start(
        &node_args(tmp.path(), &keys, &["--init", "--name", "second"]),
        &tmp.path().join("second.log"),
    );
    drop(second);
    assert_eq!(
        std::fs::read(keys.join("ca.pem")).unwrap(),
        ca,
        "--init replaced the CA"
    );
    assert!(keys.join("second.pem").exists());
    // Without --init, the existing cluster is used as before.
    drop(start(
        &node_args(tmp.path(), &keys, &["--name", "first"]),
        &tmp.path().join("again.log"),
    ));
}

#[test]
fn check_config_prints_the_settings_and_starts_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("keys");
    let config = tmp.path().join("node.toml");
    std::fs::write(
        &config,
        "memory = \"64MiB\"\nalgorithm = \"greedy\"\nlog_json = true\nlog_level = \"warn\"\n",
    )
    .unwrap();
    let args = node_args(
        tmp.path(),
        &keys,
        &[
            "--config",
            path(&config),
            "--init",
            "--policy",
            "sieve",
            "--check-config",
        ],
    );
    let out = run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "greedy",
        "sieve",
        "64.0 MiB",
        "answers",
        "--init would create",
        "configuration ok",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from:\n{text}");
    }
    assert!(!keys.exists(), "--check-config wrote keys");
    // Nothing listens: the gateway's port is still free.
    let http = &args[args.iter().position(|a| a == "--http").unwrap() + 1];
    TcpListener::bind(http).expect("--check-config left its gateway port taken");
}

#[test]
fn check_config_refuses_each_bad_value_naming_its_key() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("keys");
    let cases = [
        ("attr_ttl = \"5 parsecs\"", &["attr_ttl", "5 parsecs"][..]),
        ("log_level = \"loud\"", &["log_level", "loud", "trace"]),
        ("memory = \"1MiB\"", &["too small"]),
        (
            "block_size = \"3000\"",
            &["block size 3000", "power of two"],
        ),
        ("policy = \"lirs\"", &["lirs"]),
        ("algorithm = \"best\"", &["best"]),
        (
            "origin = \"ftp://host/x\"",
            &["ftp://host/x", "unknown scheme"],
        ),
        (
            "origin = \"/does/not/exist/coopcache\"",
            &["/does/not/exist/coopcache"],
        ),
        ("log_jsn = true", &["log_jsn"]),
        ("listen = \"nowhere\"", &["listen", "nowhere"]),
        ("name = \"a/b\"", &["a/b"]),
        (
            "consistency = \"strict\"",
            &["consistency", "strict", "shared or exclusive"],
        ),
        ("disk = [\"/tmp\"]", &["--disk /tmp", "needs --disk-size"]),
        ("disk_size = \"1GiB\"", &["needs --disk DIR"]),
        (
            "disk = [\"/tmp\"]\ndisk_size = \"1TiB\"",
            &["--disk-size", "index", "more than half of --memory"],
        ),
    ];
    for (line, needles) in cases {
        let config = tmp.path().join("bad.toml");
        std::fs::write(&config, format!("{line}\n")).unwrap();
        // The origin comes from the file here, so it is not a flag.
        let args: Vec<String> = [
            "node",
            "--config",
            path(&config),
            "--data-dir",
            path(&keys),
            "--init",
            "--check-config",
        ]
        .map(String::from)
        .into();
        let args = match line.starts_with("origin") {
            true => args,
            false => [args, vec!["--origin".into(), path(tmp.path()).into()]].concat(),
        };
        let out = run(&args);
        let err = stderr(&out);
        assert!(!out.status.success(), "{line}: accepted:\n{}", stdout(&out));
        for needle in needles {
            assert!(
                err.contains(needle),
                "{line}: `{needle}` missing from: {err}"
            );
        }
        assert!(!err.contains("panicked"), "{line}: {err}");
    }
}

/// Every flag `coopcache node --help` documents is a key of the TOML file,
/// and every key a flag: the help says the file takes "any of the
/// settings below".
#[test]
fn every_flag_of_node_is_a_config_file_key_and_back() {
    let out = run(&["node".into(), "--help".into()]);
    assert!(out.status.success());
    let help = stdout(&out);
    // Options start a line indented by at most six spaces; descriptions,
    // which may mention flags, are indented further.
    let mut flags: Vec<String> = help
        .lines()
        .filter(|l| {
            let indent = l.len() - l.trim_start().len();
            indent <= 6 && l.trim_start().starts_with('-')
        })
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("--")))
        .map(|f| {
            f.trim_start_matches("--")
                .trim_end_matches(',')
                .replace('-', "_")
        })
        // A join token is a one-time secret: a flag or COOPCACHE_JOIN_TOKEN,
        // never a key of a config file that outlives it.
        .filter(|f| !["help", "version", "config", "check_config", "token"].contains(&f.as_str()))
        .collect();
    flags.sort();
    let mut keys: Vec<String> = file_config_keys().iter().map(|k| k.to_string()).collect();
    keys.sort();
    assert!(flags.contains(&"log_json".to_string()), "{help}");
    assert_eq!(
        flags, keys,
        "flags of `node --help` against FileConfig's keys"
    );
}

#[test]
fn a_budget_beyond_the_machine_is_refused_unless_overcommitted() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("keys");
    let huge = ["--init", "--memory", "1024TiB", "--check-config"];
    let out = run(&node_args(tmp.path(), &keys, &huge));
    assert!(!out.status.success(), "1 PiB accepted: {}", stdout(&out));
    let err = stderr(&out);
    for needle in [
        "--memory 1.0 PiB",
        "more than this machine can give",
        "--memory-overcommit",
    ] {
        assert!(err.contains(needle), "`{needle}` missing from: {err}");
    }
    let over = [
        "--init",
        "--memory",
        "1024TiB",
        "--memory-overcommit",
        "--check-config",
    ];
    let out = run(&node_args(tmp.path(), &keys, &over));
    assert!(out.status.success(), "{}", stderr(&out));
}
