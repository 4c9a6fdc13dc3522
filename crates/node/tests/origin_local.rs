//! A local directory origin against hostile contents: rewrites that keep
//! the mtime, replacements that reuse an inode, symbolic links out of the
//! origin and in it, a directory swapped for a link while it is read, and
//! files that are not files.

use crate::common;
use common::{mtime, set_mtime};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Duration;

use coopcache_node::origin::{Origin, OriginError};

fn open(dir: &Path) -> Origin {
    Origin::open(dir.to_str().expect("utf-8 temp path")).expect("open origin")
}

/// Rewrites `path` in place (same inode) with `content`.
fn rewrite_in_place(path: &Path, content: &[u8]) {
    use std::io::Write;
    let mut f = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open for rewrite");
    f.write_all(content).expect("rewrite");
}

fn ino(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).expect("metadata").ino()
}

fn assert_leaves_origin(result: Result<impl std::fmt::Debug, OriginError>, path: &str) {
    match result {
        Err(OriginError::BadPath { why, .. }) => {
            assert!(why.contains("out of the origin"), "{why}")
        }
        other => panic!("{path}: a link out of the origin was followed: {other:?}"),
    }
}

#[tokio::test]
async fn a_same_size_rewrite_that_keeps_the_mtime_gets_a_new_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("a.bin");
    std::fs::write(&path, b"old bytes, sixteen").expect("write");
    let origin = open(dir.path());
    let old = origin.stat("a.bin").await.expect("stat");
    let kept = mtime(&path);

    rewrite_in_place(&path, b"NEW BYTES, SIXTEEN");
    set_mtime(&path, kept);
    assert_eq!(
        mtime(&path),
        kept,
        "the rewrite must look untouched by mtime"
    );

    let new = origin.stat("a.bin").await.expect("stat rewritten");
    assert_ne!(new, old, "same size and mtime, new content: a new version");
    let err = origin
        .read("a.bin", &old, 0..4)
        .await
        .expect_err("old version");
    assert!(err.is_changed(), "{err}");
    let got = origin.read("a.bin", &new, 0..18).await.expect("read new");
    assert_eq!(&got[..], b"NEW BYTES, SIXTEEN");
}

/// Replacing by temp file and rename with the mtime kept, until the file
/// system hands the original inode number back (ext4 does within a few
/// replacements): every replacement must still be a new version.
#[tokio::test]
async fn a_replacement_that_reuses_the_inode_and_keeps_the_mtime_gets_a_new_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("a.bin");
    std::fs::write(&path, [0u8; 64]).expect("write");
    let (first_ino, kept) = (ino(&path), mtime(&path));
    let origin = open(dir.path());
    let mut seen = vec![origin.stat("a.bin").await.expect("stat")];
    let mut reused = false;
    for round in 1..=100u8 {
        let aside = dir.path().join("a.bin.tmp");
        std::fs::write(&aside, [round; 64]).expect("write aside");
        set_mtime(&aside, kept);
        std::fs::rename(&aside, &path).expect("rename over");
        let v = origin.stat("a.bin").await.expect("stat");
        assert!(
            !seen.contains(&v),
            "round {round}: version {v:?} seen before"
        );
        let got = origin.read("a.bin", &v, 0..64).await.expect("read");
        assert_eq!(&got[..], &[round; 64], "round {round}");
        seen.push(v);
        if ino(&path) == first_ino {
            reused = true;
            break;
        }
    }
    if !reused {
        eprintln!("note: this file system reused no inode in 100 replacements");
    }
}

/// An origin directory beside a directory `outside` holding `secret`, with
/// links out of the origin: `abs_dir` and `rel_dir` to `outside`,
/// `rel_file` to the secret. The temporary root, the origin, `outside`.
fn links_out() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let root = tempfile::tempdir().expect("tempdir");
    let origin_dir = root.path().join("origin");
    let outside = root.path().join("outside");
    std::fs::create_dir_all(&origin_dir).expect("mkdir");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(outside.join("secret"), b"SECRET").expect("write");
    symlink(&outside, origin_dir.join("abs_dir")).expect("link");
    symlink("../outside", origin_dir.join("rel_dir")).expect("link");
    symlink("../outside/secret", origin_dir.join("rel_file")).expect("link");
    (root, origin_dir, outside)
}

