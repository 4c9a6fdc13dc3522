//! `coopcache bench netcache|staggered|zipf-web|classes|...` with tiny parameters: the
//! JSON has the promised shape, no read returns wrong bytes, and what the
//! cache must do (serve idle peers' blocks, keep staggered readers off the
//! origin, serve later nodes' popular files) it does.

use crate::common;
use common::coopcache_args;
use serde_json::Value;
use std::path::Path;

/// Runs `coopcache bench` with `args`, a plot in `dir`, and `--json`;
/// returns the JSON lines.
fn bench(dir: &Path, args: &[&str]) -> Vec<Value> {
    let plot = dir.join("bench.png");
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", "--plot", plot.to_str().unwrap()]);
    let out = coopcache_args(&all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{all:?} failed: {stderr}");
    assert!(
        std::fs::metadata(&plot).map(|m| m.len()).unwrap_or(0) > 1000,
        "{all:?} wrote no plot"
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

#[test]
fn netcache_idle_peer_serves_the_busy_nodes_misses() {
    let dir = tempfile::tempdir().unwrap();
    let rows = bench(
        dir.path(),
        &[
            "netcache",
            "--file-size",
            "1MiB",
            "--reads",
            "150",
            "--peers",
            "0,1",
            "--origin-delay",
            "2ms",
            "--prime-passes",
            "1",
        ],
    );
    assert_eq!(
        rows.len(),
        5,
        "base, then N-Chance and Direct with 0 and 1 idle peers: {rows:?}"
    );
    let base = &rows[0];
    assert_eq!(base["algorithm"], "base");
    assert_eq!(f(base, "relative"), 1.0);
    for (r, (algorithm, peers)) in
        rows[1..]
            .iter()
            .zip([("nchance", 0), ("nchance", 1), ("direct", 0), ("direct", 1)])
    {
        assert_eq!(r["algorithm"], algorithm);
        assert_eq!(u(r, "peers"), peers);
        assert!(r["target"].is_number() && r["met"].is_boolean(), "{r}");
    }
    for r in &rows {
        assert_eq!(u(r, "wrong_bytes"), 0, "{r}");
        assert_eq!(u(r, "integrity_failures"), 0, "{r}");
        assert_eq!(u(r, "reads"), 150);
        assert!(f(r, "seconds") > 0.0 && f(r, "mean_read_ms") > 0.0, "{r}");
    }
    assert_eq!(f(base, "peer"), 0.0, "no cooperation, no peer reads");
    assert!(f(base, "origin") > 0.0, "the file does not fit: {base}");
    for (alone, one) in [(&rows[1], &rows[2]), (&rows[3], &rows[4])] {
        assert_eq!(f(alone, "peer"), 0.0, "no peer to read from: {alone}");
        assert!(f(one, "peer") > 0.0, "the idle peer served nothing: {one}");
        assert!(
            f(one, "origin") < f(base, "origin"),
            "the idle peer saved no origin reads: {one} vs {base}"
        );
    }
}

/// The busy node's origin private: its evictions reach the idle peer
/// sealed, come back opened, and the targets' shape holds.
#[test]
fn netcache_private_parks_sealed_blocks_on_the_idle_peer() {
    let dir = tempfile::tempdir().unwrap();
    let rows = bench(
        dir.path(),
        &[
            "netcache",
            "--private",
            "--file-size",
            "1MiB",
            "--reads",
            "150",
            "--peers",
            "1",
            "--origin-delay",
            "2ms",
            "--prime-passes",
            "1",
        ],
    );
    assert_eq!(
        rows.len(),
        2,
        "base, then Direct with 1 idle peer: {rows:?}"
    );
    let one = &rows[1];
    assert_eq!(one["algorithm"], "direct");
    assert_eq!(one["private"], true);
    assert!(f(one, "opened") > 0.0, "nothing came back sealed: {one}");
    for cost in ["seal_us", "open_us", "unified_seal_us", "unified_open_us"] {
        assert!(f(one, cost) > 0.0, "{cost}: {one}");
    }
    assert!(f(one, "origin") < f(&rows[0], "origin"), "{one}");
    for r in &rows {
        assert_eq!(u(r, "wrong_bytes"), 0, "{r}");
        assert_eq!(u(r, "integrity_failures"), 0, "{r}");
    }
}

/// An idle host full of a busy node's blocks starts reading: its own
/// blocks take the room they need from the foreign ones, none of its own
/// gives way, and once idle again it lends again.
#[test]
fn switch_host_gets_its_memory_back_and_lends_again() {
    let dir = tempfile::tempdir().unwrap();
    let rows = bench(
        dir.path(),
        &[
            "switch",
            "--cache",
            "1MiB",
            "--idle-after",
            "300ms",
            "--after",
            "2s",
        ],
    );
    let r = &rows[0];
    assert!(u(r, "foreign_at_switch") > 16, "the host lent nothing: {r}");
    assert!(
        u(r, "foreign_least") < u(r, "foreign_at_switch"),
        "the host took no memory back: {r}"
    );
    assert_eq!(
        u(r, "second_pass_local"),
        u(r, "second_pass_blocks"),
        "the host's own file stayed in its memory: {r}"
    );
    assert!(
        r["lends_again_after_s"].is_number(),
        "never lent again: {r}"
    );
    assert_eq!(u(r, "wrong_bytes"), 0);
}

#[test]
fn staggered_readers_after_the_first_stay_off_the_origin() {
    let dir = tempfile::tempdir().unwrap();
    let size = 1u64 << 20;
    let rows = bench(
        dir.path(),
        &[
            "staggered",
            "--file-size",
            "1MiB",
            "--origin-delay",
            "1ms",
            "--overhead-sizes",
            "64KiB,256KiB,1MiB",
            "--overhead-reps",
            "1",
        ],
    );
    let kind = |k: &str| rows.iter().filter(|r| r["kind"] == k).collect::<Vec<_>>();
    let (readers, total, overhead) = (kind("reader"), kind("total"), kind("overhead"));
    assert_eq!(
        (readers.len(), total.len(), overhead.len()),
        (4, 1, 3),
        "{rows:?}"
    );
    assert_eq!(
        u(readers[0], "origin_bytes"),
        size,
        "the first reader reads the origin"
    );
    let sum: u64 = readers.iter().map(|r| u(r, "origin_bytes")).sum();
    let total = total[0];
    assert_eq!(u(total, "origin_bytes"), sum);
    assert!(
        sum as f64 <= 1.01 * size as f64,
        "{sum} origin bytes for a {size}-byte file"
    );
    assert_eq!(total["met"], true);
    assert_eq!(u(total, "wrong_bytes"), 0);
    assert_eq!(u(total, "integrity_failures"), 0);
    // The last reader's blocks came from the nodes that held the file
    // before it, one count each. (That every holder serves a share is
    // `holders.rs` in crates/node: here a membership change under load
    // would move the file's manager, and its record of the holders.)
    let from = readers[3]["from_holders"].as_array().unwrap();
    assert_eq!(from.len(), 3, "{rows:?}");
    let sum: u64 = from.iter().map(|n| n.as_u64().unwrap()).sum();
    assert!(
        sum >= 16,
        "16 blocks, {sum} messages from holders: {from:?}"
    );
    for r in &readers {
        assert_eq!(u(r, "wrong_bytes"), 0, "{r}");
    }
    for (o, size) in overhead.iter().zip([64u64 << 10, 256 << 10, 1 << 20]) {
        assert_eq!(u(o, "file_size"), size);
        assert_eq!(u(o, "wrong_bytes"), 0, "{o}");
        assert!(
            f(o, "node_seconds") > 0.0 && f(o, "direct_seconds") > 0.0,
            "{o}"
        );
        assert!(o["target_pct"].is_number(), "{o}");
    }
}

#[test]
fn zipf_web_later_nodes_read_less_from_the_origin() {
    let dir = tempfile::tempdir().unwrap();
    let rows = bench(
        dir.path(),
        &[
            "zipf-web",
            "--files",
            "120",
            "--reads",
            "150",
            "--mean-file-size",
            "16KiB",
            "--origin-delay",
            "1ms",
        ],
    );
    assert_eq!(rows.len(), 4, "{rows:?}");
    let first = u(&rows[0], "origin_bytes");
    assert!(first > 0);
    for (k, r) in rows.iter().enumerate() {
        assert_eq!(u(r, "node"), k as u64 + 1);
        assert_eq!(u(r, "wrong_bytes"), 0, "{r}");
        assert_eq!(u(r, "integrity_failures"), 0, "{r}");
        // No cache can avoid reading files nobody read before.
        assert!(u(r, "origin_bytes") >= u(r, "compulsory_bytes"), "{r}");
        if k > 0 {
            assert!(
                u(r, "origin_bytes") < first,
                "node {} read as much as node 1: {r}",
                k + 1
            );
            assert!(u(r, "peer") > 0, "{r}");
            assert!(r["met"].is_boolean(), "{r}");
        }
    }
}

/// `coopcache bench classes` on a small web workload: each built-in policy
/// a row, every byte right, and the live origin reads within 10% of the
/// simulator's for the same block reads; keeping classes 0 and 1 off
/// peers (`cc-23`) costs origin reads, live as predicted.
#[test]
fn class_policies_live_follow_the_simulators_origin_reads() {
    let dir = tempfile::tempdir().unwrap();
    let rows = bench(
        dir.path(),
        &[
            "classes",
            "--workload-params",
            "requests=3000,docs0=200,docs1=200,docs2=50,docs3=10",
            "--cache",
            "1MiB",
            "--origin-delay",
            "0ms",
        ],
    );
    let names: Vec<&str> = rows.iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(names, ["nchance", "fwd-01", "cc-23"]);
    for r in &rows {
        assert_eq!(u(r, "wrong_bytes"), 0, "{r}");
        assert_eq!(u(r, "integrity_failures"), 0, "{r}");
        let (live, predicted) = (u(r, "origin_reads"), u(r, "predicted_origin_reads"));
        assert!(
            live.abs_diff(predicted) * 10 <= predicted,
            "live {live} against predicted {predicted}: {r}"
        );
    }
    assert!(u(&rows[2], "predicted_origin_reads") > u(&rows[0], "predicted_origin_reads"));
    assert!(
        u(&rows[2], "peer_reads") < u(&rows[0], "peer_reads"),
        "{rows:?}"
    );
}

/// `coopcache bench disk` with a tiny working set (128 blocks of 16 KiB;
/// two nodes of 16 blocks of memory each): the disk tier keeps reads off
/// the origin, before and after a restart, and every byte is right.
#[test]
fn disk_tier_keeps_a_working_set_beyond_memory_off_the_origin() {
    let dir = tempfile::tempdir().unwrap();
    let rows = bench(
        dir.path(),
        &[
            "disk",
            "--working-set",
            "2MiB",
            "--block-size",
            "16KiB",
            "--passes",
            "2",
            "--origin-delay",
            "1ms",
            "--latency-reads",
            "10",
            "--index-slots",
            "50000",
            // A CI machine's page cache is not ours to drop.
            "--keep-page-cache",
        ],
    );
    let kind = |k: &str| rows.iter().filter(|r| r["kind"] == k).collect::<Vec<_>>();
    let (runs, restarts) = (kind("working_set"), kind("restart"));
    let (latency, index) = (kind("latency"), kind("index"));
    assert_eq!(
        (runs.len(), restarts.len(), latency.len(), index.len()),
        (2, 2, 2, 1),
        "{rows:?}"
    );
    for r in runs.iter().chain(&restarts) {
        assert_eq!(u(r, "wrong_bytes"), 0, "{r}");
        assert_eq!(u(r, "integrity_failures"), 0, "{r}");
        assert!(
            f(r, "median_ms") > 0.0 && f(r, "p99_ms") >= f(r, "median_ms"),
            "{r}"
        );
        let levels = &r["levels"];
        let served: u64 = ["local_memory", "peer_memory", "local_disk", "origin"]
            .iter()
            .map(|l| u(levels, l))
            .sum();
        assert_eq!(served, u(r, "reads"), "{r}");
    }
    fn by_disk<'a>(rs: &[&'a Value]) -> (&'a Value, &'a Value) {
        let find = |d: bool| *rs.iter().find(|r| r["disk"] == d).unwrap();
        (find(false), find(true))
    }
    let (without, with) = by_disk(&runs);
    assert_eq!(u(&without["levels"], "local_disk"), 0, "{without}");
    assert!(u(&with["levels"], "local_disk") > 0, "{with}");
    // Peers read each other's disks: counted within the peers' answers.
    assert_eq!(u(without, "peer_disk"), 0, "{without}");
    assert!(
        (1..=u(&with["levels"], "peer_memory")).contains(&u(with, "peer_disk")),
        "{with}"
    );
    assert!(
        u(with, "disk_slots") > 0 && u(with, "disk_writes") > 0,
        "{with}"
    );
    assert!(
        u(with, "origin_bytes") < u(without, "origin_bytes"),
        "the disk tier saved no origin bytes: {with} against {without}"
    );
    // The simulated protocol's prediction beside both, the target beside
    // the disk's.
    for r in [without, with] {
        assert!(r["simulated"]["origin"].is_u64(), "{r}");
        assert!(r["one_cache_origin_reads"].is_u64(), "{r}");
        assert!(r["origin_reads_vs_simulated_pct"].is_number(), "{r}");
    }
    assert_eq!(f(with, "target_pct"), 10.0);
    assert!(with["met"].is_boolean(), "{with}");
    let (without, with) = by_disk(&restarts);
    assert!(
        u(with, "origin_bytes") < u(without, "origin_bytes"),
        "a restarted node read its disk no more than the origin: {with} against {without}"
    );
    for l in &latency {
        assert_eq!(u(l, "samples"), 10, "{l}");
        assert_eq!(u(l, "wrong_bytes"), 0, "{l}");
        assert!(f(l, "median_us") > 0.0, "{l}");
    }
    assert_eq!(latency[0]["source"], "local disk");
    assert_eq!(latency[0]["page_cache"], "warm");
    assert_eq!(latency[1]["source"], "peer memory");
    let index = index[0];
    let charged = coopcache_core::protocol::DISK_ENTRY_BYTES;
    assert_eq!(
        (u(index, "slots"), u(index, "entry_bytes")),
        (50000, charged)
    );
    assert!(f(index, "heap_bytes_per_block") > 0.0, "{index}");
    // What the budget charges a slot covers what the index takes.
    assert_eq!(index["within_entry_bytes"], true, "{index}");
}

/// `coopcache bench s3` with a tiny dataset: boto3 readers through the
/// S3 endpoints read every byte right, fetch less from MinIO than direct
/// readers, each per-node MinIO replica is filled from MinIO once and
/// then serves its reader alone, and the GETs phase runs for coopcache
/// and MinIO. Needs MinIO (scripts/test-servers.sh) and the S3 clients'
/// venv.
#[test]
fn s3_readers_through_the_endpoint_fetch_less_from_minio_than_direct() {
    let Some(venv) = common::s3_clients() else {
        return;
    };
    let python = venv.join("bin/python");
    let out = coopcache_args(&[
        "bench",
        "s3",
        "--dataset-size",
        "8MiB",
        "--files",
        "8",
        "--epochs",
        "2",
        "--readers",
        "2",
        "--small-objects",
        "20",
        "--clients",
        "4",
        "--gets-for",
        "1s",
        "--python",
        python.to_str().unwrap(),
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("minio not found") {
        assert!(
            std::env::var_os("COOPCACHE_ALLOW_SKIP").is_some(),
            "{stderr}"
        );
        return;
    }
    assert!(out.status.success(), "bench s3 failed: {stderr}");
    let rows: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let all = |system: &str| {
        rows.iter()
            .find(|r| r["system"] == system && r["step"].as_str().unwrap().contains(": all"))
            .unwrap_or_else(|| panic!("no {system} total in {rows:?}"))
    };
    let (coop, direct) = (all("coopcache"), all("minio"));
    // Two epochs of two readers of 8 MiB each way; every byte checked.
    assert_eq!(u(coop, "bytes"), 32 << 20);
    assert_eq!(u(direct, "bytes"), 32 << 20);
    assert!(rows.iter().all(|r| u(r, "wrong_bytes") == 0), "{rows:?}");
    // Direct readers fetch all 32 MiB; the cluster reads each object
    // about once, and at most twice.
    assert!(u(direct, "origin_bytes") >= 32 << 20, "{direct}");
    assert!(u(coop, "origin_bytes") <= 16 << 20, "{coop}");
    // One MinIO per node: each replica is filled with the 8 MiB once
    // (the origin sends it once, give or take the requests' headers),
    // then the readers read only their replicas.
    let per_node = all("minio-per-node");
    assert_eq!(u(per_node, "bytes"), 32 << 20);
    let steps = |system: &str, part: &str| -> Vec<&Value> {
        rows.iter()
            .filter(|r| r["system"] == system && r["step"].as_str().unwrap().contains(part))
            .collect()
    };
    let fills = steps("minio-per-node", ": fill replica");
    assert_eq!(fills.len(), 2, "{rows:?}");
    for fill in &fills {
        assert_eq!(u(fill, "bytes"), 8 << 20, "{fill}");
        assert!(u(fill, "origin_bytes") >= 8 << 20, "{fill}");
        assert!(u(fill, "origin_bytes") < 9 << 20, "{fill}");
    }
    let epochs = steps("minio-per-node", ": epoch ");
    assert_eq!(epochs.len(), 2, "{rows:?}");
    for epoch in &epochs {
        assert!(u(epoch, "origin_bytes") < 1 << 20, "{epoch}");
    }
    let filled: u64 = fills.iter().map(|r| u(r, "origin_bytes")).sum();
    assert!(u(per_node, "origin_bytes") >= filled, "{per_node}");
    // What one node holds: coopcache's memory, a replica's whole copy.
    let disk = steps("minio-per-node", ": disk per node");
    assert!(
        disk.len() == 1 && u(disk[0], "bytes") >= 8 << 20,
        "{rows:?}"
    );
    let memory = steps("coopcache", ": memory per node");
    assert!(memory.len() == 1 && u(memory[0], "bytes") > 0, "{rows:?}");
    for system in ["coopcache", "minio"] {
        let gets = rows
            .iter()
            .find(|r| r["phase"] == "gets" && r["system"] == system)
            .unwrap_or_else(|| panic!("no {system} GETs row"));
        assert!(f(gets, "rate") > 0.0, "{gets}");
    }
}

/// `coopcache bench scale` on clusters of 3 and 5 real node processes:
/// every node links to every other both ways (the full mesh the bench
/// measures), the per-node figures are real, and the cluster reads from
/// peers with every byte right.
#[test]
fn scale_measures_each_node_of_a_full_mesh() {
    let dir = tempfile::tempdir().unwrap();
    let rows = bench(
        dir.path(),
        &[
            "scale", "--nodes", "3,5", "--reads", "40", "--files", "4", "--idle", "2s",
        ],
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (r, n) in rows.iter().zip([3u64, 5]) {
        assert_eq!(u(r, "nodes"), n, "{r}");
        // The bench fails if a node never lists every member.
        assert_eq!(u(r, "booted"), n - 1, "{r}");
        assert!(
            f(r, "boot_seconds") < 60.0 && f(r, "join_seconds") < 60.0,
            "{r}"
        );
        assert_eq!(f(r, "link_connections"), 2.0 * (n - 1) as f64, "{r}");
        assert!(f(r, "sockets") >= 2.0 * (n - 1) as f64, "{r}");
        assert!(
            f(r, "rss_mib") > 1.0 && f(r, "rss_max_mib") >= f(r, "rss_mib"),
            "{r}"
        );
        assert!(f(r, "cluster_idle_cpu_pct") > 0.0, "{r}");
        assert!(f(r, "idle_segments_per_s") > 0.0, "pings: {r}");
        assert!(f(r, "kib_per_read") > 0.0, "{r}");
        let served = u(r, "served_local") + u(r, "served_peer") + u(r, "served_origin");
        assert_eq!(served, 40, "{r}");
        assert!(u(r, "served_peer") > 0, "no read went to a peer: {r}");
        assert!(
            f(r, "median_ms") > 0.0 && f(r, "p99_ms") >= f(r, "median_ms"),
            "{r}"
        );
        assert_eq!(u(r, "wrong_bytes"), 0, "{r}");
        assert_eq!(u(r, "failed_reads"), 0, "{r}");
    }
    // Without --json: the two tables.
    let out = coopcache_args(&[
        "bench", "scale", "--nodes", "2", "--reads", "5", "--files", "1", "--idle", "1s",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    for column in [
        "all see all s",
        "RSS MiB",
        "idle CPU %",
        "segs/read",
        "p99 ms",
    ] {
        assert!(table.contains(column), "no {column:?} in:\n{table}");
    }
}
