//! `coopcache bench latency` and `bench algorithms`, tiny: the figures
//! have their shape, the latency bench's reads really were peer hits, and
//! the live replay accounts for every read and agrees with the simulator
//! where `crates/node/tests/equivalence.rs` shows the live cluster does
//! (Base and Greedy, read by read).

use crate::common;
use common::coopcache_args;
use serde_json::Value;

fn json_lines(out: &std::process::Output) -> Vec<Value> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed: {stderr}");
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn latency_reads_are_peer_hits_at_every_concurrency() {
    let dir = tempfile::tempdir().unwrap();
    let plots = dir.path().join("plots");
    let out = coopcache_args(&[
        "bench",
        "latency",
        "--no-baselines",
        "--concurrency",
        "1,3",
        "--duration",
        "200ms",
        "--warmup",
        "50ms",
        "--blocks",
        "64",
        "--json",
        "--plot",
        plots.to_str().unwrap(),
    ]);
    let report = json_lines(&out);
    assert_eq!(report.len(), 1, "one report object: {report:?}");
    let r = &report[0];
    assert_eq!(r["block_size"], 8192);
    let c = &r["ceiling"];
    assert!(c["rtt_p50_us"].as_f64().unwrap() > 0.0, "{c}");
    assert!(c["stream_gb_s"].as_f64().unwrap() > 0.0, "{c}");
    // The performance guard's baseline: a round trip of the cluster's TLS.
    assert!(
        c["tls_rtt_8k_node_threads_p50_us"].as_f64().unwrap() > 0.0,
        "{c}"
    );
    let rows = r["rows"].as_array().unwrap();
    let concurrency: Vec<u64> = rows
        .iter()
        .map(|row| row["concurrency"].as_u64().unwrap())
        .collect();
    assert_eq!(concurrency, [1, 3]);
    for row in rows {
        assert_eq!(row["system"], "coopcache");
        let ops = row["ops"].as_u64().unwrap();
        assert!(ops > 0, "{row}");
        let levels: Vec<u64> = row["levels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(levels.iter().sum::<u64>(), ops, "every read has a level");
        assert_eq!(levels[2], ops, "every measured read a peer hit: {row}");
        assert_eq!(row["peer_share"], 1.0);
        let (p50, p99) = (
            row["p50_us"].as_f64().unwrap(),
            row["p99_us"].as_f64().unwrap(),
        );
        assert!(0.0 < p50 && p50 <= p99, "{row}");
    }
    assert_eq!(r["integrity_failures"], 0);
    // No memcached run, so no throughput target to compare.
    assert!(r["targets"]["reads_over_memcached"].is_null());
    assert!(r["targets"]["p50_over_rtt"].as_f64().unwrap() > 0.0);
    for png in ["latency-percentiles.png", "latency-throughput.png"] {
        assert!(
            std::fs::metadata(plots.join(png)).unwrap().len() > 1000,
            "{png}"
        );
    }
}

#[test]
fn algorithms_live_replay_matches_the_simulated_protocol_and_the_simulator() {
    let dir = tempfile::tempdir().unwrap();
    let plots = dir.path().join("plots");
    let out = coopcache_args(&[
        "bench",
        "algorithms",
        "--workload-params",
        "requests=600",
        "--cache-blocks",
        "32",
        "--json",
        "--plot",
        plots.to_str().unwrap(),
    ]);
    let rows = json_lines(&out);
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["algorithm"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["base", "greedy", "nchance", "hash", "direct"]);
    let sum = |c: &Value| {
        ["local", "manager_memory", "remote_node", "origin"]
            .iter()
            .map(|k| c[k].as_u64().unwrap())
            .sum::<u64>()
    };
    for r in &rows {
        let reads = r["reads"].as_u64().unwrap();
        assert_eq!(reads, 600, "writes are off by default: {r}");
        assert_eq!(sum(&r["live"]), reads, "{r}");
        assert_eq!(sum(&r["simulated"]), reads, "{r}");
        assert_eq!(sum(&r["protocol"]), reads, "{r}");
        // A live node's manager has no memory, and neither has the simulated one.
        assert_eq!(r["live"]["manager_memory"], 0);
        assert_eq!(r["simulated"]["manager_memory"], 0);
        assert_eq!(r["live_origin_requests"], r["live"]["origin"], "{r}");
        assert_eq!(r["timeouts"], 0);
        assert_eq!(r["integrity_failures"], 0);
        let png = plots.join(format!(
            "algorithms-{}.png",
            r["algorithm"].as_str().unwrap()
        ));
        assert!(
            std::fs::metadata(&png).unwrap().len() > 1000,
            "{}",
            png.display()
        );
    }
    let (base, greedy, hash, direct) = (&rows[0], &rows[1], &rows[3], &rows[4]);
    assert_eq!(base["live"]["remote_node"], 0, "no cooperation: {base}");
    // Read by read: the live cluster and the simulated protocol for all
    // four whose outcome does not hang on races between links, and the
    // paper's simulator for those whose block ids do not matter (a
    // partition owner is a hash of the block id: the paper's simulator
    // has the trace's ids, the live cluster (file, index)).
    for r in [base, greedy, hash, direct] {
        assert_eq!(r["live"], r["protocol"], "{r}");
        assert_eq!(r["same_level_as_protocol"], r["reads"], "{r}");
        assert!(r["first_difference_from_protocol"].is_null());
    }
    for r in [base, greedy, direct] {
        assert_eq!(r["live"], r["simulated"], "{r}");
        assert_eq!(r["same_level"], r["reads"], "{r}");
        assert!(r["first_difference"].is_null());
    }
    // The trace exercises cooperation, not just local hits and misses.
    for r in [greedy, hash] {
        assert!(r["live"]["remote_node"].as_u64().unwrap() > 0, "{r}");
    }
    // Every member reads, so none is idle and lends: Direct parks nothing
    // and is Base, read by read.
    assert_eq!(direct["live"], base["live"], "{direct}");
}
