//! A private origin on real daemons: a busy `coopcache node --private`
//! parks its evictions on an idle peer, and the peer's memory, searched
//! byte by byte through /proc, holds no plaintext of them. The same run
//! with the origin shared finds the plaintext there: the search would see
//! a leak.

use crate::cluster;
use crate::common;
use crate::proc_memory;

use cluster::{Node, NodeSpec, cluster_init, fetch, hears_idle, members, wait_until};
use proc_memory::{marked_file, occurrences_in_memory};
use std::fs;

/// A marker no other bytes of either process contain: the block's
/// plaintext is found wherever this is.
const MARKER: &[u8] = b"\x01coopcache-private-plaintext-marker\x02";

/// Starts an idle host and a busy owner (its origin private if
/// `private`), has the owner read its file twice (its cache holds a
/// quarter of it, the rest is parked on the host), and returns the
/// marker's occurrences in the host's memory with the owner's status.
fn run(private: bool) -> (usize, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    cluster_init(&keys, &["owner", "host"]);
    let (owner_origin, host_origin) = (dir.path().join("mine"), dir.path().join("shared"));
    fs::create_dir_all(&owner_origin).unwrap();
    fs::create_dir_all(&host_origin).unwrap();
    let data = marked_file(&owner_origin.join("secret.bin"), MARKER);

    let common = ["--algorithm", "direct", "--idle-after", "200ms"];
    let host = Node::start(&NodeSpec {
        name: "host",
        keys: &keys,
        origin: &host_origin,
        join: None,
        extra: &[&common[..], &["--memory", "64MiB"]].concat(),
    });
    let mut owner_args = [&common[..], &["--memory", "39MiB"]].concat();
    if private {
        owner_args.push("--private");
    }
    let owner = Node::start(&NodeSpec {
        name: "owner",
        keys: &keys,
        origin: &owner_origin,
        join: Some(host.listen),
        extra: &owner_args,
    });
    wait_until("the owner sees the host", || members(&owner.status()) == 2);
    wait_until("the owner hears the host is idle", || {
        hears_idle(&owner.status(), "host")
    });
    for pass in 0..2 {
        let got = fetch(owner.http, "secret.bin").unwrap();
        assert!(got == data, "pass {pass}: the owner read wrong bytes");
    }
    wait_until("the host keeps the owner's evictions", || {
        host.status()["foreign_blocks"].as_u64().unwrap_or(0) > 16
    });
    (occurrences_in_memory(host.pid(), MARKER), owner.status())
}

#[test]
fn a_hosts_memory_holds_no_plaintext_of_a_private_block() {
    let (found, owner) = run(true);
    assert_eq!(owner["private"], true);
    assert!(owner["sealed_blocks"].as_u64().unwrap() > 16, "{owner}");
    assert!(
        owner["opened_blocks"].as_u64().unwrap() > 0,
        "the second pass took parked blocks back: {owner}"
    );
    assert_eq!(owner["integrity_failures"], 0);
    eprintln!("private origin: {found} markers in the host's memory");
    assert_eq!(found, 0, "the host's memory holds private plaintext");

    // The control: parked in the clear, the same search finds them.
    let (found, owner) = run(false);
    assert_eq!(owner["private"], false);
    eprintln!("shared origin: {found} markers in the host's memory");
    assert!(
        found > 1000,
        "the search should find a shared origin's parked blocks ({found} markers)"
    );
}

#[test]
fn a_private_origin_with_an_algorithm_that_shares_blocks_is_refused() {
    common::fails_with(
        "node --private --algorithm nchance --check-config",
        &["private origin", "--algorithm direct"],
    );
}