#[tokio::test]
async fn symbolic_links_out_of_the_origin_are_refused() {
    let (_root, origin_dir, _) = links_out();
    symlink("/etc/passwd", origin_dir.join("passwd_link")).expect("link");
    symlink("rel_file", origin_dir.join("link_to_link_out")).expect("link");
    let origin = open(&origin_dir);
    for path in [
        "passwd_link",
        "abs_dir/secret",
        "rel_dir/secret",
        "rel_file",
        "link_to_link_out",
    ] {
        assert_leaves_origin(origin.stat(path).await, path);
        let v = coopcache_node::origin::FileVersion {
            size: 6,
            version: "x".into(),
            modified: None,
            perm: 0o644,
            owner: None,
        };
        assert_leaves_origin(origin.read(path, &v, 0..6).await, path);
    }
}

#[tokio::test]
async fn symbolic_links_that_stay_inside_the_origin_work() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = dir.path();
    std::fs::create_dir_all(o.join("data/deep")).expect("mkdir");
    std::fs::write(o.join("data/deep/f.txt"), b"inside").expect("write");
    symlink("data/deep/f.txt", o.join("file_link")).expect("link");
    symlink("file_link", o.join("link_to_link")).expect("link");
    symlink("data", o.join("dir_link")).expect("link");
    symlink("../f.txt", o.join("data/deep/up")).expect("link");
    std::fs::write(o.join("data/f.txt"), b"up one").expect("write");
    let origin = open(o);
    for (path, want) in [
        ("file_link", &b"inside"[..]),
        ("link_to_link", b"inside"),
        ("dir_link/deep/f.txt", b"inside"),
        ("data/deep/up", b"up one"),
    ] {
        let v = origin
            .stat(path)
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let got = origin.read(path, &v, 0..v.size).await.expect("read");
        assert_eq!(&got[..], want, "{path}");
    }
}

/// A directory inside the origin is swapped, again and again, with a link
/// to a directory outside holding a file of the same name: no read may
/// ever return the outside file's bytes, however the swap and the open
/// interleave.
#[test]
fn a_directory_swapped_for_a_link_while_reading_never_leaks() {
    let root = tempfile::tempdir().expect("tempdir");
    let origin_dir = root.path().join("origin");
    std::fs::create_dir_all(origin_dir.join("d")).expect("mkdir");
    std::fs::create_dir_all(root.path().join("outside")).expect("mkdir");
    std::fs::write(origin_dir.join("d/f"), b"inside").expect("write");
    std::fs::write(root.path().join("outside/f"), b"SECRET").expect("write");
    std::fs::create_dir_all(root.path().join("spare")).expect("mkdir");
    symlink(root.path().join("outside"), origin_dir.join("evil")).expect("link");

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, o) = (stop.clone(), origin_dir.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // d <-> evil: `d` is now the link out, then the directory again.
                std::fs::rename(o.join("d"), o.join("tmp")).expect("swap");
                std::fs::rename(o.join("evil"), o.join("d")).expect("swap");
                std::fs::rename(o.join("tmp"), o.join("evil")).expect("swap");
                swaps += 1;
            }
            swaps
        })
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let origin = open(&origin_dir);
    let (mut inside, mut refused) = (0u32, 0u32);
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while std::time::Instant::now() < deadline {
        let read = rt.block_on(async {
            let v = origin.stat("d/f").await?;
            origin.read("d/f", &v, 0..v.size).await
        });
        match read {
            Ok(bytes) => {
                assert_eq!(&bytes[..], b"inside", "the outside file leaked");
                inside += 1;
            }
            Err(_) => refused += 1,
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    assert!(swaps > 100, "the race needs swaps: {swaps}");
    assert!(
        inside > 0 && refused > 0,
        "both outcomes should occur: {inside} read, {refused} refused"
    );
}

#[tokio::test]
async fn what_is_not_a_regular_file_is_refused_without_blocking() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    std::fs::write(dir.path().join("file"), b"x").expect("write");
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let origin = open(dir.path());
    let stat = tokio::time::timeout(Duration::from_secs(5), origin.stat("fifo"))
        .await
        .expect("a FIFO must not block the open");
    assert!(
        matches!(&stat, Err(OriginError::NotAFile { kind: "a FIFO", .. })),
        "{stat:?}"
    );
    let dir_stat = origin.stat("sub").await;
    assert!(
        matches!(
            &dir_stat,
            Err(OriginError::NotAFile {
                kind: "a directory",
                ..
            })
        ),
        "{dir_stat:?}"
    );
    // A file used as a directory is simply not there.
    assert!(
        origin
            .stat("file/x")
            .await
            .expect_err("ENOTDIR")
            .is_not_found()
    );
    let long = "n".repeat(300);
    match origin.stat(&long).await {
        Err(OriginError::BadPath { why, .. }) => assert!(why.contains("too long"), "{why}"),
        other => panic!("a 300-byte name: {other:?}"),
    }
}

