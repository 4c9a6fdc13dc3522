//! deploy/: the example configuration passes the daemon's own
//! `--check-config` and holds every key the daemon accepts; the systemd
//! unit passes `systemd-analyze verify` and leaves room above the
//! example's memory budget.

mod common;

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
