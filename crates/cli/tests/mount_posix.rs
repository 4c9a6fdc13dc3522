//! The mount as POSIX programs expect it, tried with the programs
//! themselves (issue "`coopcache mount` behaves as a POSIX file system"):
//! what one descriptor wrote and synced is what it reads back, and a
//! database's transactions all survive.

use crate::mounts::*;
use std::process::Command;

/// Runs `script` with python3 and returns its stdout, failing the test with
/// its stderr if it fails.
fn python(script: &str) -> String {
    let out = Command::new("python3")
        .args(["-c", script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `pwrite; fsync; pread` on one descriptor reads what was written, on a
/// file that existed before (its open saw an older version) and on one
/// the same descriptor created, in both consistency modes; sqlite, which
/// does exactly that, keeps every row of a script and of autocommit
/// inserts.
#[test]
fn what_a_descriptor_synced_is_what_it_reads_back() {
    for consistency in ["shared", "exclusive"] {
        synced_reads(consistency);
    }
}

fn synced_reads(consistency: &str) {
    let Some(work) = Work::new(&["origin", "mnt"]) else {
        return;
    };
    if !have("python3") || !have("sqlite3") {
        return;
    }
    let (origin, dir) = (work.join("origin"), work.join("mnt"));
    std::fs::write(origin.join("old"), b"0123456789").unwrap();
    let env = [("COOPCACHE_CONSISTENCY".to_string(), consistency.to_string())];
    let m = Mount::start_env(work.path(), &origin, &dir, "node", None, &env);
    let d = dir.display();

    let got = python(&format!(
        "import os
fd = os.open('{d}/old', os.O_RDWR)
assert os.pread(fd, 10, 0) == b'0123456789'
os.pwrite(fd, b'ab', 0)
print(os.pread(fd, 4, 0).decode())
os.fsync(fd)
print(os.pread(fd, 4, 0).decode())
os.pwrite(fd, b'XY', 8)
os.fsync(fd)
os.fsync(fd)
print(os.pread(fd, 10, 0).decode())
print(os.fstat(fd).st_size)
os.close(fd)
fd = os.open('{d}/new', os.O_RDWR | os.O_CREAT, 0o644)
os.pwrite(fd, b'first', 0)
os.fsync(fd)
print(os.pread(fd, 5, 0).decode())
os.close(fd)"
    ));
    assert_eq!(
        got, "ab23\nab23\nab234567XY\n10\nfirst\n",
        "{consistency}: a descriptor's reads after its own writes and fsyncs"
    );
    assert_eq!(std::fs::read(origin.join("old")).unwrap(), b"ab234567XY");

    // The reproduction: three inserts from a script, then fifty
    // autocommit ones (each a transaction: journal, write, fsync, read).
    sh(&format!(
        "printf 'create table t(x);\\ninsert into t values(1);\\ninsert into t values(2);\\ninsert into t values(3);\\n' \
             | sqlite3 {d}/t.db
         test \"$(sqlite3 {d}/t.db 'select count(*) from t')\" = 3
         for i in $(seq 1 50); do sqlite3 {d}/t.db \"insert into t values($i)\"; done
         test \"$(sqlite3 {d}/t.db 'select count(*) from t')\" = 53
         test \"$(sqlite3 {d}/t.db 'pragma integrity_check')\" = ok"
    ));
    assert!(m.terminate().success());
}

/// A tmpfs of `size`, unmounted when dropped.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &std::path::Path, size: &str) -> Tmpfs {
        sh(&format!(
            "mount -t tmpfs -o size={size} tmpfs {}",
            dir.display()
        ));
        Tmpfs(dir.into())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// `cat src > f` and `dd of=f` (the shell opens and truncates, dup2s, and
/// closes the first descriptor: one commit of the empty file, then the
/// rest) write the file's bytes into the origin once: a 9 MiB file fits on
/// a 16 MiB origin, where writing it twice failed with ENOSPC and left an
/// empty file.
#[test]
fn a_redirected_file_is_written_to_the_origin_once() {
    let Some(work) = Work::new(&["origin", "mnt"]) else {
        return;
    };
    let (origin, dir) = (work.join("origin"), work.join("mnt"));
    let _tmpfs = Tmpfs::mount(&origin, "16m");
    let m = Mount::start(work.path(), &origin, &dir);
    let (d, w, o) = (dir.display(), work.path().display(), origin.display());
    sh(&format!(
        "head -c 9M /dev/urandom > {w}/src
         cat {w}/src > {d}/f
         cmp {w}/src {d}/f && cmp {w}/src {o}/f
         rm {d}/f
         dd if={w}/src of={d}/g bs=1M status=none
         cmp {w}/src {o}/g"
    ));
    assert!(m.terminate().success());
}

/// An unlinked file stays readable and writable through the descriptors
/// that hold it on this node, readers' too (POSIX), and is gone for good
/// at their last close: Python's
/// `tempfile.TemporaryFile` (create, unlink, then use) works and leaves
/// nothing; a file unlinked under a writer does not come back at its
/// close; the name is free at once for a new file.
#[test]
fn an_unlinked_file_lives_until_its_writers_close_it() {
    let Some(work) = Work::new(&["origin", "mnt"]) else {
        return;
    };
    if !have("python3") {
        return;
    }
    let (origin, dir) = (work.join("origin"), work.join("mnt"));
    std::fs::write(origin.join("kept"), b"committed bytes").unwrap();
    let m = Mount::start(work.path(), &origin, &dir);
    let d = dir.display();
    let got = python(&format!(
        "import os, tempfile
with tempfile.TemporaryFile(dir='{d}') as t:
    t.write(b'scratch data')
    t.seek(0)
    print(t.read().decode(), os.fstat(t.fileno()).st_size)
fd = os.open('{d}/kept', os.O_RDWR)
os.unlink('{d}/kept')
print(os.path.exists('{d}/kept'), os.pread(fd, 9, 0).decode())
os.pwrite(fd, b'CHANGED', 0)
print(os.pread(fd, 15, 0).decode(), os.fstat(fd).st_size)
with open('{d}/kept', 'w') as new:
    new.write('a new file')
os.fsync(fd)
os.close(fd)
print(open('{d}/kept').read())"
    ));
    assert_eq!(
        got,
        "scratch data 12\nFalse committed\nCHANGEDed bytes 15\na new file\n"
    );
    // A reader holding a file keeps reading it after the unlink (it got
    // ENOENT), and it is gone at its close.
    std::fs::write(origin.join("read"), vec![7u8; 300_000]).unwrap();
    let got = python(&format!(
        "import os
fd = os.open('{d}/read', os.O_RDONLY)
head = os.pread(fd, 10, 0)
os.unlink('{d}/read')
rest = os.pread(fd, 300_000, 10)
print(len(head) + len(rest), set(head + rest), os.fstat(fd).st_nlink)
os.close(fd)
print(os.path.exists('{d}/read'))"
    ));
    assert_eq!(got, "300000 {7} 0\nFalse\n");
    // A writer's file unlinked under it (the reproduction).
    sh(&format!(
        "(for i in 1 2 3; do echo line $i; sleep 0.3; done > {d}/log) &
         sleep 0.45; rm {d}/log; wait
         test ! -e {d}/log"
    ));
    let mut names: Vec<_> = std::fs::read_dir(&origin)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["kept"], "nothing left behind at the origin");
    assert_eq!(std::fs::read(origin.join("kept")).unwrap(), b"a new file");
    assert!(m.terminate().success());
}

/// Modes are the caller's, its umask applied once: `mkdir` with 0777 under
/// umask 0 gives 0777 (the daemon's own umask used to clear 0022 again),
/// under 022 gives 0755; a file created 0666 under umask 0 is 0666.
#[test]
fn modes_are_the_callers_with_its_umask_applied_once() {
    let Some(work) = Work::new(&["origin", "mnt"]) else {
        return;
    };
    if !have("python3") {
        return;
    }
    let (origin, dir) = (work.join("origin"), work.join("mnt"));
    let m = Mount::start(work.path(), &origin, &dir);
    let d = dir.display();
    let got = python(&format!(
        "import os, stat
os.umask(0)
os.mkdir('{d}/open', 0o777)
os.close(os.open('{d}/f', os.O_CREAT | os.O_WRONLY, 0o666))
os.umask(0o022)
os.mkdir('{d}/closed', 0o777)
os.mkdir('{d}/sticky', 0o1777)
for n in ['open', 'f', 'closed', 'sticky']:
    print(n, oct(stat.S_IMODE(os.stat('{d}/' + n).st_mode)))"
    ));
    assert_eq!(got, "open 0o777\nf 0o666\nclosed 0o755\nsticky 0o1755\n");
    assert!(m.terminate().success());
}

/// `mknod` of a regular file creates it empty with the caller's mode (it
/// was ENOSYS); FIFOs, sockets and devices are refused with EPERM, never
/// ENOSYS, and leave nothing behind.
#[test]
fn mknod_makes_regular_files_and_refuses_special_ones_with_eperm() {
    let Some(work) = Work::new(&["origin", "mnt"]) else {
        return;
    };
    if !have("python3") {
        return;
    }
    let (origin, dir) = (work.join("origin"), work.join("mnt"));
    let m = Mount::start(work.path(), &origin, &dir);
    let d = dir.display();
    let got = python(&format!(
        "import errno, os, socket, stat
os.umask(0o022)
os.mknod('{d}/plain', 0o666 | stat.S_IFREG)
st = os.stat('{d}/plain')
print(oct(stat.S_IMODE(st.st_mode)), st.st_size)
def refused(make):
    try:
        make()
        return 'made'
    except OSError as e:
        return errno.errorcode[e.errno]
print(refused(lambda: os.mkfifo('{d}/fifo')))
print(refused(lambda: socket.socket(socket.AF_UNIX).bind('{d}/sock')))
print(refused(lambda: os.mknod('{d}/null', 0o600 | stat.S_IFCHR, os.makedev(1, 3))))"
    ));
    assert_eq!(got, "0o644 0\nEPERM\nEPERM\nEPERM\n");
    assert_eq!(names(&origin), ["plain"]);
    assert!(m.terminate().success());
}

/// `df` on a mount of a directory shows the directory's file system (it
/// showed 0 of 0), here a 16 MiB tmpfs.
#[test]
fn df_shows_the_origin_directorys_space() {
    let Some(work) = Work::new(&["origin", "mnt"]) else {
        return;
    };
    let (origin, dir) = (work.join("origin"), work.join("mnt"));
    let _tmpfs = Tmpfs::mount(&origin, "16m");
    let m = Mount::start(work.path(), &origin, &dir);
    let stat = |p: &std::path::Path| {
        let out = Command::new("stat")
            .args(["-f", "-c", "%S %b %l"])
            .arg(p)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let (theirs, ours) = (stat(&origin), stat(&dir));
    assert_eq!(ours, theirs, "fragment size, blocks, longest name");
    let fields: Vec<u64> = ours
        .split_whitespace()
        .map(|f| f.parse().unwrap())
        .collect();
    assert_eq!(fields[0] * fields[1], 16 << 20);
    assert!(m.terminate().success());
}

/// In `exclusive` mode a directory's rename is refused with `EXDEV` (so
/// `mv` copies it), but only after what POSIX's rename says first: a
/// non-empty target directory is `ENOTEMPTY` (it was `EXDEV`), a file
/// target `ENOTDIR`, a target inside the source `EINVAL`.
#[test]
fn an_exclusive_directory_rename_says_what_posix_says_first() {
    let Some(work) = Work::new(&["origin/a/x", "origin/full/y", "mnt"]) else {
        return;
    };
    if !have("python3") {
        return;
    }
    let (origin, dir) = (work.join("origin"), work.join("mnt"));
    std::fs::write(origin.join("full/y/f"), b"f").unwrap();
    std::fs::write(origin.join("file"), b"f").unwrap();
    std::fs::create_dir(origin.join("empty")).unwrap();
    let env = [("COOPCACHE_CONSISTENCY".to_string(), "exclusive".to_string())];
    let m = Mount::start_env(work.path(), &origin, &dir, "node", None, &env);
    let d = dir.display();
    let got = python(&format!(
        "import os, errno
for to in ['full', 'file', 'a/x/in', 'empty', 'new']:
    try:
        os.rename('{d}/a', '{d}/' + to)
        print(to, 'renamed')
    except OSError as e:
        print(to, errno.errorcode[e.errno])"
    ));
    assert_eq!(
        got,
        "full ENOTEMPTY\nfile ENOTDIR\na/x/in EINVAL\nempty EXDEV\nnew EXDEV\n"
    );
    assert!(m.terminate().success());
}

/// A directory origin's access and change times and link counts reach
/// `stat` (they were all the modification time, and links a constant):
/// `utime` sets the access time apart from the modification time, the
/// change time moves with it, a directory counts its subdirectories, and
/// a file unlinked while held open has no link left.
#[test]
fn times_and_links_are_the_origins() {
    let Some(work) = Work::new(&["origin/d", "mnt"]) else {
        return;
    };
    if !have("python3") {
        return;
    }
    let (origin, dir) = (work.join("origin"), work.join("mnt"));
    std::fs::write(origin.join("f"), b"data").unwrap();
    let m = Mount::start(work.path(), &origin, &dir);
    let d = dir.display();
    let got = python(&format!(
        "import os, time
os.utime('{d}/f', (1000, 2000))
st = os.stat('{d}/f')
print(int(st.st_atime), int(st.st_mtime), st.st_ctime > time.time() - 60, st.st_nlink)
os.mkdir('{d}/d/a')
os.mkdir('{d}/d/b')
print(os.stat('{d}/d').st_nlink)
fd = os.open('{d}/g', os.O_CREAT | os.O_RDWR, 0o644)
os.write(fd, b'x')
os.unlink('{d}/g')
print(os.fstat(fd).st_nlink)
os.close(fd)"
    ));
    assert_eq!(got, "1000 2000 True 1\n4\n0\n");
    assert!(m.terminate().success());
}

/// `fsync` succeeds wherever a program may call it: on a descriptor whose
/// writes a `dup`'s close already committed (it flushes that version to
/// the origin's disk), on a read-only descriptor, and on a file unlinked
/// while open; the bytes it synced are the origin's.
#[test]
fn fsync_flushes_what_was_committed_on_any_descriptor() {
    let Some(work) = Work::new(&["origin", "mnt"]) else {
        return;
    };
    if !have("python3") {
        return;
    }
    let (origin, dir) = (work.join("origin"), work.join("mnt"));
    let m = Mount::start(work.path(), &origin, &dir);
    let d = dir.display();
    let got = python(&format!(
        "import os
fd = os.open('{d}/f', os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b'synced')
os.close(os.dup(fd))
os.fsync(fd)
r = os.open('{d}/f', os.O_RDONLY)
os.fsync(r)
os.close(r)
os.close(fd)
t = os.open('{d}/t', os.O_CREAT | os.O_RDWR, 0o644)
os.write(t, b'gone')
os.unlink('{d}/t')
os.fsync(t)
os.close(t)
print('ok')"
    ));
    assert_eq!(got, "ok\n");
    assert_eq!(std::fs::read(origin.join("f")).unwrap(), b"synced");
    assert!(!origin.join("t").exists());
    assert!(m.terminate().success());
}

/// A mount unmounted from outside (`umount`, as an administrator or a
/// shutdown does) ends its daemon, as `rclone mount` and `sshfs` end: it
/// went on serving without a mount, and its next start found the port
/// taken.
#[test]
fn unmounted_from_outside_the_daemon_exits() {
    let Some(work) = Work::new(&["origin", "mnt"]) else {
        return;
    };
    let (origin, dir) = (work.join("origin"), work.join("mnt"));
    let mut m = Mount::start(work.path(), &origin, &dir);
    assert!(Command::new("umount").arg(&dir).status().unwrap().success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let code = loop {
        if let Some(code) = m.child.try_wait().unwrap() {
            break code;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the daemon outlived its mount:\n{}",
            m.log_text()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(code.success(), "{code}:\n{}", m.log_text());
    assert!(m.log_text().contains("unmounted from outside"));
}

/// `fallocate` as programs call it: mode 0 (`fallocate -l`,
/// `posix_fallocate`) makes the file that long in zeros, `KEEP_SIZE`
/// succeeds and keeps the size, a hole is `EOPNOTSUPP` (`ENOTSUP`, the
/// same number; every mode was
/// `EOPNOTSUPP`: fuser answered `ENOSYS`), and what was allocated reaches
/// the origin at the close.
#[test]
fn fallocate_extends_files_and_refuses_holes() {
    let Some(work) = Work::new(&["origin", "mnt"]) else {
        return;
    };
    if !have("python3") {
        return;
    }
    let (origin, dir) = (work.join("origin"), work.join("mnt"));
    let m = Mount::start(work.path(), &origin, &dir);
    let d = dir.display();
    let got = python(&format!(
        "import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
fd = os.open('{d}/f', os.O_CREAT | os.O_RDWR, 0o644)
os.write(fd, b'head')
print(libc.fallocate(fd, 0, 0, 65536), os.fstat(fd).st_size)
print(libc.fallocate(fd, 1, 0, 1 << 20), os.fstat(fd).st_size)
r = libc.fallocate(fd, 3, 0, 4096)
print(r, errno.errorcode[ctypes.get_errno()])
os.posix_fallocate(fd, 65536, 4096)
print(os.fstat(fd).st_size)
os.close(fd)"
    ));
    assert_eq!(got, "0 65536\n0 65536\n-1 ENOTSUP\n69632\n");
    let bytes = std::fs::read(origin.join("f")).unwrap();
    assert_eq!(bytes.len(), 69632);
    assert_eq!(&bytes[..4], b"head");
    assert!(bytes[4..].iter().all(|&b| b == 0));
    assert!(m.terminate().success());
}

/// The mount point itself takes a mode, times and an owner like any
/// directory (each was `ENOENT`, so `tar xf -C mnt` failed at its end
/// setting `.`'s times and owner), and the origin's root keeps them.
#[test]
fn the_mount_points_own_attributes_are_set_at_the_origins_root() {
    let Some(work) = Work::new(&["origin", "mnt"]) else {
        return;
    };
    if !have("python3") {
        return;
    }
    let (origin, dir) = (work.join("origin"), work.join("mnt"));
    let m = Mount::start(work.path(), &origin, &dir);
    let d = dir.display();
    let got = python(&format!(
        "import os
os.chmod('{d}', 0o751)
os.utime('{d}', (1000, 2000))
st = os.stat('{d}')
os.chown('{d}', st.st_uid, st.st_gid)
print(oct(st.st_mode & 0o7777), int(st.st_atime), int(st.st_mtime))"
    ));
    assert_eq!(got, "0o751 1000 2000\n");
    let st = std::fs::metadata(&origin).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!((st.mode() & 0o7777, st.mtime()), (0o751, 2000));
    assert!(m.terminate().success());
}

/// A symbolic link's times set without following it are kept, in both
/// consistency modes (in `exclusive` mode the change went to a manager,
/// whose look at the origin followed the link and moved its atime).
#[test]
fn a_links_own_times_are_kept() {
    for consistency in ["shared", "exclusive"] {
        let Some(work) = Work::new(&["origin", "mnt"]) else {
            return;
        };
        if !have("python3") {
            return;
        }
        let (origin, dir) = (work.join("origin"), work.join("mnt"));
        std::fs::write(origin.join("target"), b"t").unwrap();
        let env = [("COOPCACHE_CONSISTENCY".to_string(), consistency.to_string())];
        let m = Mount::start_env(work.path(), &origin, &dir, "node", None, &env);
        let d = dir.display();
        let got = python(&format!(
            "import os
os.symlink('target', '{d}/l')
os.utime('{d}/l', (1960000000, 1970000000), follow_symlinks=False)
st = os.lstat('{d}/l')
print(int(st.st_atime), int(st.st_mtime))"
        ));
        assert_eq!(got, "1960000000 1970000000\n", "{consistency}");
        assert!(m.terminate().success());
    }
}

/// Appends (`O_APPEND`) from two nodes to one file, their opens both
/// before either close, both survive (the second close used to lay its
/// line over the first's), and a shell's `>>` from both nodes keeps every
/// line, in both consistency modes.
#[test]
fn appends_from_two_nodes_both_survive() {
    for consistency in ["shared", "exclusive"] {
        appends_from_two_nodes(consistency);
    }
}

fn appends_from_two_nodes(consistency: &str) {
    let Some(work) = Work::new(&["origin", "a", "b"]) else {
        return;
    };
    if !have("python3") {
        return;
    }
    let origin = work.join("origin");
    let (a_dir, b_dir) = (work.join("a"), work.join("b"));
    std::fs::write(origin.join("log"), b"start\n").unwrap();
    let env = [("COOPCACHE_CONSISTENCY".to_string(), consistency.to_string())];
    let a = Mount::start_env(work.path(), &origin, &a_dir, "a", None, &env);
    let b = Mount::start_env(work.path(), &origin, &b_dir, "b", Some(&a), &env);
    let (da, db) = (a_dir.display(), b_dir.display());
    python(&format!(
        "import os
fa = os.open('{da}/log', os.O_WRONLY | os.O_APPEND)
fb = os.open('{db}/log', os.O_WRONLY | os.O_APPEND)
os.write(fa, b'from a\\n')
os.write(fb, b'from b\\n')
os.close(fa)
os.close(fb)"
    ));
    sh(&format!(
        "for i in 1 2 3; do echo a$i >> {da}/log; echo b$i >> {db}/log; done"
    ));
    let log = std::fs::read_to_string(origin.join("log")).unwrap();
    assert_eq!(
        log, "start\nfrom a\nfrom b\na1\nb1\na2\nb2\na3\nb3\n",
        "{consistency}"
    );
    assert!(b.terminate().success());
    assert!(a.terminate().success());
}

/// Names past 255 bytes are `ENAMETOOLONG` for every call that takes one,
/// as on the kernel's own file system, and a path's length is counted
/// from the mount point, not from the origin's place: with the origin
/// directory 3,700 bytes deep, a file 1,000 bytes below the mount point
/// is made, found and removed (the origin's own path to it is past
/// `PATH_MAX`). (A directory origin refused long names before the mount
/// had limits of its own; an S3 origin answered `EIO`: `mount_s3`.)
#[test]
fn names_are_too_long_by_the_mounts_own_limits() {
    let deep = vec!["o".repeat(250); 15].join("/");
    let Some(work) = Work::new(&["plain", &format!("origin/{deep}"), "mnt"]) else {
        return;
    };
    if !have("python3") {
        return;
    }
    let (origin, dir) = (work.join("origin").join(&deep), work.join("mnt"));
    assert!(origin.as_os_str().len() > 3_700);
    let m = Mount::start(work.path(), &origin, &dir);
    let script = |d: &std::path::Path| {
        python(&format!(
            "import errno, os
os.chdir('{}')
def tried(what, call):
    try:
        call()
        print(what, 'ok')
    except OSError as e:
        print(what, errno.errorcode[e.errno])
fits, over = 'n' * 255, 'n' * 256
tried('create 255', lambda: os.close(os.open(fits, os.O_CREAT | os.O_WRONLY, 0o644)))
tried('stat 255', lambda: os.stat(fits))
tried('create 256', lambda: os.open(over, os.O_CREAT | os.O_WRONLY, 0o644))
tried('stat 256', lambda: os.stat(over))
tried('mkdir 256', lambda: os.mkdir(over))
tried('rename to 256', lambda: os.rename(fits, over))
tried('symlink 256', lambda: os.symlink(fits, over))
tried('unlink 256', lambda: os.unlink(over))
level = 'd' * 249
for i in range(4):
    os.mkdir(level)
    os.chdir(level)
tried('deep create', lambda: open('f', 'w').write('deep'))
tried('deep read', lambda: open('f').read() == 'deep' or 1 / 0)
tried('deep unlink', lambda: os.unlink('f'))",
            d.display()
        ))
    };
    let expected = "create 255 ok\nstat 255 ok\n\
                    create 256 ENAMETOOLONG\nstat 256 ENAMETOOLONG\n\
                    mkdir 256 ENAMETOOLONG\nrename to 256 ENAMETOOLONG\n\
                    symlink 256 ENAMETOOLONG\nunlink 256 ENAMETOOLONG\n\
                    deep create ok\ndeep read ok\ndeep unlink ok\n";
    assert_eq!(script(&work.join("plain")), expected, "a plain directory");
    assert_eq!(script(&dir), expected, "the mount");
    assert!(m.terminate().success());
}