#[tokio::test]
async fn changes_through_links_never_leave_the_origin() {
    let (_root, origin_dir, outside) = links_out();
    std::fs::write(origin_dir.join("inside"), b"inside").expect("write");
    let origin = open(&origin_dir);

    for dir in ["abs_dir", "rel_dir"] {
        let p = |name: &str| format!("{dir}/{name}");
        assert_leaves_origin(origin.draft(&p("new"), false, 0o644).await, &p("new"));
        assert_leaves_origin(origin.draft(&p("secret"), true, 0o644).await, &p("secret"));
        assert_leaves_origin(origin.mkdir(&p("d"), 0o755, None).await, &p("d"));
        assert_leaves_origin(origin.unlink(&p("secret")).await, &p("secret"));
        assert_leaves_origin(origin.rmdir(&p("d")).await, &p("d"));
        assert_leaves_origin(origin.symlink("x", &p("l"), None).await, &p("l"));
        assert_leaves_origin(origin.set_mode(&p("secret"), 0o777).await, &p("secret"));
        assert_leaves_origin(
            origin.set_times(&p("secret"), None, None).await,
            &p("secret"),
        );
        assert_leaves_origin(
            origin.rename(&p("secret"), "stolen", false).await,
            &p("secret"),
        );
        assert_leaves_origin(
            origin.rename("inside", &p("planted"), false).await,
            "inside",
        );
    }
    // A link out of the origin is itself a name inside it: writing its
    // target is refused, and what can change is the link only.
    assert!(origin.draft("rel_file", true, 0o644).await.is_err());
    let _ = origin.set_mode("rel_file", 0o777).await;
    origin
        .unlink("rel_file")
        .await
        .expect("the link itself goes");

    let secret = outside.join("secret");
    assert_eq!(std::fs::read(&secret).expect("still there"), b"SECRET");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&secret)
        .expect("meta")
        .permissions()
        .mode();
    assert_ne!(mode & 0o777, 0o777, "the target's mode is untouched");
    let names: Vec<_> = std::fs::read_dir(&outside)
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["secret"], "nothing was created outside");
    assert!(origin_dir.join("inside").exists());
}

#[tokio::test]
async fn a_draft_replaces_its_file_whole_at_commit_and_vanishes_if_dropped() {
    let root = tempfile::tempdir().expect("tempdir");
    std::fs::write(root.path().join("f"), b"old contents").expect("write");
    let origin = open(root.path());
    let mut draft = origin.draft("f", true, 0o644).await.expect("draft");
    draft.write_at(0, b"NEW").expect("write");
    assert_eq!(
        std::fs::read(root.path().join("f")).unwrap(),
        b"old contents"
    );
    let before = origin.stat("f").await.expect("stat");
    let version = draft.commit().await.expect("commit");
    assert_eq!(
        std::fs::read(root.path().join("f")).unwrap(),
        b"NEW contents"
    );
    assert_eq!(origin.stat("f").await.expect("stat"), version);
    assert_ne!(version, before);

    let mut dropped = origin.draft("f", false, 0o644).await.expect("draft");
    dropped.write_at(0, b"never").expect("write");
    drop(dropped);
    assert_eq!(
        std::fs::read(root.path().join("f")).unwrap(),
        b"NEW contents"
    );
    let names: Vec<_> = std::fs::read_dir(root.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["f"], "no temporary file is left");
    assert_eq!(origin.list("").await.expect("list").len(), 1);
}

/// A draft copied from a file that is still that version at its commit
/// is renamed into place as it is: the file's bytes are written once, not
/// a second time into a rebased copy (a shell's `cmd > f` commits the
/// empty file at the first close, then drafts the rest over it: 512 MiB
/// written for a 256 MiB `cat`, ENOSPC with 15 MiB free for 9). A file
/// changed meanwhile is still rebased, its change kept.
#[tokio::test]
async fn a_draft_over_an_unchanged_file_is_renamed_not_copied_again() {
    let root = tempfile::tempdir().expect("tempdir");
    let f = root.path().join("f");
    std::fs::write(&f, b"old contents").expect("write");
    let origin = open(root.path());
    let draft_ino = || {
        let temps: Vec<u64> = std::fs::read_dir(root.path())
            .expect("list")
            .map(|e| e.expect("entry"))
            .filter(|e| e.file_name() != "f")
            .map(|e| ino(&e.path()))
            .collect();
        assert_eq!(temps.len(), 1, "one draft file");
        temps[0]
    };
    let mut draft = origin.draft("f", true, 0o644).await.expect("draft");
    draft.write_at(0, b"NEW").expect("write");
    let temp = draft_ino();
    draft.commit().await.expect("commit");
    assert_eq!(std::fs::read(&f).unwrap(), b"NEW contents");
    assert_eq!(ino(&f), temp, "the draft itself became the file");

    let mut draft = origin.draft("f", true, 0o644).await.expect("draft");
    draft.write_at(0, b"abc").expect("write");
    let temp = draft_ino();
    rewrite_in_place(&f, b"NEW CONTENTS");
    draft.commit().await.expect("commit");
    assert_eq!(std::fs::read(&f).unwrap(), b"abc CONTENTS", "rebased");
    assert_ne!(ino(&f), temp);
}

