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
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The shell blocks of the README's section `heading`, in order.
fn blocks(readme: &str, heading: &str) -> Vec<String> {
    let start = readme.find(heading).expect("the tour's heading");
    let rest = &readme[start + heading.len()..];
    let section = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    for line in section.lines() {
        match (&mut block, line.trim_end()) {
            (None, "```sh") => block = Some(String::new()),
            (Some(_), "```") => out.extend(block.take()),
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    out
}

/// A block's commands: continuation lines joined, comments kept (bash
/// ignores them).
fn commands(block: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut joined = String::new();
    for line in block.lines() {
        match line.strip_suffix('\\') {
            Some(head) => joined.push_str(head),
            None => {
                joined.push_str(line);
                out.push(std::mem::take(&mut joined));
            }
        }
    }
    out.retain(|c| !c.trim().is_empty());
    out
}

/// The shell the tour runs in.
struct Shell {
    path: String,
    home: PathBuf,
    daemons: Vec<Child>,
}

impl Shell {
    fn new(home: &Path) -> Shell {
        let bin = Path::new(env!("CARGO_BIN_EXE_coopcache"));
        let dir = bin.parent().expect("the binary's directory");
        let path = format!(
            "{}:{}",
            dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        std::fs::create_dir_all(home).unwrap();
        Shell {
            path,
            home: home.to_path_buf(),
            daemons: Vec::new(),
        }
    }

    fn command(&self, line: &str, cwd: &Path) -> Command {
        let mut c = Command::new("bash");
        c.args(["-euo", "pipefail", "-c", line])
            .current_dir(cwd)
            .env("PATH", &self.path)
            .env("HOME", &self.home)
            .env_remove("COOPCACHE_JOIN_TOKEN");
        c
    }

    /// Runs `line` to its end; its stdout as text. Fails the test if it
    /// fails.
    fn run(&self, line: &str, cwd: &Path) -> String {
        String::from_utf8_lossy(&self.run_bytes(line, cwd)).into_owned()
    }

    /// Runs `line` to its end; its stdout.
    fn run_bytes(&self, line: &str, cwd: &Path) -> Vec<u8> {
        let out = self.command(line, cwd).output().expect("bash");
        assert!(
            out.status.success(),
            "`{line}` failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// Runs `script` from a file (not `bash -c`: its own `pkill -f` would
    /// match a shell whose command line holds the script); its stdout.
    fn run_script(&self, script: &str, cwd: &Path) -> String {
        let file = self.home.join("block.sh");
        std::fs::write(&file, script).unwrap();
        self.run(&format!("bash -euo pipefail {}", file.display()), cwd)
    }

    /// Starts `line` (a daemon) and waits until `ready` succeeds.
    fn start(&mut self, line: &str, cwd: &Path, ready: &str) {
        let child = self
            .command(&format!("exec {line}"), cwd)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("bash");
        self.daemons.push(child);
        let end = Instant::now() + Duration::from_secs(60);
        while !self
            .command(ready, cwd)
            .output()
            .is_ok_and(|o| o.status.success())
        {
            assert!(
                Instant::now() < end,
                "`{line}` never became ready (`{ready}`)"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops every daemon as Ctrl-C would, and waits for each to end.
    fn stop(&mut self) {
        for mut d in self.daemons.drain(..) {
            let _ = Command::new("kill")
                .args(["-TERM", &d.id().to_string()])
                .status();
            let end = Instant::now() + Duration::from_secs(20);
            while d.try_wait().ok().flatten().is_none() {
                if Instant::now() > end {
                    let _ = d.kill();
                    let _ = d.wait();
                    panic!("a daemon of the tour did not stop on SIGTERM");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        for d in &mut self.daemons {
            let _ = d.kill();
            let _ = d.wait();
        }
    }
}

#[test]
fn the_readmes_tour_runs_as_written() {
    let _serial = serial();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let tour = blocks(&readme, "## A five-minute tour");
    assert_eq!(
        tour.len(),
        4,
        "one node, a cluster, two mounts, the simulator"
    );
    let tmp = tempfile::tempdir().unwrap();
    let mut sh = Shell::new(&tmp.path().join("home"));

    // One node over the current directory, with a file in it.
    let here = tmp.path().join("here");
    let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::create_dir_all(here.join("some")).unwrap();
    std::fs::write(here.join("some/file.bin"), &data).unwrap();
    for line in commands(&tour[0]) {
        if line.starts_with("coopcache node") {
            sh.start(&line, &here, "coopcache status");
        } else if line.starts_with("curl") {
            let body = sh.run_bytes(&line, &here);
            assert_eq!(body, &data[..100], "the range the curl asks");
        } else {
            let out = sh.run(&line, &here);
            if line.starts_with("coopcache status") {
                assert!(out.contains("members (1)"), "{out}");
            }
        }
    }
    assert_eq!(std::fs::read(here.join("part")).unwrap(), &data[..4096]);
    sh.stop();

    // A cluster of two of the three nodes certified, on loopback.
    let cluster = tmp.path().join("cluster");
    let nfs = cluster.join("nfs");
    std::fs::create_dir_all(&nfs).unwrap();
    std::fs::write(nfs.join("shared.bin"), &data).unwrap();
    for line in commands(&tour[1]) {
        let line = line
            .replace("/mnt/nfs/data", nfs.to_str().unwrap())
            .replace("10.0.0.", "127.0.0.");
        if line.starts_with("coopcache node") {
            let at = line.split("--listen 127.0.0.").nth(1).expect("--listen");
            let host = at.split(':').next().unwrap();
            let http = format!("127.0.0.{host}:7171");
            let ready = format!("coopcache status --node {http}");
            sh.start(&format!("{line} --http {http}"), &cluster, &ready);
        } else {
            sh.run(&line, &cluster);
        }
    }
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let out = sh.run("coopcache status --node 127.0.0.2:7171", &cluster);
        if out.contains("members (2)") {
            break;
        }
        assert!(Instant::now() < end, "b never saw a: {out}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let got = sh.run_bytes("coopcache cat shared.bin --node 127.0.0.2:7171", &cluster);
    assert!(got == data, "b reads the origin's bytes");
    sh.stop();

    // Two mounts, in a directory of the test's rather than /tmp/cc.
    let cc = tmp.path().join("cc");
    let mounts = tour[2].replace("/tmp/cc", cc.to_str().unwrap());
    let out = sh.run_script(&mounts, tmp.path());
    assert!(
        out.contains("origin: 0 reads"),
        "b read from the origin: {out}"
    );
    let reads = out.lines().find(|l| l.starts_with("reads:")).unwrap_or("");
    assert!(
        reads.contains("peer 64") || reads.contains("manager 64"),
        "b's 64 blocks came from a's memory: {out}"
    );
    // The pkill's mounts unmount and leave.
    let end = Instant::now() + Duration::from_secs(20);
    for m in ["a", "b"] {
        while sh
            .command(
                &format!("mountpoint -q {}", cc.join(m).display()),
                tmp.path(),
            )
            .status()
            .is_ok_and(|s| s.success())
        {
            assert!(Instant::now() < end, "mount {m} still mounted");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    // The simulator, from the repository's root (the traces are beside it).
    for line in commands(&tour[3]) {
        let out = sh.run(&line, &root);
        assert!(!out.trim().is_empty(), "`{line}` printed nothing");
    }
}
