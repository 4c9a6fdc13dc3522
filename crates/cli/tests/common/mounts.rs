//! Running `coopcache mount` from tests: mounts of one cluster over a
//! temporary origin, and what the tests check them with.
#![allow(dead_code)] // each test crate uses some of these

use super::common::coopcache_args;
use serde_json::Value;
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::thread;
use std::time::{Duration, Instant};

pub const PATIENCE: Duration = Duration::from_secs(20);

/// The tests here run one at a time. Every `close` of a file commits it
/// (close-to-open, as NFS flushes on every close), and that includes the
/// close a forked child makes of the descriptors it inherited when it
/// execs: another test thread starting a process would commit a file this
/// one holds open for writing.
pub static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A mount test's place: the other mount tests held off (see [`SERIAL`]),
/// and a temporary directory.
pub struct Work {
    _serial: std::sync::MutexGuard<'static, ()>,
    tmp: tempfile::TempDir,
}

impl Work {
    /// Takes the turn and makes `dirs` in a new temporary directory;
    /// `None` (the test skips) where FUSE cannot mount, outside CI.
    pub fn new(dirs: &[&str]) -> Option<Work> {
        let serial = serial();
        if !can_mount() {
            return None;
        }
        let tmp = tempfile::tempdir().unwrap();
        for d in dirs {
            std::fs::create_dir_all(tmp.path().join(d)).unwrap();
        }
        Some(Work {
            _serial: serial,
            tmp,
        })
    }

    /// The temporary directory.
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// `name` in it.
    pub fn join(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }
}

/// The names in `dir`, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// Whether this machine can mount FUSE file systems; in CI it must.
pub fn can_mount() -> bool {
    let root = rustix_uid() == 0;
    let fuse = Path::new("/dev/fuse").exists();
    let ok = fuse && (root || Path::new("/usr/bin/fusermount3").exists());
    if !ok {
        assert!(
            std::env::var_os("COOPCACHE_ALLOW_SKIP").is_some(),
            "the mount tests need FUSE (root: {root}, /dev/fuse: {fuse}): scripts/test-deps.sh installs fuse3, or set COOPCACHE_ALLOW_SKIP=1 to skip them"
        );
        eprintln!("SKIPPED: no /dev/fuse or no permission to mount");
    }
    ok
}

pub fn rustix_uid() -> u32 {
    // The owner of /proc/self is this process's effective uid.
    std::fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid())
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `coopcache mount`, killed on drop (the next mount of the same
/// directory recovers what that leaves).
pub struct Mount {
    pub child: Child,
    dir: PathBuf,
    http: String,
    listen: String,
    pub log: PathBuf,
}

impl Mount {
    pub fn start(work: &Path, origin: &Path, dir: &Path) -> Mount {
        Mount::start_named(work, origin, dir, "node", None)
    }

    /// Node `name` of a cluster whose keys are in `work/keys`, joining
    /// `join` if given.
    pub fn start_named(
        work: &Path,
        origin: &Path,
        dir: &Path,
        name: &str,
        join: Option<&Mount>,
    ) -> Mount {
        Mount::start_env(work, origin, dir, name, join, &[])
    }

    /// [`Mount::start_named`] with `env` set for the daemon (an S3
    /// origin's endpoint and keys).
    pub fn start_env(
        work: &Path,
        origin: &Path,
        dir: &Path,
        name: &str,
        join: Option<&Mount>,
        env: &[(String, String)],
    ) -> Mount {
        let http = format!("127.0.0.1:{}", free_port());
        let listen = format!("127.0.0.1:{}", free_port());
        let log = work.join(format!("mount-{name}-{}.log", free_port()));
        let mut command = Command::new(env!("CARGO_BIN_EXE_coopcache"));
        command
            .arg("mount")
            .arg(dir)
            .args(["--name", name])
            .args(["--origin", origin.to_str().unwrap()])
            .args(["--data-dir", work.join("keys").to_str().unwrap()])
            // The first mount of a test creates the cluster; the others
            // find its CA and are issued their certificates from it.
            .arg("--init")
            .args(["--listen", &listen])
            .args(["--http", &http])
            .args(["--memory", "64MiB"]);
        if let Some(seed) = join {
            command.args(["--join", &seed.listen]);
        }
        command.envs(env.iter().map(|(k, v)| (k, v)));
        let child = super::common::spawn_logging(&mut command, &log);
        let mut m = Mount {
            child,
            dir: dir.into(),
            http,
            listen,
            log,
        };
        m.wait_mounted();
        m
    }

    pub fn log_text(&self) -> String {
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

    pub fn status(&self) -> Value {
        let out = coopcache_args(&["status", "--node", &self.http, "--json"]);
        assert!(out.status.success(), "status: {:?}", out);
        serde_json::from_slice(&out.stdout).unwrap()
    }

    pub fn terminate(mut self) -> std::process::ExitStatus {
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
        // A failed test leaves no dead mount behind.
        if mounted(&self.dir) {
            let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        }
    }
}

/// Waits until `m` sees `n` members.
pub fn wait_members(m: &Mount, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while m.status()["members"].as_array().map_or(0, Vec::len) < n {
        assert!(
            Instant::now() < deadline,
            "{} does not see {n} members",
            m.status()
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// `exclusive` mode, with the members' agreement period shortened to a
/// second (`--commit-stable`, 5 s by default): the environment of a mount
/// whose opens its file's manager answers.
pub fn exclusive_env() -> Vec<(String, String)> {
    vec![
        ("COOPCACHE_CONSISTENCY".into(), "exclusive".into()),
        ("COOPCACHE_COMMIT_STABLE".into(), "1s".into()),
    ]
}

/// Waits until every one of `mounts` says its members have agreed long
/// enough for its manager side to answer opens (`commits_stable`).
pub fn wait_commits_stable(mounts: &[&Mount]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    for m in mounts {
        while m.status()["commits_stable"] != Value::Bool(true) {
            assert!(Instant::now() < deadline, "not stable: {}", m.status());
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Whether `dir` is a FUSE mount point of coopcache's, by the mount table.
pub fn mounted(dir: &Path) -> bool {
    let table = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let dir = dir.to_str().unwrap();
    table
        .lines()
        .any(|l| l.starts_with("coopcache ") && l.split(' ').nth(1) == Some(dir))
}

pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u64 * 2654435761 % 251) as u8 ^ seed)
        .collect()
}

pub fn reads(status: &Value, level: &str) -> u64 {
    status["reads"][level].as_u64().unwrap_or(0)
}

pub fn errno_of(r: std::io::Result<impl Sized>) -> Option<i32> {
    r.err().and_then(|e| e.raw_os_error())
}

/// The errno values these tests expect (Linux).
pub mod libc_errno {
    pub const EPERM: i32 = 1;
    pub const EIO: i32 = 5;
    pub const ENOENT: i32 = 2;
    pub const EEXIST: i32 = 17;
    pub const ENOTDIR: i32 = 20;
    pub const EISDIR: i32 = 21;
    pub const EROFS: i32 = 30;
    pub const ENOTEMPTY: i32 = 39;
    pub const ENAMETOOLONG: i32 = 36;
    pub const ENOTSUP: i32 = 95;
    pub const ENOSPC: i32 = 28;
    pub const ENOTCONN: i32 = 107;
    pub const EXDEV: i32 = 18;
}

/// Runs `script` with `sh -e`, failing the test with its output.
pub fn sh(script: &str) {
    let out = Command::new("sh").args(["-ec", script]).output().unwrap();
    assert!(
        out.status.success(),
        "{script}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

pub use super::common::have;