/// Two drafts that append (`O_APPEND`) to one file, committed one after
/// the other, both keep their lines: the second is laid after the end the
/// first left, not over it (two nodes' appends lost one). A positional
/// write in the same draft stays where it was written.
#[tokio::test]
async fn appends_of_two_drafts_both_survive() {
    let root = tempfile::tempdir().expect("tempdir");
    let f = root.path().join("log");
    std::fs::write(&f, b"start\n").expect("write");
    let origin = open(root.path());
    let mut a = origin.draft("log", true, 0o644).await.expect("draft");
    let mut b = origin.draft("log", true, 0o644).await.expect("draft");
    assert_eq!(a.append(b"a1\n").expect("append"), 6);
    b.append(b"b1\n").expect("append");
    b.write_at(0, b"S").expect("write");
    a.append(b"a2\n").expect("append");
    a.commit().await.expect("commit");
    b.commit().await.expect("commit");
    assert_eq!(std::fs::read(&f).unwrap(), b"Start\na1\na2\nb1\n");
}

/// What the origin is asked is counted by kind (C2Cfs's server operations,
/// `bench mount`'s origin table): a rename is one change, a draft's
/// writes are writes into the origin, its commit one commit, a listing and
/// a name's lookup metadata.
#[tokio::test]
async fn the_origin_counts_changes_writes_and_commits() {
    use coopcache_node::origin::OriginCounts;
    let root = tempfile::tempdir().expect("tempdir");
    let origin = open(root.path());
    assert_eq!(origin.counts(), OriginCounts::default());
    let mut draft = origin.draft("f", false, 0o644).await.expect("draft");
    draft.write_at(0, b"hello ").expect("write");
    draft.write_at(6, b"world").expect("write");
    draft.commit().await.expect("commit");
    origin.mkdir("d", 0o755, None).await.expect("mkdir");
    origin.rename("f", "d/f", false).await.expect("rename");
    origin.list("d").await.expect("list");
    origin.entry("d/f").await.expect("entry");
    let want = OriginCounts {
        metadata: 2,
        changes: 3, // the draft begun, the mkdir, the rename
        writes: 2,
        written_bytes: 11,
        commits: 1,
    };
    assert_eq!(origin.counts(), want);
    let clone = origin.clone();
    clone.unlink("d/f").await.expect("unlink");
    assert_eq!(
        origin.counts().since(&want),
        OriginCounts {
            changes: 1,
            ..OriginCounts::default()
        },
        "clones count together"
    );
}

#[tokio::test]
async fn concurrent_drafts_of_one_file_merge_their_writes_as_nfs_does() {
    let root = tempfile::tempdir().expect("tempdir");
    std::fs::write(root.path().join("f"), b"aaaa bbbb cccc").expect("write");
    let origin = open(root.path());
    // Two writers open the file and write different ranges; the second
    // drafted before the first committed.
    let mut one = origin.draft("f", true, 0o644).await.expect("draft");
    let mut two = origin.draft("f", true, 0o644).await.expect("draft");
    one.write_at(0, b"AAAA").expect("write");
    two.write_at(10, b"CCCC").expect("write");
    one.commit().await.expect("commit");
    two.commit().await.expect("commit");
    assert_eq!(
        std::fs::read(root.path().join("f")).unwrap(),
        b"AAAA bbbb CCCC",
        "the second commit keeps the first's writes"
    );
    // A truncating writer replaces the file whole.
    let mut three = origin.draft("f", false, 0o644).await.expect("draft");
    three.write_at(0, b"new").expect("write");
    three.commit().await.expect("commit");
    assert_eq!(std::fs::read(root.path().join("f")).unwrap(), b"new");
    // A length set in the open is the file's length.
    let mut four = origin.draft("f", true, 0o644).await.expect("draft");
    four.set_len(2).expect("truncate");
    four.commit().await.expect("commit");
    assert_eq!(std::fs::read(root.path().join("f")).unwrap(), b"ne");
    let names: Vec<_> = std::fs::read_dir(root.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["f"], "no temporary file is left");
}
