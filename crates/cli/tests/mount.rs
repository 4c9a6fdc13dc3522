//! `coopcache mount`: the origin through FUSE, file bytes through the
//! cooperative cache. Needs /dev/fuse and root (or fusermount3); CI has
//! both, and there a missing one fails the test instead of skipping it.

mod common;
use common::coopcache_args;
use serde_json::Value;
use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(20);

/// Whether this machine can mount FUSE file systems; in CI it must.
fn can_mount() -> bool {
    let root = rustix_uid() == 0;
    let fuse = Path::new("/dev/fuse").exists();
    let ok = fuse && (root || Path::new("/usr/bin/fusermount3").exists());
    if !ok {
        assert!(
            std::env::var("CI").is_err(),
            "CI must be able to mount FUSE (root: {root}, /dev/fuse: {fuse})"
        );
        eprintln!("SKIPPED: no /dev/fuse or no permission to mount");
    }
    ok
}

fn rustix_uid() -> u32 {
    // The owner of /proc/self is this process's effective uid.
    std::fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `coopcache mount`, killed on drop (the next mount of the same
/// directory recovers what that leaves).
struct Mount {
    child: Child,
    http: String,
    log: PathBuf,
}

impl Mount {
    fn start(work: &Path, origin: &Path, dir: &Path) -> Mount {
        let http = format!("127.0.0.1:{}", free_port());
        let log = work.join(format!("mount-{}.log", free_port()));
        let child = Command::new(env!("CARGO_BIN_EXE_coopcache"))
            .arg("mount")
            .arg(dir)
            .args(["--origin", origin.to_str().unwrap()])
            .args(["--data-dir", work.join("keys").to_str().unwrap()])
            .args(["--listen", &format!("127.0.0.1:{}", free_port())])
            .args(["--http", &http])
            .args(["--memory", "64MiB"])
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut m = Mount { child, http, log };
        m.wait_mounted();
        m
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_mounted(&mut self) {
        let deadline = Instant::now() + PATIENCE;
        // The log line, not the mount table: a dead mount left by a killed
        // daemon is in the table too.
        while !self.log_text().contains("origin mounted") {
            if let Ok(Some(code)) = self.child.try_wait() {
                panic!("coopcache mount exited with {code}:\n{}", self.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "not mounted after {PATIENCE:?}:\n{}",
                self.log_text()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    fn status(&self) -> Value {
        let out = coopcache_args(&["status", "--node", &self.http, "--json"]);
        assert!(out.status.success(), "status: {:?}", out);
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(code) = self.child.try_wait().unwrap() {
                return code;
            }
            assert!(Instant::now() < deadline, "SIGTERM did not stop the mount");
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `dir` is a FUSE mount point of coopcache's, by the mount table.
fn mounted(dir: &Path) -> bool {
    let table = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let dir = dir.to_str().unwrap();
    table
        .lines()
        .any(|l| l.starts_with("coopcache ") && l.split(' ').nth(1) == Some(dir))
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u64 * 2654435761 % 251) as u8 ^ seed)
        .collect()
}

fn reads(status: &Value, level: &str) -> u64 {
    status["reads"][level].as_u64().unwrap_or(0)
}

fn errno_of(r: std::io::Result<impl Sized>) -> Option<i32> {
    r.err().and_then(|e| e.raw_os_error())
}

#[test]
fn the_origin_mounts_read_only_through_the_cache_and_unmounts_on_sigterm() {
    if !can_mount() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let (origin, dir) = (work.path().join("origin"), work.path().join("mnt"));
    std::fs::create_dir_all(origin.join("sub/deeper")).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    let big = pattern(1_000_000, 1);
    std::fs::write(origin.join("big.bin"), &big).unwrap();
    std::fs::write(origin.join("sub/small.txt"), b"hello\n").unwrap();
    std::fs::write(origin.join("empty"), b"").unwrap();
    symlink("big.bin", origin.join("link")).unwrap();
    let m = Mount::start(work.path(), &origin, &dir);

    // Names, kinds and sizes as the origin has them.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["big.bin", "empty", "link", "sub"]);
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
    let erofs = Some(libc_errno::EROFS);
    assert_eq!(errno_of(std::fs::write(dir.join("new"), b"x")), erofs);
    assert_eq!(errno_of(std::fs::write(dir.join("big.bin"), b"x")), erofs);
    assert_eq!(errno_of(std::fs::create_dir(dir.join("d"))), erofs);
    assert_eq!(errno_of(std::fs::remove_file(dir.join("empty"))), erofs);
    assert_eq!(
        errno_of(std::fs::rename(dir.join("empty"), dir.join("e2"))),
        erofs
    );
    assert_eq!(errno_of(symlink("x", dir.join("l2"))), erofs);

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
    if !can_mount() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let (origin, dir) = (work.path().join("origin"), work.path().join("mnt"));
    std::fs::create_dir_all(&origin).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
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
    drop(m);

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

/// The errno values these tests expect (Linux).
mod libc_errno {
    pub const ENOENT: i32 = 2;
    pub const EISDIR: i32 = 21;
    pub const EROFS: i32 = 30;
    pub const ENOTCONN: i32 = 107;
}
