//! The size-class findings `docs/class-policies.md` reports, from the
//! policy files it names, on the WebStone-like workload: if a change to the
//! model or the policies moves them, this fails and the doc must be
//! revisited.

use coopcache_core::coop::{AlgorithmKind, ClusterConfig};
use coopcache_sim::class_file::read_class_policies;
use coopcache_sim::coop::{CoopSpec, CostProfile, Hardware, simulate};
use coopcache_sim::workload::{WebStone, Workload};
use std::path::PathBuf;

/// Throughput (MB/s) of each policy file under `hw`, in order.
fn throughputs(files: &[&str], hw: Hardware) -> Vec<f64> {
    let web = WebStone::default();
    let workload = Workload::Web(web.clone());
    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/class-policies");
    let blocks = (200 << 20) / web.block_size as usize;
    let specs: Vec<CoopSpec> = files
        .iter()
        .map(|f| CoopSpec {
            algorithm: AlgorithmKind::NChance,
            config: ClusterConfig {
                node_capacity: blocks,
                manager_capacity: blocks,
                classes: read_class_policies(&docs.join(format!("{f}.toml"))).unwrap(),
                ..ClusterConfig::paper(web.clients)
            },
            profile: CostProfile::ATM_1994,
            warmup: workload.default_warmup(),
            hardware: Some((hw, web.block_size)),
            attribute: None,
        })
        .collect();
    simulate(workload.requests_iter(), &specs, |_| {})
        .unwrap()
        .iter()
        .map(|r| r.stats.busy.as_ref().unwrap().throughput_mb_s())
        .collect()
}

#[test]
fn caching_the_large_classes_cooperatively_beats_caching_the_small_ones() {
    // Figure 3, and Figure 6's mix against full replication.
    let t = throughputs(
        &[
            "cc-all",
            "cc-23-discard-01",
            "cc-01-discard-23",
            "replication",
            "repl-01-cc-23",
        ],
        Hardware::WEBSTONE_1999,
    );
    assert!(t[1] > 1.5 * t[0] && t[1] > 1.5 * t[2], "{t:?}");
    assert!(
        t[1] > t[3],
        "cc 2,3 with the discard cache beats replication: {t:?}"
    );
    assert!(
        t[4] > t[3],
        "replicating 0,1 and caching 2,3 beats replication: {t:?}"
    );
}

#[test]
fn which_evictions_pay_to_forward_depends_on_what_a_disk_read_costs() {
    let files = ["fwd-2", "fwd-01", "fwd-0"];
    // Transfer-bound disks (no seek, a fast front end): class 2, as the paper.
    let mut hw: Hardware = "webstone-1999,seek_us=0,front_mb_s=1000".parse().unwrap();
    let t = throughputs(&files, hw);
    assert!(t[0] > t[1] && t[0] > t[2], "no seek: {t:?}");
    // Seek-bound disks (the paper's drives): small documents' misses cost a
    // seek each, so forwarding their evictions pays most.
    hw.seek_us = Hardware::WEBSTONE_1999.seek_us;
    let t = throughputs(&files, hw);
    assert!(t[1] > t[0] && t[2] > t[0], "14 ms seeks: {t:?}");
}
