//! A cluster whose origin directory is changed behind its back in the ways
//! that defeat an mtime-based version: every node must see the new bytes,
//! whole, never old blocks spliced with new ones.

use crate::common;
use common::*;
use std::path::Path;
use std::time::Duration;

const LEN: usize = 1 << 20; // 16 blocks of 64 KiB

async fn every_node_reads(c: &TestCluster, want: &[u8], what: &str) {
    for (i, node) in c.nodes.iter().enumerate() {
        let got = node.read("a.bin", None).await.expect("read");
        let first_bad = got.iter().zip(want).position(|(a, b)| a != b);
        assert!(
            got.len() == want.len() && first_bad.is_none(),
            "{what}: node {i} read {} bytes, first wrong byte at {first_bad:?}",
            got.len()
        );
    }
}

/// `cp -p` over a file: same inode, same size, same mtime, new bytes. Each
/// node has cached only the first block; a version blind to the change
/// would splice that old block with fifteen new ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewrite_keeping_size_and_mtime_is_read_whole_by_every_node() {
    let c = cluster_with(Shape::default(), &[("a.bin", LEN)], |o| {
        o.attr_ttl = Duration::ZERO
    })
    .await;
    let path = c.origin_dir.join("a.bin");
    for node in &c.nodes {
        let head = node.read("a.bin", Some(0..65_536)).await.expect("head");
        assert_eq!(head[..], contents(1, LEN)[..65_536]);
    }
    let kept = mtime(&path);
    let new = contents(2, LEN);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &new))
        .expect("rewrite in place");
    set_mtime(&path, kept);
    every_node_reads(&c, &new, "rewritten in place, mtime kept").await;
}

/// Replaced by temp file and rename, mtime kept, until ext4 hands back the
/// first inode number: the replacement then has the old inode, size and
/// mtime. Every node must read each replacement's bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replacement_reusing_the_inode_and_mtime_is_read_by_every_node() {
    use std::os::unix::fs::MetadataExt;
    let c = cluster_with(Shape::default(), &[("a.bin", LEN)], |o| {
        o.attr_ttl = Duration::ZERO
    })
    .await;
    let path = c.origin_dir.join("a.bin");
    let ino = |p: &Path| std::fs::metadata(p).expect("metadata").ino();
    let (first, kept) = (ino(&path), mtime(&path));
    every_node_reads(&c, &contents(1, LEN), "the first version").await;
    for round in 2..40u64 {
        let new = contents(round, LEN);
        let aside = c.origin_dir.join("a.bin.tmp");
        std::fs::write(&aside, &new).expect("write aside");
        set_mtime(&aside, kept);
        std::fs::rename(&aside, &path).expect("rename over");
        every_node_reads(&c, &new, &format!("replacement {round}")).await;
        if ino(&path) == first {
            return;
        }
    }
    eprintln!("note: the file system reused no inode in 38 replacements");
}
