//! `coopcache bench rss`, short: a real node under readers over a working
//! set four times its budget, then a burst of connections, keeps its
//! resident memory within the larger of 1.1 x --memory and --memory +
//! 24 MiB, serves every request right, and gives memory back at rest.
//! The full soak (10 minutes, 2,000 connections) is the benchmark in
//! docs/benchmarks.md.

use crate::common;
use common::coopcache_args;
use serde_json::Value;

#[test]
fn a_node_stays_within_its_memory_budget_in_resident_memory() {
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("rss.png");
    let out = coopcache_args(&[
        "bench",
        "rss",
        "--duration",
        "15s",
        "--burst",
        "500",
        "--rest",
        "3s",
        "--json",
        "--plot",
        plot.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench rss failed: {stderr}");
    let rows: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let phases: Vec<&str> = rows.iter().map(|r| r["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["readers", "burst", "rest"]);
    for r in &rows {
        assert_eq!(r["wrong_bytes"], 0, "{r}");
        assert_eq!(r["failed_requests"], 0, "{r}");
        assert!(r["samples"].as_u64().unwrap() > 0, "{r}");
        let (peak, target) = (
            r["rss_peak_mib"].as_f64().unwrap(),
            r["target_mib"].as_f64().unwrap(),
        );
        assert!(peak > 8.0, "an implausible sample: {r}");
        assert!(peak <= target, "resident memory above the target: {r}");
    }
    assert!(rows[0]["requests"].as_u64().unwrap() > 100, "{}", rows[0]);
    assert_eq!(rows[1]["requests"], 500);
    assert!(plot.exists());
}
