//! The disk tier (issue 43) as an operator meets a crash: a real
//! `coopcache node` with `--disk`, killed with SIGKILL at a random moment
//! while readers read and the tier writes (its disk smaller than the
//! files, so slots are overwritten all the time), restarted on the same
//! disk, with a file rewritten at the origin while the node is down. Every
//! byte served is checked: a crash may lose blocks, never serve wrong
//! ones, and a block of a file's old version is never served.
//!
//! `COOPCACHE_CRASH_CYCLES` sets the cycles: 5 here, 100 in the long run
//! (`COOPCACHE_CRASH_CYCLES=100 cargo test --profile ci -p coopcache
//! --test all -- disk::`, docs/ARCHITECTURE.md "The disk tier").

use crate::cluster::*;
use crate::common::{random_bytes, seed};
use coopcache_core::policy::splitmix64;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// 8 files of 3 MiB: 384 blocks of 64 KiB, against about 100 blocks of
/// memory (`--memory 48MiB`) and 180 disk slots (`--disk-size 12MiB`).
const FILES: usize = 8;
const FILE_LEN: usize = 3 << 20;

/// What the origin holds now, by file index.
type Files = Vec<Arc<Vec<u8>>>;

fn name(i: usize) -> String {
    format!("f{i}.bin")
}

fn write_file(origin: &Path, i: usize, seed: u64) -> Arc<Vec<u8>> {
    let data = random_bytes(seed, FILE_LEN);
    std::fs::write(origin.join(name(i)), &data).unwrap();
    Arc::new(data)
}

fn start_node(keys: &Path, origin: &Path, disk: &Path) -> Node {
    let disk = disk.to_str().unwrap();
    let extra = ["--memory", "48MiB", "--disk", disk, "--disk-size", "12MiB"];
    Node::start(&NodeSpec {
        name: "node",
        keys,
        origin,
        join: None,
        extra: &extra,
    })
}

/// What the readers of one cycle saw.
#[derive(Default)]
struct Seen {
    reads: AtomicU64,
    cut: AtomicU64,
}

/// Reads random ranges of `files` from `node` until `killed`, checking
/// every byte that arrives. A read may fail or stop short only once the
/// node is being killed; bytes that arrive are checked either way.
fn reader(
    http: std::net::SocketAddr,
    files: Files,
    mut rng: u64,
    killed: &AtomicBool,
    seen: &Seen,
) {
    while !killed.load(Ordering::SeqCst) {
        let f = (splitmix64(&mut rng) % FILES as u64) as usize;
        let start = (splitmix64(&mut rng) % FILE_LEN as u64) as usize;
        let len = 1 + (splitmix64(&mut rng) % (256 << 10)) as usize;
        let end = (start + len).min(FILE_LEN) - 1;
        let path = format!("/v1/files/{}", name(f));
        let range = format!("bytes={start}-{end}");
        let dying = || killed.load(Ordering::SeqCst);
        let reply = match get(http, &path, Some(&range)) {
            Ok(r) => r,
            Err(e) if dying() => {
                let _ = e;
                seen.cut.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Err(e) => panic!("{path} {range} failed with the node up: {e}"),
        };
        if reply.code != 206 {
            assert!(
                dying(),
                "{path} {range}: HTTP {}: {}",
                reply.code,
                reply.text()
            );
            seen.cut.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let want = &files[f][start..=end];
        let got = &reply.body;
        assert!(
            got.len() <= want.len() && got[..] == want[..got.len()],
            "{path} {range}: wrong bytes ({} of {} arrived)",
            got.len(),
            want.len()
        );
        if got.len() < want.len() {
            assert!(
                dying(),
                "{path} {range}: {} of {} bytes",
                got.len(),
                want.len()
            );
            seen.cut.fetch_add(1, Ordering::Relaxed);
            return;
        }
        seen.reads.fetch_add(1, Ordering::Relaxed);
    }
}

fn disk_reads(status: &serde_json::Value) -> u64 {
    status["reads"]["disk"].as_u64().unwrap_or(0)
}

#[test]
fn sigkill_at_any_moment_never_serves_a_wrong_or_stale_byte_from_the_disk() {
    let cycles: u64 = std::env::var("COOPCACHE_CRASH_CYCLES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(5);
    let mut rng = seed("disk-crash");
    let dir = tempfile::tempdir().unwrap();
    let (keys, origin, disk) = (
        dir.path().join("keys"),
        dir.path().join("o"),
        dir.path().join("d"),
    );
    std::fs::create_dir_all(&origin).unwrap();
    cluster_init(&keys, &["node"]);
    let mut files: Files = (0..FILES)
        .map(|i| write_file(&origin, i, splitmix64(&mut rng)))
        .collect();

    let (mut recovered, mut from_disk, mut reads, mut rewritten) = (0, 0, 0, 0);
    for cycle in 0..cycles {
        let started = Instant::now();
        let node = start_node(&keys, &origin, &disk);
        let at_start = node.status();
        recovered += at_start["disk_blocks"].as_u64().unwrap_or(0);
        let killed = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Seen::default());
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (files, killed, seen) = (files.clone(), killed.clone(), seen.clone());
                let (http, r) = (node.http, splitmix64(&mut rng));
                thread::spawn(move || reader(http, files, r, &killed, &seen))
            })
            .collect();
        // Long enough for slots to be rewritten, short enough to kill the
        // node in the middle of reads and of the writes they cause.
        thread::sleep(Duration::from_millis(300 + splitmix64(&mut rng) % 1200));
        from_disk += disk_reads(&node.status());
        killed.store(true, Ordering::SeqCst);
        let mut node = node;
        node.kill9();
        for r in readers {
            r.join().expect("a reader saw a wrong byte");
        }
        reads += seen.reads.load(Ordering::Relaxed);
        eprintln!(
            "cycle {cycle}: {} blocks recovered, {} reads, {} cut by the kill, {:?}",
            at_start["disk_blocks"],
            seen.reads.load(Ordering::Relaxed),
            seen.cut.load(Ordering::Relaxed),
            started.elapsed()
        );
        // Every other cycle a file changes while the node is down: its
        // blocks on disk are of a version the origin no longer has.
        if cycle % 2 == 1 {
            let i = (cycle as usize / 2) % FILES;
            files[i] = write_file(&origin, i, splitmix64(&mut rng));
            rewritten += 1;
        }
    }

    // A last start reads every file whole: the current version, intact.
    let node = start_node(&keys, &origin, &disk);
    for (i, want) in files.iter().enumerate() {
        let got = fetch(node.http, &name(i)).unwrap();
        assert!(
            got == **want,
            "{}: wrong bytes after {cycles} crashes",
            name(i)
        );
    }
    eprintln!(
        "{cycles} crashes: {reads} reads checked, {recovered} blocks recovered at restarts, \
         {from_disk} reads from the disk, {rewritten} files rewritten while down"
    );
    assert!(reads > cycles, "the readers hardly read: {reads}");
    assert!(recovered > 0, "no restart found a block on its disk");
    assert!(from_disk > 0, "no read came from the disk");
}
