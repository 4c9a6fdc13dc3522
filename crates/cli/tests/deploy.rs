//! deploy/: the example configuration passes the daemon's own
//! `--check-config` and holds every key the daemon accepts; the systemd
//! unit passes `systemd-analyze verify` and leaves room above the
//! example's memory budget.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_coopcache");

fn deploy(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy")
        .join(file)
}

fn read(file: &str) -> String {
    std::fs::read_to_string(deploy(file)).unwrap()
}

fn example() -> coopcache_node::config::FileConfig {
    coopcache_node::config::FileConfig::parse(&read("coopcache.toml"))
        .unwrap_or_else(|e| panic!("deploy/coopcache.toml: {e}"))
}

/// The example as the daemon reads it, its origin and data directory (a
/// server's /srv/data and /var/lib/coopcache) swapped for temporary ones
/// by flags, which win over the file; the keys made beforehand as an
/// operator would, so the certificate is loaded and checked too.
#[test]
fn the_example_configuration_passes_check_config() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("keys");
    let name = example().name.expect("the example names its node");
    let out = coopcache_args(&["cluster", "init", "--dir", path(&keys), "--nodes", &name]);
    assert!(out.status.success(), "{}", stderr(&out));
    let config = deploy("coopcache.toml");
    let out = Command::new(BIN)
        .args(["node", "--config", path(&config), "--check-config"])
        .args(["--origin", path(tmp.path()), "--data-dir", path(&keys)])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in ["nchance", "2048.0 MiB", "configuration ok", "is valid"] {
        assert!(text.contains(needle), "`{needle}` missing from:\n{text}");
    }
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every key `FileConfig` accepts appears in the example, set or in a
/// `# key = value` line, and nothing else does: with those lines
/// uncommented, the file's keys are exactly FileConfig's, and the values
/// shown in them have the types the daemon expects.
#[test]
fn the_example_configuration_shows_every_key() {
    let keys = file_config_keys();
    let text: String = read("coopcache.toml")
        .lines()
        .map(|l| match l.strip_prefix("# ") {
            Some(rest) if keys.iter().any(|k| rest.starts_with(&format!("{k} = "))) => rest,
            _ => l,
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let table: toml::Table = text.parse().unwrap();
    let mut shown: Vec<&str> = table.keys().map(String::as_str).collect();
    shown.sort();
    let mut accepted = keys.clone();
    accepted.sort();
    assert_eq!(
        shown, accepted,
        "keys of deploy/coopcache.toml against FileConfig's"
    );
    coopcache_node::config::FileConfig::parse(&text)
        .unwrap_or_else(|e| panic!("deploy/coopcache.toml with every key uncommented: {e}"));
}

/// `systemd-analyze verify` on `unit_text`, written as coopcache.service in
/// a temporary directory; its complaints (it exits 0 on unknown keys, so
/// every line naming the unit counts), or `Ok`.
fn verify(unit_text: &str) -> Result<(), String> {
    let tmp = tempfile::tempdir().unwrap();
    let unit = tmp.path().join("coopcache.service");
    std::fs::write(&unit, unit_text).unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&unit)
        .output()
        .unwrap_or_else(|e| {
            panic!("systemd-analyze: {e}; install Debian's systemd package (.ci/run does)")
        });
    let err = stderr(&out);
    let complaints: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("coopcache.service"))
        .collect();
    match out.status.success() && complaints.is_empty() {
        true => Ok(()),
        false => Err(format!("{}: {err}", out.status)),
    }
}

/// The unit as installed, but starting the binary just built: the
/// installed path (/usr/local/bin) need not exist here, and
/// systemd-analyze checks that ExecStart's program does.
fn unit_with_built_binary() -> String {
    let unit = read("coopcache.service");
    let installed =
        "ExecStart=/usr/local/bin/coopcache node --config /etc/coopcache/coopcache.toml";
    assert_eq!(
        unit.matches(installed).count(),
        1,
        "ExecStart changed:\n{unit}"
    );
    unit.replace(
        installed,
        &format!("ExecStart={BIN} node --config /etc/coopcache/coopcache.toml"),
    )
}

#[test]
fn the_systemd_unit_passes_systemd_analyze_verify() {
    let unit = unit_with_built_binary();
    if let Err(e) = verify(&unit) {
        panic!("systemd-analyze verify deploy/coopcache.service: {e}");
    }
    for option in [
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "NoNewPrivileges=yes",
        "PrivateTmp=yes",
        "StateDirectory=coopcache",
        "Restart=on-failure",
    ] {
        assert!(unit.lines().any(|l| l == option), "{option} missing");
    }
    // The check sees a misspelt option: it is not passing on anything.
    let misspelt = unit.replace("ProtectHome=yes", "ProtectHome=yes\nProtectHoem=yes");
    assert!(verify(&misspelt).is_err(), "a misspelt option passed");
}

/// `MemoryMax=2560M` and the like, in bytes (systemd's K, M, G, T are
/// powers of 1024).
fn systemd_bytes(value: &str) -> u64 {
    let (num, unit) = value.split_at(
        value
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(value.len()),
    );
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => panic!("MemoryMax={value}: expected a number of bytes with K, M, G or T"),
    };
    num.parse::<u64>().unwrap() << shift
}

