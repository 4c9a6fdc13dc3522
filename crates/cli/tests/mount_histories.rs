//! Close-to-open on real mounts: three mounts of one cluster read and
//! write small files at once, every operation recorded, and each history
//! checked by `coopcache_core::consistency` (C2Cfs's rules: a read sees
//! its own open's writes, bytes of a committed version, nothing from the
//! future, nothing older than the last close that returned before its
//! open, one version per open).
//!
//! `COOPCACHE_HISTORIES` sets how many histories (1,000 by default).

use crate::mounts;
use mounts::*;

use coopcache_core::consistency::{ContentId, HistoryRecorder, OpenId, Version, check};
use rand::{Rng, SeedableRng};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes per block of the history (each block carries one tag).
const BLOCK: usize = 4096;
/// Blocks per file.
const BLOCKS: u64 = 4;
/// Files per history.
const FILES: u64 = 2;
/// Operations per client per history.
const OPS: usize = 6;

/// The recorder and what the harness numbers: the clock, the tags, and
/// each file's commit count (its `Tcommit`).
struct Harness {
    rec: Mutex<HistoryRecorder>,
    clock: AtomicU64,
    tags: AtomicU64,
    /// Per file: the commit count, held across a committing close so that
    /// versions are numbered in commit order.
    commits: Vec<Mutex<u64>>,
}

