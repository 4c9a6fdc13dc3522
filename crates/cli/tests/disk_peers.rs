//! Peers' disks through real daemons (issue 43: "peer disk" in the lookup
//! order): what only one node's disk holds is served to another node from
//! that disk, not read again from the origin, every byte checked.

use crate::cluster::*;
use crate::common::random_bytes;

/// 12 MiB: 192 blocks of 64 KiB, against about 140 blocks of memory
/// (`--memory 48MiB`) on the node that reads it first.
const FILE_LEN: usize = 12 << 20;
/// Read a megabyte at a time, waiting for quiet in between, so every
/// block's disk write lands (the core skips writes beyond its bound on
/// writes in flight rather than let a fast reader queue them).
const STEP: usize = 1 << 20;

fn counter(node: &Node, key: &str) -> u64 {
    let status = node.status();
    status[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{}: no counter {key}: {status}", node.name))
}

#[test]
fn a_block_only_one_nodes_disk_holds_is_served_to_a_peer_from_that_disk() {
    let dir = tempfile::tempdir().unwrap();
    let (keys, origin, disk) = (
        dir.path().join("keys"),
        dir.path().join("o"),
        dir.path().join("d"),
    );
    std::fs::create_dir_all(&origin).unwrap();
    cluster_init(&keys, &["a", "b"]);
    let data = random_bytes(43, FILE_LEN);
    std::fs::write(origin.join("f.bin"), &data).unwrap();
    // Greedy: a block a's memory drops is not pushed to b's (as N-Chance
    // would), so only a's disk has it.
    let common = ["--algorithm", "greedy", "--memory", "48MiB"];
    let disk = disk.to_str().unwrap();
    let with_disk: Vec<&str> = common
        .iter()
        .copied()
        .chain(["--disk", disk, "--disk-size", "32MiB"])
        .collect();
    let a = Node::start(&NodeSpec {
        name: "a",
        keys: &keys,
        origin: &origin,
        join: None,
        extra: &with_disk,
    });
    let b = Node::start(&NodeSpec {
        name: "b",
        keys: &keys,
        origin: &origin,
        join: Some(a.listen),
        extra: &common,
    });
    let nodes = [a, b];
    for node in &nodes {
        wait_until(&format!("{} sees both", node.name), || {
            members(&node.status()) == 2
        });
    }
    let read_all = |node: &Node| {
        for start in (0..FILE_LEN).step_by(STEP) {
            let end = (start + STEP).min(FILE_LEN) - 1;
            let range = format!("bytes={start}-{end}");
            let reply = get(node.http, "/v1/files/f.bin", Some(&range)).unwrap();
            assert_eq!(reply.code, 206, "{}: {range}: {}", node.name, reply.text());
            assert!(
                reply.body == data[start..=end],
                "{}: {range}: wrong bytes",
                node.name
            );
            wait_quiescent(&nodes);
        }
    };
    read_all(&nodes[0]);
    let origin_before: u64 = nodes.iter().map(|n| counter(n, "origin_reads")).sum();
    assert_eq!(origin_before, 192, "a read every block once");
    assert!(
        counter(&nodes[0], "disk_blocks") >= 190,
        "a's disk holds the file: {}",
        nodes[0].status()
    );
    read_all(&nodes[1]);
    let origin_after: u64 = nodes.iter().map(|n| counter(n, "origin_reads")).sum();
    let served = counter(&nodes[0], "disk_served");
    let forwards: u64 = nodes.iter().map(|n| counter(n, "disk_forwards")).sum();
    eprintln!(
        "b's read of 192 blocks: {} origin reads, {served} blocks from a's disk, {forwards} forwarded to a disk",
        origin_after - origin_before
    );
    // a's memory holds about 140 of the blocks; the others (51 when
    // written) only its disk.
    assert!(served >= 32, "a's disk served {served} blocks");
    assert_eq!(forwards, served);
    assert_eq!(origin_after, origin_before, "b read the origin");
    for node in &nodes {
        assert_eq!(counter(node, "protocol_violations"), 0, "{}", node.name);
        assert_eq!(counter(node, "integrity_failures"), 0, "{}", node.name);
    }
}
