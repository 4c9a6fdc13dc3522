//! `coopcache bench mount --phases files`, small: tar, rsync and the
//! sequential writers into the origin directory, `shared` and `exclusive`
//! mounts, rclone and bindfs (the plain FUSE passthrough every row is
//! read against), every run's bytes checked by the phase (a wrong byte
//! fails it). Needs /dev/fuse and root, tar, rsync, rclone and bindfs
//! (scripts/test-deps.sh); a missing one fails the test unless
//! COOPCACHE_ALLOW_SKIP=1.

use crate::common::json_rows;
use crate::mounts::{Work, have};
use serde_json::Value;

const FILES: u64 = 200;
const WRITE: u64 = 4 << 20;

#[test]
fn bench_mount_files_writes_right_bytes_on_every_system() {
    let Some(_work) = Work::new(&[]) else {
        return;
    };
    if !["tar", "rsync", "rclone", "bindfs"].into_iter().all(have) {
        return;
    }
    let rows = json_rows(&format!(
        "bench mount --phases files --files-count {FILES} --files-write-size {WRITE} --files-passes 1 --json"
    ));
    let systems = [
        "directory",
        "coopcache shared",
        "coopcache exclusive",
        "rclone",
        "bindfs",
        "bindfs no cache",
    ];
    let steps = ["tar xf", "rsync -a", "dd bs=1M", "cp", "cat >"];
    assert_eq!(rows.len(), systems.len() * steps.len(), "{rows:#?}");
    let num = |r: &Value, k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k}: {r}"));
    let tree = rows[0]["bytes"].as_u64().unwrap();
    assert!(
        (FILES * 100..=FILES * 8192).contains(&tree),
        "200 files of 100 B - 8 KiB: {tree}"
    );
    for system in systems {
        for step in steps {
            let r = rows
                .iter()
                .find(|r| r["system"] == system && r["step"] == step)
                .unwrap_or_else(|| panic!("no {system} {step}: {rows:#?}"));
            assert!(num(r, "seconds") > 0.0, "{r}");
            assert_eq!(r["passes"].as_array().unwrap().len(), 1, "{r}");
            let (files, bytes) = match step {
                "tar xf" | "rsync -a" => (FILES, tree),
                _ => (1, WRITE),
            };
            assert_eq!(r["files"], files, "{r}");
            assert_eq!(r["bytes"], bytes, "{r}");
            assert_eq!(r["verified_bytes"], bytes, "read back right: {r}");
            let vs_bindfs = num(r, "vs_bindfs");
            if system == "bindfs no cache" {
                assert_eq!(vs_bindfs, 1.0, "{r}");
            }
            let judged = system.starts_with("coopcache");
            assert_eq!(r["met"].is_boolean(), judged, "{r}");
        }
    }
}
