//! `coopcache mount`: the origin through FUSE, file bytes through the
//! cooperative cache. Needs /dev/fuse and root (or fusermount3); CI has
//! both, and there a missing one fails the test instead of skipping it.

use crate::common;
use crate::mounts;
use mounts::*;
use std::io::Read;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

#[test]
fn the_origin_mounts_through_the_cache_and_unmounts_on_sigterm() {
    let Some(work) = Work::new(&["origin/sub/deeper", "mnt"]) else {
        return;
    };
    let (origin, dir) = (work.join("origin"), work.join("mnt"));
    let big = pattern(1_000_000, 1);
    std::fs::write(origin.join("big.bin"), &big).unwrap();
    std::fs::write(origin.join("sub/small.txt"), b"hello\n").unwrap();
    std::fs::write(origin.join("empty"), b"").unwrap();
    symlink("big.bin", origin.join("link")).unwrap();
    let m = Mount::start(work.path(), &origin, &dir);

    // The kernel reads 1 MiB ahead of a sequential reader of the mount
    // (coopcache_mount::READ_AHEAD_KB), not its default 128 KiB.
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let at = dir.canonicalize().unwrap();
    let device = table
        .lines()
        .find(|l| l.split(' ').nth(4) == at.to_str())
        .and_then(|l| l.split(' ').nth(2))
        .expect("the mount in the mount table");
    let knob = format!("/sys/class/bdi/{device}/read_ahead_kb");
    assert_eq!(std::fs::read_to_string(knob).unwrap().trim(), "1024");

    // Names, kinds and sizes as the origin has them.
    assert_eq!(names(&dir), ["big.bin", "empty", "link", "sub"]);
    let meta = std::fs::metadata(dir.join("big.bin")).unwrap();
    assert!(meta.is_file());
    assert_eq!(meta.len(), 1_000_000);
    assert!(std::fs::metadata(dir.join("sub")).unwrap().is_dir());
    assert!(
        std::fs::symlink_metadata(dir.join("link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_link(dir.join("link")).unwrap(),
        Path::new("big.bin")
    );

    // Contents, through the node: 16 blocks of 64 KiB from the origin once;
    // a second open of the same version reads no block from the origin
    // (the kernel keeps its pages, or the node serves them from memory).
    assert_eq!(std::fs::read(dir.join("big.bin")).unwrap(), big);
    assert_eq!(reads(&m.status(), "origin"), 16, "{}", m.status());
    assert_eq!(std::fs::read(dir.join("link")).unwrap(), big);
    assert_eq!(reads(&m.status(), "origin"), 16, "{}", m.status());
    assert_eq!(
        std::fs::read(dir.join("sub/small.txt")).unwrap(),
        b"hello\n"
    );
    assert_eq!(std::fs::read(dir.join("empty")).unwrap(), b"");
    let mut f = std::fs::File::open(dir.join("big.bin")).unwrap();
    let mut part = vec![0; 1000];
    std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(654_321)).unwrap();
    f.read_exact(&mut part).unwrap();
    assert_eq!(part, big[654_321..655_321]);

    // Errors as POSIX says.
    let enoent = Some(libc_errno::ENOENT);
    assert_eq!(errno_of(std::fs::read(dir.join("missing"))), enoent);
    assert_eq!(errno_of(std::fs::metadata(dir.join("sub/no/x"))), enoent);
    assert_eq!(
        errno_of(std::fs::read(dir.join("sub"))),
        Some(libc_errno::EISDIR)
    );

    // Close-to-open: a rewrite in the origin at the same size with the
    // mtime put back is seen by the next open, whole.
    let mtime = std::fs::metadata(origin.join("big.bin"))
        .unwrap()
        .modified()
        .unwrap();
    let big2 = pattern(1_000_000, 2);
    std::fs::write(origin.join("big.bin"), &big2).unwrap();
    std::fs::File::options()
        .write(true)
        .open(origin.join("big.bin"))
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(std::fs::read(dir.join("big.bin")).unwrap(), big2);

    // A program still holds `f` open: the mount is detached lazily.
    let log = m.log.clone();
    let code = m.terminate();
    assert!(code.success(), "SIGTERM: {code}");
    let log = std::fs::read_to_string(log).unwrap();
    assert!(log.contains("detached it lazily"), "{log}");
    drop(f);
    assert!(
        !mounted(&dir),
        "unmounted on SIGTERM: {}",
        std::fs::read_to_string("/proc/self/mounts").unwrap()
    );
}

#[test]
fn a_mount_left_dead_by_a_killed_daemon_is_recovered_by_the_next() {
    let Some(work) = Work::new(&["origin", "mnt"]) else {
        return;
    };
    let (origin, dir) = (work.join("origin"), work.join("mnt"));
    std::fs::write(origin.join("a"), b"still here").unwrap();

    let mut m = Mount::start(work.path(), &origin, &dir);
    let _ = m.child.kill();
    let _ = m.child.wait();
    let dead = std::fs::metadata(&dir).map_err(|e| e.raw_os_error());
    assert_eq!(
        dead.err(),
        Some(Some(libc_errno::ENOTCONN)),
        "kill -9 leaves a dead mount"
    );
    // Not dropped: its drop would clean up the dead mount this test wants
    // the next mount to find (the child is reaped already).
    std::mem::forget(m);

    let m = Mount::start(work.path(), &origin, &dir);
    assert_eq!(std::fs::read(dir.join("a")).unwrap(), b"still here");
    assert!(m.log_text().contains("dead mount"), "{}", m.log_text());
    let log = m.log.clone();
    assert!(m.terminate().success());
    assert!(!mounted(&dir));
    let log = std::fs::read_to_string(log).unwrap();
    assert!(
        log.contains("unmounted"),
        "nothing open: a clean unmount: {log}"
    );
}

#[test]
fn files_written_on_one_mount_are_read_whole_on_another_after_close() {
    let Some(work) = Work::new(&["origin", "a", "b"]) else {
        return;
    };
    let origin = work.join("origin");
    let (a_dir, b_dir) = (work.join("a"), work.join("b"));
    std::fs::write(origin.join("old.txt"), b"old").unwrap();
    let a = Mount::start_named(work.path(), &origin, &a_dir, "a", None);
    let b = Mount::start_named(work.path(), &origin, &b_dir, "b", Some(&a));

    // Create, write, close on a; b's next open sees all of it.
    let data = pattern(3_000_000, 7);
    std::fs::write(a_dir.join("new.bin"), &data).unwrap();
    assert_eq!(std::fs::read(b_dir.join("new.bin")).unwrap(), data);
    assert_eq!(
        std::fs::read(origin.join("new.bin")).unwrap(),
        data,
        "written through"
    );

    // Until a writer closes, other nodes see the previous version whole.
    {
        let mut f = std::fs::File::options()
            .write(true)
            .open(a_dir.join("old.txt"))
            .unwrap();
        std::io::Write::write_all(&mut f, b"NEW!").unwrap();
        let got = std::fs::read(b_dir.join("old.txt"));
        if !matches!(&got, Ok(g) if g == b"old") {
            std::fs::write("/tmp/flake.log", a.log_text()).unwrap();
        }
        assert_eq!(got.unwrap(), b"old");
        // Another open on the writer's node is a session of its own too.
        assert_eq!(std::fs::read(a_dir.join("old.txt")).unwrap(), b"old");
    }
    assert_eq!(std::fs::read(b_dir.join("old.txt")).unwrap(), b"NEW!");

    // Appends, truncation, directories, renames, links, modes and times.
    std::fs::OpenOptions::new()
        .append(true)
        .open(a_dir.join("old.txt"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, b" more"))
        .unwrap();
    assert_eq!(std::fs::read(b_dir.join("old.txt")).unwrap(), b"NEW! more");
    std::fs::File::options()
        .write(true)
        .open(a_dir.join("old.txt"))
        .unwrap()
        .set_len(2)
        .unwrap();
    assert_eq!(std::fs::read(b_dir.join("old.txt")).unwrap(), b"NE");
    std::fs::create_dir(a_dir.join("dir")).unwrap();
    std::fs::rename(a_dir.join("new.bin"), a_dir.join("dir/moved.bin")).unwrap();
    assert_eq!(std::fs::read(b_dir.join("dir/moved.bin")).unwrap(), data);
    symlink("dir/moved.bin", a_dir.join("link")).unwrap();
    assert_eq!(std::fs::read(b_dir.join("link")).unwrap(), data);
    std::fs::set_permissions(
        a_dir.join("old.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let mode = std::fs::metadata(origin.join("old.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let past = std::time::UNIX_EPOCH + Duration::from_secs(1_500_000_000);
    std::fs::File::options()
        .write(true)
        .open(a_dir.join("old.txt"))
        .unwrap()
        .set_modified(past)
        .unwrap();
    assert_eq!(
        std::fs::metadata(origin.join("old.txt"))
            .unwrap()
            .modified()
            .unwrap(),
        past
    );
    // `touch` with no time: the kernel's clock, not the daemon's.
    let before = std::time::SystemTime::now() - Duration::from_secs(1);
    sh(&format!("touch {}", a_dir.join("old.txt").display()));
    let touched = std::fs::metadata(origin.join("old.txt"))
        .unwrap()
        .modified()
        .unwrap();
    assert!(
        touched >= before,
        "touch set {touched:?}, before {before:?}"
    );

    // Errors as POSIX says.
    let err = |r: std::io::Result<()>| errno_of(r);
    assert_eq!(
        err(std::fs::create_dir(a_dir.join("dir"))),
        Some(libc_errno::EEXIST)
    );
    assert_eq!(
        err(std::fs::remove_dir(a_dir.join("dir"))),
        Some(libc_errno::ENOTEMPTY)
    );
    assert_eq!(
        err(std::fs::remove_file(a_dir.join("dir"))),
        Some(libc_errno::EISDIR)
    );
    assert_eq!(
        err(std::fs::remove_file(a_dir.join("nope"))),
        Some(libc_errno::ENOENT)
    );
    assert_eq!(
        err(std::fs::write(a_dir.join("nope/x"), b"x")),
        Some(libc_errno::ENOENT)
    );
    assert_eq!(
        err(std::fs::create_dir(a_dir.join("old.txt/x"))),
        Some(libc_errno::ENOTDIR)
    );
    assert_eq!(
        err(std::fs::hard_link(a_dir.join("old.txt"), a_dir.join("h"))),
        Some(libc_errno::ENOTSUP)
    );
    // Extended attributes: no origin keeps them, so every call says so.
    let file = a_dir.join("old.txt");
    let unsupported = Err(rustix::io::Errno::NOTSUP);
    let flags = rustix::fs::XattrFlags::empty();
    assert_eq!(
        rustix::fs::setxattr(&file, "user.k", b"v", flags),
        unsupported
    );
    let mut buf = [0u8; 64];
    assert_eq!(
        rustix::fs::getxattr(&file, "user.k", &mut buf[..]).map(|_| ()),
        unsupported
    );
    assert_eq!(
        rustix::fs::listxattr(&file, &mut buf[..]).map(|_| ()),
        unsupported
    );
    assert_eq!(rustix::fs::removexattr(&file, "user.k"), unsupported);
    std::fs::remove_file(a_dir.join("dir/moved.bin")).unwrap();
    std::fs::remove_dir(a_dir.join("dir")).unwrap();
    assert!(!origin.join("dir").exists());
    // Names and attributes are cached for the attribute TTL (1 s), as NFS
    // caches them; opens are what close-to-open makes exact.
    thread::sleep(Duration::from_millis(1100));
    assert_eq!(
        errno_of(std::fs::metadata(b_dir.join("dir"))),
        Some(libc_errno::ENOENT)
    );

    // A writer's node killed before the close: the old version stays, and
    // no temporary file shows.
    let mut f = std::fs::File::options()
        .write(true)
        .truncate(true)
        .open(a_dir.join("old.txt"))
        .unwrap();
    std::io::Write::write_all(&mut f, b"never committed").unwrap();
    drop(a);
    drop(f);
    assert_eq!(std::fs::read(b_dir.join("old.txt")).unwrap(), b"NE");
    let left = names(&b_dir);
    assert!(
        left.iter().all(|n| !n.starts_with(".coopcache-")),
        "{left:?}"
    );
    assert!(b.terminate().success());
}

#[test]
fn a_file_written_on_one_mount_is_read_from_the_writers_memory() {
    let Some(work) = Work::new(&["origin", "a", "b", "c"]) else {
        return;
    };
    let origin = work.join("origin");
    let dirs = [work.join("a"), work.join("b"), work.join("c")];
    let a = Mount::start_named(work.path(), &origin, &dirs[0], "a", None);
    let b = Mount::start_named(work.path(), &origin, &dirs[1], "b", Some(&a));
    let c = Mount::start_named(work.path(), &origin, &dirs[2], "c", Some(&a));
    for m in [&a, &b, &c] {
        wait_members(m, 3);
    }
    // Written and closed on a: b reads every block from a peer's memory
    // and nothing from the origin (C2Cfs: the writer holds the version it
    // committed); c then reads it from a or b.
    let data = pattern(2_000_000, 3);
    std::fs::write(dirs[0].join("w.bin"), &data).unwrap();
    for (m, dir) in [(&b, &dirs[1]), (&c, &dirs[2])] {
        let before = m.status();
        assert_eq!(std::fs::read(dir.join("w.bin")).unwrap(), data);
        let after = m.status();
        assert_eq!(
            reads(&after, "origin"),
            reads(&before, "origin"),
            "the origin served the reader: {after}"
        );
        assert!(
            reads(&after, "peer") >= reads(&before, "peer") + 31,
            "31 blocks of 64 KiB from peers: {after}"
        );
    }
    // Rewritten on c: a's copy is of the old version; a reads the new one
    // from c, never its own old bytes.
    let again = pattern(2_000_000, 9);
    std::fs::write(dirs[2].join("w.bin"), &again).unwrap();
    let before = a.status();
    assert_eq!(std::fs::read(dirs[0].join("w.bin")).unwrap(), again);
    assert_eq!(reads(&a.status(), "origin"), reads(&before, "origin"));

    // The writer killed (-9) after its close, the only node holding the
    // new version: the next reader still gets the whole file, from the
    // origin once its peer's link breaks (at worst each block's peer
    // timeout, 5 s at most).
    let last = pattern(1_500_000, 11);
    std::fs::write(dirs[0].join("last.bin"), &last).unwrap();
    drop(a);
    let started = Instant::now();
    assert_eq!(std::fs::read(dirs[1].join("last.bin")).unwrap(), last);
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "{:?}",
        started.elapsed()
    );
    assert!(reads(&b.status(), "origin") > 0);
}

/// `exclusive` mode (C2Cfs's setting): opens ask the file's manager, not
/// the origin, and every change through a mount reaches the manager
/// before it returns: a close, a rename over the file, a truncation of a
/// closed file. A directory rename answers `EXDEV`.
#[test]
fn exclusive_mounts_see_every_change_made_through_a_mount() {
    let Some(work) = Work::new(&["origin", "a", "b", "c"]) else {
        return;
    };
    let origin = work.join("origin");
    let dirs = [work.join("a"), work.join("b"), work.join("c")];
    let env = exclusive_env();
    let start =
        |i: usize, name, join| Mount::start_env(work.path(), &origin, &dirs[i], name, join, &env);
    let a = start(0, "a", None);
    let b = start(1, "b", Some(&a));
    let c = start(2, "c", Some(&a));
    for m in [&a, &b, &c] {
        wait_members(m, 3);
    }
    // Managers answer from their tables once the members have agreed for
    // the stable period (coopcache_core::c2cfs::exclusive).
    wait_commits_stable(&[&a, &b, &c]);
    let stats = || -> u64 {
        [&a, &b, &c]
            .iter()
            .map(|m| m.status()["origin_stats"].as_u64().unwrap())
            .sum()
    };
    let data = pattern(300_000, 5);
    std::fs::write(dirs[0].join("w.bin"), &data).unwrap();
    let before = stats();
    for _ in 0..3 {
        for dir in &dirs[1..] {
            assert_eq!(std::fs::read(dir.join("w.bin")).unwrap(), data);
        }
    }
    assert_eq!(
        stats(),
        before,
        "six opens asked the origin for the version"
    );

    // A file's size, time and mode come from its manager too: after the
    // name's lookup, `stat` asks the origin nothing, and sees a mode
    // change made on another mount at once.
    let metadata = || -> u64 {
        [&a, &b, &c]
            .iter()
            .map(|m| m.status()["origin_metadata"].as_u64().unwrap())
            .sum()
    };
    let on_b = dirs[1].join("w.bin");
    std::fs::metadata(&on_b).unwrap();
    let before = metadata();
    for _ in 0..5 {
        assert_eq!(std::fs::metadata(&on_b).unwrap().len(), data.len() as u64);
    }
    assert_eq!(metadata(), before, "a stat asked the origin");
    let mode = std::fs::Permissions::from_mode(0o600);
    std::fs::set_permissions(dirs[0].join("w.bin"), mode).unwrap();
    let seen = std::fs::metadata(&on_b).unwrap().permissions().mode();
    assert_eq!(seen & 0o7777, 0o600, "b sees a's chmod");

    // `mv new w.bin` on c, as editors and rsync replace a file.
    let renamed = pattern(200_000, 6);
    std::fs::write(dirs[2].join("new.tmp"), &renamed).unwrap();
    std::fs::rename(dirs[2].join("new.tmp"), dirs[2].join("w.bin")).unwrap();
    for dir in &dirs[..2] {
        assert_eq!(std::fs::read(dir.join("w.bin")).unwrap(), renamed);
    }

    // Truncated while closed, on b.
    std::fs::File::options()
        .write(true)
        .open(dirs[1].join("w.bin"))
        .and_then(|f| f.set_len(1000))
        .unwrap();
    for dir in [&dirs[0], &dirs[2]] {
        assert_eq!(std::fs::read(dir.join("w.bin")).unwrap(), renamed[..1000]);
    }

    // Removed on a: gone everywhere.
    std::fs::remove_file(dirs[0].join("w.bin")).unwrap();
    let gone = std::fs::read(dirs[2].join("w.bin")).unwrap_err();
    assert_eq!(gone.kind(), std::io::ErrorKind::NotFound);

    std::fs::create_dir(dirs[0].join("d")).unwrap();
    let err = std::fs::rename(dirs[0].join("d"), dirs[0].join("e")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc_errno::EXDEV), "{err}");
    for m in [&a, &b, &c] {
        assert_eq!(m.status()["unrecorded_commits"], 0);
    }
    let answered: u64 = [&a, &b, &c]
        .iter()
        .map(|m| m.status()["manager_opens"].as_u64().unwrap())
        .sum();
    assert!(
        answered >= 6,
        "{answered} opens answered from managers' tables"
    );
}

#[test]
fn an_http_origin_mounts_read_only() {
    let Some(work) = Work::new(&["www", "mnt"]) else {
        return;
    };
    let (www, dir) = (work.join("www"), work.join("mnt"));
    std::fs::write(www.join("a.txt"), b"served").unwrap();
    let port = free_port();
    let mut server = Command::new("python3")
        .args([
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .current_dir(&www)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 for a plain HTTP server");
    let deadline = Instant::now() + PATIENCE;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "no HTTP server");
        thread::sleep(Duration::from_millis(20));
    }
    let origin = format!("http://127.0.0.1:{port}");
    let m = Mount::start(work.path(), Path::new(&origin), &dir);
    assert_eq!(std::fs::metadata(dir.join("a.txt")).unwrap().len(), 6);
    let erofs = Some(libc_errno::EROFS);
    assert_eq!(errno_of(std::fs::write(dir.join("new"), b"x")), erofs);
    assert_eq!(errno_of(std::fs::write(dir.join("a.txt"), b"x")), erofs);
    assert_eq!(errno_of(std::fs::create_dir(dir.join("d"))), erofs);
    assert_eq!(errno_of(std::fs::remove_file(dir.join("a.txt"))), erofs);
    assert_eq!(errno_of(symlink("x", dir.join("l2"))), erofs);
    assert!(m.terminate().success());
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn real_programs_work_on_the_mount() {
    real_programs("shared");
}

/// The same in `exclusive` mode, where a file's attributes and versions
/// come from its manager (a directory rename answers `EXDEV`: none here).
#[test]
fn real_programs_work_on_an_exclusive_mount() {
    real_programs("exclusive");
}

/// tar, cp -a, rsync, git and fio on a mount of `consistency`.
fn real_programs(consistency: &str) {
    let Some(work) = Work::new(&["origin", "mnt", "src/a/b"]) else {
        return;
    };
    if !["git", "tar", "rsync", "fio"].iter().all(|p| have(p)) {
        return;
    }
    let (origin, dir, src) = (work.join("origin"), work.join("mnt"), work.join("src"));
    std::fs::write(src.join("a/b/data.bin"), pattern(300_000, 3)).unwrap();
    std::fs::write(src.join("a/text.txt"), b"some text\n").unwrap();
    std::fs::write(src.join("empty"), b"").unwrap();
    symlink("a/text.txt", src.join("link")).unwrap();
    let env = [("COOPCACHE_CONSISTENCY".to_string(), consistency.to_string())];
    let m = Mount::start_env(work.path(), &origin, &dir, "node", None, &env);
    let (s, d, w) = (src.display(), dir.display(), work.path().display());

    // tar, in and out.
    sh(&format!(
        "mkdir {d}/tar && tar -C {s} -cf - . | tar -C {d}/tar -xf - && diff -r {s} {d}/tar
         mkdir {w}/untar && tar -C {d}/tar -cf - . | tar -C {w}/untar -xf - && diff -r {s} {w}/untar"
    ));
    // cp -a keeps contents, links and times.
    sh(&format!(
        "cp -a {s} {d}/cp && diff -r {s} {d}/cp
         test \"$(stat -c %Y {s}/a/text.txt)\" = \"$(stat -c %Y {d}/cp/a/text.txt)\"
         test \"$(readlink {d}/cp/link)\" = a/text.txt"
    ));
    // rsync -a in and out (temporary files, renames, times).
    sh(&format!(
        "rsync -a {s}/ {d}/rs/ && diff -r {s} {d}/rs
         rsync -a {d}/rs/ {w}/rs-out/ && diff -r {s} {w}/rs-out"
    ));
    // git: clone onto the mount, status clean, checkout an older commit.
    sh(&format!(
        "cd {w} && git init -q repo && cd repo
         git config user.email t@example.com && git config user.name t
         echo one > f && git add f && git commit -qm one
         echo two > f && mkdir sub && echo x > sub/x && git add -A && git commit -qm two
         git clone -q {w}/repo {d}/clone && cd {d}/clone
         test -z \"$(git status --porcelain)\"
         git checkout -q HEAD~1 && test \"$(cat f)\" = one && test ! -e sub/x
         test -z \"$(git status --porcelain)\"
         git checkout -q - && test \"$(cat f)\" = two && git fsck --no-progress 2>&1"
    ));
    // fio writes and verifies its own data.
    sh(&format!(
        "fio --name=verify --filename={d}/fio.dat --size=8M --bs=64k --rw=randwrite \
             --verify=crc32c --do_verify=1 --verify_state_save=0 --ioengine=psync \
             --output=/dev/null"
    ));
    assert!(m.terminate().success());
}

#[test]
fn a_full_origin_fails_the_write_clearly_and_keeps_what_was_committed() {
    let Some(work) = Work::new(&["origin", "mnt"]) else {
        return;
    };
    let (origin, dir) = (work.join("origin"), work.join("mnt"));
    // A 1 MiB file system as the origin: the disk fills during the write.
    let tmpfs = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&origin)
        .status()
        .unwrap();
    assert!(tmpfs.success(), "mount tmpfs (CI is root)");
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg("-l").arg(self.0).status();
        }
    }
    let _tmpfs = Unmount(&origin);
    std::fs::write(origin.join("kept"), b"committed before").unwrap();
    let m = Mount::start(work.path(), &origin, &dir);

    let big = pattern(2 << 20, 5);
    let err = std::fs::write(dir.join("kept"), &big).expect_err("the origin is full");
    assert_eq!(err.raw_os_error(), Some(libc_errno::ENOSPC), "{err}");
    assert_eq!(
        std::fs::read(dir.join("kept")).unwrap(),
        b"committed before",
        "nothing committed, nothing committed lost"
    );
    assert_eq!(
        std::fs::read(origin.join("kept")).unwrap(),
        b"committed before"
    );
    assert_eq!(names(&origin), ["kept"], "no draft is left behind");
    // Room again: writes work.
    std::fs::write(dir.join("kept"), b"after").unwrap();
    assert_eq!(std::fs::read(origin.join("kept")).unwrap(), b"after");
    assert!(m.terminate().success());
}

