//! Unification on real daemons: two busy private nodes holding the same
//! dedup key (`coopcache cluster unify-key`) read the same file (a base
//! image each has a copy of) and park their evictions on one idle host,
//! which keeps each identical block once; its memory still holds no
//! plaintext. The same run without the key, and with the file marked
//! privacy-critical, keeps a copy per owner.

use crate::cluster;
use crate::common;
use crate::proc_memory;

use cluster::{Node, NodeSpec, cluster_init, fetch, hears_idle, members, wait_until};
use common::{coopcache_args, stderr};
use proc_memory::{marked_file, occurrences_in_memory};
use serde_json::Value;
use std::fs;

const MARKER: &[u8] = b"\x01coopcache-unified-plaintext-marker\x02";

/// How the owners run.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Each seals under its own key only.
    Plain,
    /// With the dedup key.
    Unify,
    /// With the dedup key, the file marked privacy-critical.
    Critical,
}

/// What a run leaves: the host's status, the owners', and the marker's
/// occurrences in the host's memory.
struct Run {
    host: Value,
    owners: Vec<Value>,
    markers: usize,
}

/// An idle host and two busy owners (never idle, so they park on the host
/// only), each with a copy of `base/image.bin` in its private origin; each
/// owner in turn reads it twice (its cache holds a quarter of it).
fn run(mode: Mode) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    let names = ["a", "b"];
    cluster_init(&keys, &["a", "b", "host"]);
    let unify_key = keys.join("unify.key");
    let out = coopcache_args(&["cluster", "unify-key", "--dir", keys.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let host_origin = dir.path().join("shared");
    fs::create_dir_all(&host_origin).unwrap();
    let mut data = Vec::new();
    for name in names {
        let base = dir.path().join(name).join("base");
        fs::create_dir_all(&base).unwrap();
        data = marked_file(&base.join("image.bin"), MARKER);
    }
    let host = Node::start(&NodeSpec {
        name: "host",
        keys: &keys,
        origin: &host_origin,
        join: None,
        extra: &[
            "--algorithm",
            "direct",
            "--idle-after",
            "200ms",
            "--memory",
            "64MiB",
        ],
    });
    let mut args = vec!["--algorithm", "direct", "--idle-after", "60min"];
    args.extend(["--memory", "39MiB", "--private"]);
    if mode != Mode::Plain {
        args.extend(["--unify-key", unify_key.to_str().unwrap()]);
    }
    if mode == Mode::Critical {
        args.extend(["--critical", "base/**"]);
    }
    let owners: Vec<Node> = names
        .iter()
        .map(|name| {
            let origin = dir.path().join(name);
            Node::start(&NodeSpec {
                name,
                keys: &keys,
                origin: &origin,
                join: Some(host.listen),
                extra: &args,
            })
        })
        .collect();
    for owner in &owners {
        wait_until("the owner sees the cluster", || {
            members(&owner.status()) == 3
        });
        wait_until("the owner hears the host is idle", || {
            hears_idle(&owner.status(), "host")
        });
    }
    for owner in &owners {
        for pass in 0..2 {
            let got = fetch(owner.http, "base/image.bin").unwrap();
            assert!(got == data, "{mode:?}: pass {pass}: wrong bytes");
        }
    }
    wait_until("the host keeps the owners' evictions", || {
        host.status()["foreign_blocks"].as_u64().unwrap_or(0) > 16
    });
    Run {
        markers: occurrences_in_memory(host.pid(), MARKER),
        host: host.status(),
        owners: owners.iter().map(Node::status).collect(),
    }
}

#[test]
fn a_host_keeps_identical_private_blocks_of_two_owners_once_unless_critical() {
    let plain = run(Mode::Plain);
    let unified = run(Mode::Unify);
    let critical = run(Mode::Critical);
    let foreign = |r: &Run| r.host["foreign_blocks"].as_u64().unwrap();
    eprintln!(
        "foreign blocks on the host: plain {}, unified {}, critical {}",
        foreign(&plain),
        foreign(&unified),
        foreign(&critical)
    );
    for r in [&plain, &unified, &critical] {
        assert_eq!(r.markers, 0, "the host's memory holds plaintext");
        for o in &r.owners {
            assert_eq!(o["integrity_failures"], 0, "{o}");
            assert!(o["opened_blocks"].as_u64().unwrap() > 0, "{o}");
        }
    }
    // Unified: the second owner's evictions are the first's, kept once.
    assert!(
        foreign(&unified) * 10 <= foreign(&plain) * 6,
        "unified {} vs plain {}",
        foreign(&unified),
        foreign(&plain)
    );
    assert!(unified.host["unified_hosted"].as_u64().unwrap() > 16);
    for o in &unified.owners {
        assert!(o["unified_blocks"].as_u64().unwrap() > 16, "{o}");
    }
    // Critical: sealed under each owner's own key, as without the key.
    assert!(foreign(&critical) * 10 >= foreign(&plain) * 8);
    assert_eq!(critical.host["unified_hosted"], 0);
    for o in &critical.owners {
        assert_eq!(o["unified_blocks"], 0, "{o}");
        assert!(o["sealed_blocks"].as_u64().unwrap() > 16, "{o}");
    }
}

#[test]
fn unification_options_that_would_do_nothing_are_refused() {
    common::fails_with(
        "node --unify-key /nonexistent/unify.key --algorithm direct --check-config",
        &["--unify-key", "needs --private"],
    );
    common::fails_with(
        "node --private --algorithm direct --critical secrets/** --check-config",
        &["--critical secrets/**", "--unify-key"],
    );
    common::fails_with(
        "node --private --algorithm direct --unify-key /nonexistent/unify.key --check-config",
        &["dedup key /nonexistent/unify.key"],
    );
}
