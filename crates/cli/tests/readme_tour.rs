//! The README's five-minute tour, run as a new user would run it: every
//! shell block of the section, taken from README.md itself (so the README
//! cannot drift from what works), line by line in a shell with the built
//! `coopcache` first on the PATH and a home of its own. Daemons a user
//! would start in another terminal (`coopcache node`) start in the
//! background here; the cluster block, written for separate machines, runs
//! on loopback addresses (10.0.0.N as 127.0.0.N, each node's gateway on its
//! own address) over a directory for `/mnt/nfs/data`. Among the FUSE tests
//! because the mount block mounts.

use crate::mounts::serial;
use crate::shell::{Shell, commands, section, sh_blocks};
use std::path::Path;

#[test]
fn the_readmes_tour_runs_as_written() {
    let _serial = serial();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let tour = sh_blocks(section(&readme, "## A five-minute tour"));
    assert_eq!(
        tour.len(),
        4,
        "one node, a cluster, two mounts, the simulator"
    );
    let tmp = tempfile::tempdir().unwrap();
    let mut sh = Shell::new(&tmp.path().join("home"));

    // One node over the current directory, with a file in it.
    sh.one_node(&tour[0], &tmp.path().join("here"));

    // A cluster of two of the three nodes certified, on loopback.
    let cluster = tmp.path().join("cluster");
    sh.two_nodes(&tour[1], &cluster, &cluster.join("nfs"));
    sh.stop();

    // Two mounts, in a directory of the test's rather than /tmp/cc.
    sh.two_mounts(&tour[2], tmp.path());

    // The simulator, from the repository's root (the traces are beside it).
    for line in commands(&tour[3]) {
        let out = sh.run(&line, &root);
        assert!(!out.trim().is_empty(), "`{line}` printed nothing");
    }
}