/// `bench mount --phases opens`, small: every byte right; a `shared`
/// open asks the origin (its version, the name, the attributes), an
/// `exclusive` reopen asks it nothing; serving the first block with the
/// open's answer saves messages.
#[test]
fn bench_mount_opens_compares_the_modes() {
    let Some(_work) = Work::new(&[]) else {
        return;
    };
    let rows = common::json_rows(
        "bench mount --phases opens --open-files 6 --open-passes 1 --origin-delay 1ms --json",
    );
    assert_eq!(rows.len(), 6, "three settings, two steps: {rows:?}");
    let row = |setting: &str, step: &str| {
        rows.iter()
            .find(|r| r["setting"] == setting && r["step"] == step)
            .unwrap_or_else(|| panic!("no {setting} {step}: {rows:?}"))
    };
    for r in &rows {
        assert_eq!(r["wrong_bytes"], 0, "{r}");
        assert_eq!(r["files"], 6, "{r}");
    }
    let per_open = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap();
    let first = "first open on a node";
    assert!(per_open(row("shared", "reopen"), "origin_requests_per_open") >= 1.0);
    assert_eq!(
        per_open(row("exclusive", "reopen"), "origin_requests_per_open"),
        0.0
    );
    assert_eq!(row("exclusive", first)["origin_blocks"], 0, "from peers");
    let two = per_open(
        row("exclusive, two round trips", first),
        "messages_per_open",
    );
    assert!(per_open(row("exclusive", first), "messages_per_open") < two);
}