/// MemoryMax is above what the daemon may keep resident with the
/// example's budget (the larger of 1.1 x it and it + 24 MiB, the target
/// `coopcache bench rss` measures): at MemoryMax the kernel kills it.
#[test]
fn the_units_memory_limit_lies_above_the_examples_budget() {
    let unit = read("coopcache.service");
    let max = unit
        .lines()
        .find_map(|l| l.strip_prefix("MemoryMax="))
        .expect("no MemoryMax in deploy/coopcache.service");
    let memory = example().memory.expect("the example sets memory");
    let budget = coopcache_node::budget::parse_size(&memory).unwrap();
    let resident = (budget + budget / 10).max(budget + (24 << 20));
    let limit = systemd_bytes(max);
    assert!(
        limit > resident,
        "MemoryMax={max} ({limit} bytes) is not above the {resident} bytes a {memory} node may keep resident"
    );
}

/// The unit's own command, run as systemd would run it (this machine's
/// init is not systemd, so `systemctl start` cannot): ExecStart's words
/// with the built binary and a copy of the example configuration, as an
/// unprivileged user (DynamicUser=) owning only its state directory (mode
/// 0700, StateDirectory=), which holds keys an operator made with `cluster
/// init`. The node serves its status, and SIGTERM (systemd's stop) ends it
/// with exit 0 within the unit's TimeoutStopSec.
#[test]
fn the_units_command_runs_a_node_that_stops_cleanly_on_sigterm() {
    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, Instant};
    let unit = read("coopcache.service");
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("no ExecStart");
    let stop: u64 = unit
        .lines()
        .find_map(|l| l.strip_prefix("TimeoutStopSec="))
        .and_then(|v| v.strip_suffix('s'))
        .and_then(|v| v.parse().ok())
        .expect("TimeoutStopSec=Ns");

    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let state = tmp.path().join("state");
    let origin = tmp.path().join("origin");
    std::fs::create_dir(&origin).unwrap();
    std::fs::write(origin.join("hello.txt"), b"hello from the origin\n").unwrap();
    let name = example().name.expect("the example names its node");
    let out = coopcache_args(&["cluster", "init", "--dir", path(&state), "--nodes", &name]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();

    // The example, its machine paths and ports swapped for this test's,
    // and its gateway open to this test without a token.
    let (listen, http) = (free_port(), free_port());
    let config = read("coopcache.toml")
        .replace("\"/srv/data\"", &format!("{:?}", path(&origin)))
        .replace("\"/var/lib/coopcache\"", &format!("{:?}", path(&state)))
        .replace("\"127.0.0.1:7170\"", &format!("\"127.0.0.1:{listen}\""))
        .replace("\"127.0.0.1:7171\"", &format!("\"127.0.0.1:{http}\""))
        .replace(
            "http_allow_anonymous = false",
            "http_allow_anonymous = true",
        );
    let config_path = tmp.path().join("coopcache.toml");
    std::fs::write(&config_path, config).unwrap();
    let words: Vec<String> = exec
        .split_whitespace()
        .map(|w| match w {
            "/usr/local/bin/coopcache" => BIN.to_string(),
            "/etc/coopcache/coopcache.toml" => path(&config_path).to_string(),
            w => w.to_string(),
        })
        .collect();

    // DynamicUser=: an unprivileged uid owning only the state directory.
    let root = is_root();
    let mut cmd = if root {
        let nobody = 65534;
        chown_tree(&state, nobody);
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
        c.args(&words);
        c
    } else {
        let mut c = Command::new(&words[0]);
        c.args(&words[1..]);
        c
    };
    let log = tmp.path().join("node.log");
    let mut child = spawn_logging(&mut cmd, &log);
    let log_text = || std::fs::read_to_string(&log).unwrap_or_default();

    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(code) = child.try_wait().unwrap() {
            panic!("the unit's command exited with {code}:\n{}", log_text());
        }
        let out = coopcache_args(&["status", "--node", &format!("127.0.0.1:{http}"), "--json"]);
        if out.status.success() {
            break stdout(&out);
        }
        assert!(Instant::now() < deadline, "no gateway:\n{}", log_text());
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        status.contains(&format!("\"name\": \"{name}\"")),
        "{status}"
    );
    let out = coopcache_args(&["cat", "hello.txt", "--node", &format!("127.0.0.1:{http}")]);
    assert_eq!(stdout(&out), "hello from the origin\n", "{}", stderr(&out));

    // systemd's stop: SIGTERM, then SIGKILL after TimeoutStopSec.
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(stop);
    let code = loop {
        if let Some(code) = child.try_wait().unwrap() {
            break code;
        }
        assert!(
            Instant::now() < deadline,
            "still running {stop} s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(code.success(), "SIGTERM: {code}:\n{}", log_text());
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Whether this test runs as root (CI does): then the node runs as
/// `nobody`, as DynamicUser= would run it.
fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().unwrap();
    stdout(&out).trim() == "0"
}

/// Gives `dir` and everything in it to `uid`.
fn chown_tree(dir: &Path, uid: u32) {
    let status = Command::new("chown")
        .args(["-R", &format!("{uid}:{uid}"), path(dir)])
        .status()
        .unwrap();
    assert!(status.success(), "chown -R {uid} {}", dir.display());
}
