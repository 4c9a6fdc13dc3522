//! `coopcache bench mount --phases dataset`, small: a MinIO bucket read by
//! three nodes, one epoch each, through coopcache, rclone and s3fs. Every
//! byte is right everywhere, every baseline node reads the whole dataset
//! from the origin, and coopcache's cluster reads it about once. Needs
//! /dev/fuse and root, MinIO (scripts/test-servers.sh) and Debian's
//! rclone and s3fs (scripts/test-deps.sh); a missing one fails the test
//! unless COOPCACHE_ALLOW_SKIP=1.

use crate::common;
use crate::mounts;
use common::json_rows;
use serde_json::Value;
use std::path::PathBuf;

const MIB: u64 = 1 << 20;
const FILES: u64 = 16;
const NODES: u64 = 3;

/// Whether MinIO, rclone and s3fs are here (else the test skips, if
/// allowed to).
fn tools_here() -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let on_path = |exe: &str| std::env::split_paths(&path).any(|d| d.join(exe).is_file());
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let gopath = std::env::var_os("GOPATH").map_or(home.join("go"), PathBuf::from);
    let minio = std::env::var_os("COOPCACHE_MINIO").is_some()
        || on_path("minio")
        || gopath.join("bin/minio").is_file();
    let missing: Vec<&str> = [
        ("minio", minio),
        ("rclone", on_path("rclone")),
        ("s3fs", on_path("s3fs")),
    ]
    .into_iter()
    .filter_map(|(name, here)| (!here).then_some(name))
    .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var_os("COOPCACHE_ALLOW_SKIP").is_some(),
        "{missing:?} missing: scripts/test-deps.sh installs them, or set COOPCACHE_ALLOW_SKIP=1 to skip"
    );
    eprintln!("SKIPPED: {missing:?} missing");
    false
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

#[test]
fn coopcache_reads_the_dataset_from_the_origin_about_once_rclone_and_s3fs_once_a_node() {
    let _serial = mounts::serial();
    if !mounts::can_mount() || !tools_here() {
        return;
    }
    let rows = json_rows(&format!(
        "bench mount --phases dataset --dataset-size {}MiB --dataset-files {FILES} --mounts {NODES} --json",
        FILES
    ));
    let dataset = FILES * MIB;
    let mut totals = Vec::new();
    for system in ["coopcache", "rclone", "s3fs"] {
        let of: Vec<&Value> = rows
            .iter()
            .filter(|r| r["system"] == system && r["target"].is_null())
            .collect();
        assert_eq!(
            of.len() as u64,
            NODES + 1,
            "an epoch a node, and all: {of:?}"
        );
        for r in &of {
            assert_eq!(u(r, "wrong_bytes"), 0, "{r}");
        }
        for epoch in &of[..NODES as usize] {
            assert_eq!(u(epoch, "bytes"), dataset, "{epoch}");
        }
        let all = of[NODES as usize];
        assert!(all["step"].as_str().unwrap().contains("all"), "{all}");
        totals.push((system, u(all, "origin_bytes")));
    }
    let coop = totals[0].1;
    // Each baseline node meets every file for the first time.
    for &(system, total) in &totals[1..] {
        assert!(
            total >= NODES * dataset,
            "{system} read {total} from the origin"
        );
        assert!(coop < total, "coopcache {coop} against {system} {total}");
    }
    // The cluster holds the dataset twice over: read once, a little
    // more only if a peer is slow to answer.
    assert!(
        coop >= dataset && coop < 2 * dataset,
        "coopcache read {coop}"
    );
    let targets: Vec<&Value> = rows.iter().filter(|r| !r["target"].is_null()).collect();
    assert_eq!(
        targets.len(),
        4,
        "two targets against each baseline: {targets:?}"
    );
    assert!(targets.iter().all(|r| r["met"].is_boolean()));
}