#[test]
fn bench_mount_reads_a_file_in_turn_from_the_origin_once() {
    let Some(_work) = Work::new(&[]) else {
        return;
    };
    let rows = common::json_rows(
        "bench mount --file-size 4MiB --write-size 1MiB --origin-delay 1ms --json",
    );
    let staggered: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["phase"] == "staggered").collect();
    assert_eq!(staggered.len(), 5, "four readers and a total: {rows:?}");
    assert_eq!(
        staggered[0]["origin_bytes"],
        4 << 20,
        "the first reads the origin"
    );
    for r in &staggered[1..4] {
        assert_eq!(r["origin_bytes"], 0, "the others read peers: {r}");
    }
    assert_eq!(staggered[4]["met"], true);
    let written: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["phase"] == "write-read").collect();
    assert_eq!(
        written.len(),
        5,
        "a writer, three readers and a total: {rows:?}"
    );
    assert_eq!(
        written[4]["met"], true,
        "readers read the writer's memory: {rows:?}"
    );
    // The origin's requests by kind (C2Cfs's Table 2): the writer's close
    // puts its bytes in and commits once; the readers write nothing and
    // read no block from the origin.
    let ops = |r: &serde_json::Value, k: &str| r["origin_ops"][k].as_u64().unwrap();
    assert_eq!(ops(written[0], "commits"), 1, "{}", written[0]);
    assert!(ops(written[0], "writes") >= 1, "{}", written[0]);
    assert!(
        ops(written[0], "changes") >= 1,
        "a draft begun: {}",
        written[0]
    );
    for r in &written[1..4] {
        for k in ["reads", "writes", "changes", "commits"] {
            assert_eq!(ops(r, k), 0, "{k}: {r}");
        }
        assert!(ops(r, "versions") >= 1, "shared mode asks at the open: {r}");
    }
    assert!(rows.iter().all(|r| r["wrong_bytes"] == 0), "{rows:?}");
    // Throughput: three mounts read the file from peers' memory, each
    // beside the FUSE passthrough, then the holder's own mount.
    let through: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["phase"] == "throughput").collect();
    let named = |prefix: &str| -> Vec<&serde_json::Value> {
        through
            .iter()
            .copied()
            .filter(|r| r["step"].as_str().unwrap().starts_with(prefix))
            .collect()
    };
    let from_peers = named("mount 0,")
        .into_iter()
        .chain(named("mount 2,"))
        .chain(named("mount 3,"));
    for r in from_peers {
        assert_eq!(r["origin_bytes"], 0, "{r}");
        assert_eq!(r["peer_blocks"], 64, "every block from a peer: {r}");
    }
    assert_eq!(named("FUSE passthrough").len(), 3, "{through:?}");
    let own = named("mount 1,");
    assert_eq!(own.len(), 1, "{through:?}");
    assert_eq!(own[0]["peer_blocks"], 0, "the holder reads its own memory");
    // Its pages were dropped from the kernel's cache: the reads reached
    // the node.
    assert!(own[0]["local_blocks"].as_u64().unwrap() >= 64, "{own:?}");
    assert!(named("mount / FUSE passthrough").len() == 1, "{through:?}");
}
