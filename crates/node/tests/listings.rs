//! C2Cfs `exclusive` mode's directory listings through live daemons: each
//! directory listed at the origin once for the whole cluster, by its
//! manager, with its files' versions; a change noted before the writer
//! goes on is seen by every listing begun after it.

use crate::common::{Shape, cluster_with};
use coopcache_node::origin::EntryKind;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_is_listed_once_for_the_cluster_and_every_change_is_seen_after_it_is_noted() {
    let files = [("set/a.bin", 1000), ("set/b.bin", 2000), ("other.bin", 10)];
    let c = cluster_with(Shape::default(), &files, |o| {
        o.commit_stable = Duration::ZERO;
    })
    .await;
    let asked = || -> u64 { c.nodes.iter().map(|n| n.origin().metadata_requests()).sum() };
    let names = |l: &coopcache_node::listing::DirListing| -> Vec<String> {
        let mut n: Vec<String> = l.entries().iter().map(|e| e.name.clone()).collect();
        n.sort();
        n
    };
    let before = asked();
    let first = c.nodes[0].list_exclusive("set").await.unwrap();
    assert_eq!(names(&first), ["a.bin", "b.bin"]);
    assert_eq!(asked(), before + 1, "the manager listed the origin once");
    // The manager filled in each file's version, as a stat gives it.
    for e in first.entries() {
        let stat = c.nodes[1].stat(&format!("set/{}", e.name)).await.unwrap();
        assert_eq!(e.version.as_ref(), Some(&*stat), "{}", e.name);
    }
    for node in &c.nodes {
        assert_eq!(node.list_exclusive("set").await.unwrap(), first);
    }
    assert_eq!(
        asked(),
        before + 1,
        "every later listing came from the manager"
    );

    // A file written through to the origin: until its writer's commit is
    // noted, listings come from the manager's table and do not show it.
    let dir = c.origin_dir.join("set");
    std::fs::write(dir.join("c.bin"), b"new").unwrap();
    let stale = c.nodes[2].list_exclusive("set").await.unwrap();
    assert_eq!(names(&stale), ["a.bin", "b.bin"], "kept by the manager");
    c.nodes[1].commit_exclusive("set/c.bin", None).await;
    let after = c.nodes[2].list_exclusive("set").await.unwrap();
    assert_eq!(names(&after), ["a.bin", "b.bin", "c.bin"]);
    let c_bin = after.entries().iter().find(|e| e.name == "c.bin").unwrap();
    assert_eq!(c_bin.version.as_ref().map(|v| v.size), Some(3));

    // A directory made: its parent's listing and its own are told.
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/d.bin"), b"d").unwrap();
    assert!(
        c.nodes[0].dir_made_or_removed("set/sub").await,
        "noted by all"
    );
    let set = c.nodes[1].list_exclusive("set").await.unwrap();
    let sub = set.entries().iter().find(|e| e.name == "sub").unwrap();
    assert_eq!(sub.kind, EntryKind::Dir);
    let inside = c.nodes[2].list_exclusive("set/sub").await.unwrap();
    assert_eq!(names(&inside), ["d.bin"]);

    // The root, and a directory that is not there (the origin's error).
    let root = c.nodes[1].list_exclusive("").await.unwrap();
    assert_eq!(names(&root), ["other.bin", "set"]);
    let missing = c.nodes[0].list_exclusive("nowhere").await.unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
}