impl Harness {
    fn at(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    fn rec(&self) -> std::sync::MutexGuard<'_, HistoryRecorder> {
        self.rec.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A block of bytes carrying `tag` throughout.
fn block_of(tag: u64) -> Vec<u8> {
    tag.to_le_bytes().repeat(BLOCK / 8)
}

/// The tag of a block read back; a block that is not one tag throughout
/// gets an id no version holds.
fn content_of(bytes: &[u8]) -> ContentId {
    let tag = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    if bytes.chunks(8).all(|c| c == tag.to_le_bytes()) {
        ContentId(tag)
    } else {
        ContentId(u64::MAX - bytes.iter().map(|&b| u64::from(b)).sum::<u64>())
    }
}

fn file_name(history: usize, file: u64) -> String {
    format!("h{history}-f{file}")
}

/// One client's operations in one history.
fn client(h: &Harness, dir: &Path, id: u32, history: usize, seed: u64, errors: &AtomicU64) {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    for _ in 0..OPS {
        let file = rng.random_range(0..FILES);
        let path = dir.join(file_name(history, file));
        let open = h.rec().open(id, file, h.at());
        if rng.random_bool(0.5) {
            write_open(h, &path, open, file, &mut rng, errors);
        } else {
            read_open(h, &path, open, errors);
        }
    }
}

/// Reads the whole file in one call; an error (a version replaced while
/// it was read and gone from every cache: ESTALE) is counted, not judged.
fn read_whole(h: &Harness, f: &mut std::fs::File, open: OpenId, errors: &AtomicU64) {
    let mut buf = vec![0u8; BLOCK * BLOCKS as usize];
    let _ = f.seek(SeekFrom::Start(0));
    match f.read_exact(&mut buf) {
        Ok(()) => {
            let contents: Vec<ContentId> = buf.chunks(BLOCK).map(content_of).collect();
            h.rec().read(open, 0, &contents, h.at());
        }
        Err(_) => {
            errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn read_open(h: &Harness, path: &Path, open: OpenId, errors: &AtomicU64) {
    let Ok(mut f) = std::fs::File::open(path) else {
        errors.fetch_add(1, Ordering::Relaxed);
        close_nothing(h, open);
        return;
    };
    read_whole(h, &mut f, open, errors);
    h.rec().close_start(open, h.at());
    drop(f);
    h.rec().close_end(open, None, h.at());
}

fn close_nothing(h: &Harness, open: OpenId) {
    h.rec().close_start(open, h.at());
    h.rec().close_end(open, None, h.at());
}

fn write_open(
    h: &Harness,
    path: &Path,
    open: OpenId,
    file: u64,
    rng: &mut rand_pcg::Pcg64,
    errors: &AtomicU64,
) {
    let Ok(mut f) = std::fs::File::options().read(true).write(true).open(path) else {
        errors.fetch_add(1, Ordering::Relaxed);
        close_nothing(h, open);
        return;
    };
    if rng.random_bool(0.5) {
        read_whole(h, &mut f, open, errors);
    }
    for _ in 0..rng.random_range(1..=2) {
        let block = rng.random_range(0..BLOCKS);
        let tag = h.tags.fetch_add(1, Ordering::Relaxed);
        f.seek(SeekFrom::Start(block * BLOCK as u64)).unwrap();
        f.write_all(&block_of(tag)).unwrap();
        h.rec().write(open, block, ContentId(tag), h.at());
    }
    // The close commits: numbered in commit order, one close of this
    // file at a time.
    let mut commits = h.commits[file as usize]
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    h.rec().close_start(open, h.at());
    drop(f);
    *commits += 1;
    h.rec().close_end(open, Some(Version(*commits)), h.at());
}

#[test]
fn randomized_histories_on_three_mounts_keep_close_to_open() {
    histories(&[]);
}

/// The same in `exclusive` mode: opens ask the files' managers, which
/// learn every close from the origin themselves. The files each history
/// starts from are written into the origin directly, under new names, so
/// their managers know nothing of them yet and ask the origin once.
#[test]
fn randomized_histories_keep_close_to_open_in_exclusive_mode() {
    histories(&exclusive_env());
}

/// Runs the histories on three mounts started with `env`.
fn histories(env: &[(String, String)]) {
    let Some(work) = Work::new(&["origin", "m0", "m1", "m2"]) else {
        return;
    };
    let histories: usize = std::env::var("COOPCACHE_HISTORIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let origin = work.join("origin");
    let dirs: Vec<PathBuf> = (0..3).map(|i| work.join(&format!("m{i}"))).collect();
    let first = Mount::start_env(work.path(), &origin, &dirs[0], "m0", None, env);
    let mut mounts = vec![first];
    for (i, dir) in dirs.iter().enumerate().skip(1) {
        let name = format!("m{i}");
        let m = Mount::start_env(work.path(), &origin, dir, &name, Some(&mounts[0]), env);
        mounts.push(m);
    }
    if !env.is_empty() {
        // Managers answer from their tables once the members have agreed
        // for a while (`coopcache_core::c2cfs::exclusive`); until then opens
        // ask the origin, which would test nothing new.
        for m in &mounts {
            wait_members(m, 3);
        }
        wait_commits_stable(&mounts.iter().collect::<Vec<_>>());
    }

    let errors = AtomicU64::new(0);
    let mut reads = 0;
    for history in 0..histories {
        let h = Harness {
            rec: Mutex::new(HistoryRecorder::new()),
            clock: AtomicU64::new(0),
            tags: AtomicU64::new(1 << 32),
            commits: (0..FILES).map(|_| Mutex::new(0)).collect(),
        };
        for file in 0..FILES {
            let mut bytes = Vec::new();
            for block in 0..BLOCKS {
                let tag = (file << 16) | block;
                h.rec().origin(file, block, ContentId(tag));
                bytes.extend(block_of(tag));
            }
            std::fs::write(origin.join(file_name(history, file)), bytes).unwrap();
        }
        std::thread::scope(|s| {
            for (id, dir) in dirs.iter().enumerate() {
                let (h, errors) = (&h, &errors);
                let seed = (history * 3 + id) as u64;
                s.spawn(move || client(h, dir, id as u32, history, seed, errors));
            }
        });
        let history_done = h.rec.into_inner().unwrap().finish();
        reads += history_done
            .events()
            .iter()
            .filter(|e| matches!(e.op, coopcache_core::consistency::Op::Read { .. }))
            .count();
        if let Err(v) = check(&history_done) {
            panic!("history {history} broke close-to-open: {v}");
        }
    }
    let errors = errors.into_inner();
    let stats: u64 = mounts
        .iter()
        .map(|m| m.status()["origin_stats"].as_u64().unwrap())
        .sum();
    let sum = |key: &str| -> u64 {
        mounts
            .iter()
            .map(|m| m.status()[key].as_u64().unwrap())
            .sum()
    };
    let (from_tables, unrecorded) = (sum("manager_opens"), sum("unrecorded_commits"));
    eprintln!(
        "{histories} histories, {reads} reads checked, {errors} reads failed, {stats} origin stats, {from_tables} opens answered from managers' tables"
    );
    if !env.is_empty() {
        // Unrecorded commits are safe (every member forgot the file) and
        // follow a membership change, which a loaded machine may see:
        // reported, not failed on.
        assert!(from_tables > 0, "no open was answered by a manager");
        let (served, timeouts) = (sum("first_served"), sum("timeouts"));
        eprintln!(
            "{unrecorded} commits no manager recorded, {served} first blocks served with an open's answer, {timeouts} reads timed out on a peer"
        );
    }
    assert!(reads > histories, "the histories read something");
    assert!(
        errors * 100 <= reads as u64,
        "{errors} of {reads} reads failed (ESTALE)"
    );
    for m in mounts {
        assert!(m.terminate().success());
    }
}

/// A reader reading a file in a loop on one mount while another mount
/// rewrites it whole, version after version (the reader's kernel keeps a
/// file's pages across opens while its version stays the same; each
/// rewrite is another version): every read sees one version whole, never
/// one older than the last close that returned before its open began. A
/// read of a version replaced meanwhile and held by no node fails with
/// `ESTALE` (reopen), counted, at most one read in ten.
#[test]
fn a_reader_beside_a_rewriting_writer_sees_whole_versions_never_older() {
    rewrites_beside_a_reader(&[]);
}

/// The same in `exclusive` mode.
#[test]
fn a_reader_beside_a_rewriting_writer_sees_whole_versions_in_exclusive_mode() {
    rewrites_beside_a_reader(&exclusive_env());
}

/// Versions the writer writes.
const REWRITES: u64 = 120;
/// Bytes of the file: several blocks, several kernel pages.
const REWRITTEN: usize = 256 << 10;

fn rewrites_beside_a_reader(env: &[(String, String)]) {
    let Some(work) = Work::new(&["origin", "w", "r"]) else {
        return;
    };
    let origin = work.join("origin");
    let (wdir, rdir) = (work.join("w"), work.join("r"));
    let w = Mount::start_env(work.path(), &origin, &wdir, "w", None, env);
    let r = Mount::start_env(work.path(), &origin, &rdir, "r", Some(&w), env);
    wait_members(&w, 2);
    wait_members(&r, 2);
    if !env.is_empty() {
        wait_commits_stable(&[&w, &r]);
    }
    let whole = |v: u64| v.to_le_bytes().repeat(REWRITTEN / 8);
    std::fs::write(origin.join("f"), whole(0)).unwrap();
    // The newest version whose close returned, and the newest begun.
    let (closed, begun) = (AtomicU64::new(0), AtomicU64::new(0));
    let done = std::sync::atomic::AtomicBool::new(false);
    let (mut reads, mut stale) = (0u64, 0u64);
    std::thread::scope(|s| {
        s.spawn(|| {
            for v in 1..=REWRITES {
                begun.store(v, Ordering::SeqCst);
                std::fs::write(wdir.join("f"), whole(v)).unwrap();
                closed.store(v, Ordering::SeqCst);
            }
            done.store(true, Ordering::SeqCst);
        });
        while !done.load(Ordering::SeqCst) {
            let need = closed.load(Ordering::SeqCst);
            let got = match std::fs::read(rdir.join("f")) {
                Ok(got) => got,
                Err(e) if e.raw_os_error() == Some(116) => {
                    stale += 1;
                    continue;
                }
                Err(e) => panic!("read {reads}: {e}"),
            };
            let newest = begun.load(Ordering::SeqCst);
            assert_eq!(got.len(), REWRITTEN, "read {reads}: a torn length");
            let v = u64::from_le_bytes(got[..8].try_into().unwrap());
            assert!(
                got == whole(v),
                "read {reads}: versions mixed in one read (first {v})"
            );
            assert!(
                (need..=newest).contains(&v),
                "read {reads}: version {v}, but {need} was closed before the open and {newest} the newest begun"
            );
            reads += 1;
        }
    });
    eprintln!("{reads} reads beside {REWRITES} rewrites, {stale} ESTALE");
    assert!(reads >= 20, "only {reads} reads");
    assert!(stale * 10 <= reads, "{stale} of {reads} reads ESTALE");
    assert_eq!(std::fs::read(rdir.join("f")).unwrap(), whole(REWRITES));
    for m in [w, r] {
        assert!(m.terminate().success());
    }
}
