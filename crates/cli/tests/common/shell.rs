//! Running the shell blocks of the project's Markdown as a new user would
//! (the README's tour, `readme_tour.rs`; the guides, `guides.rs`): the
//! blocks taken from the Markdown itself, so the text cannot drift from
//! what works, run line by line by bash with the built `coopcache` first on
//! the PATH and a home of its own. Daemons a user would start in another
//! terminal start in the background; commands written for separate
//! machines run on loopback addresses (10.0.0.N as 127.0.0.N).
#![allow(dead_code)] // each test uses some of these

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A fenced block of Markdown.
pub struct Fence {
    /// What follows the opening fence (`sh`, `python`, empty).
    pub info: String,
    pub body: String,
    /// The text between the previous fence and this one.
    pub before: String,
}

/// The fenced blocks of `text`, in order.
pub fn fences(text: &str) -> Vec<Fence> {
    let mut out = Vec::new();
    let mut before = String::new();
    let mut open: Option<Fence> = None;
    for line in text.lines() {
        let fence = line.trim_end().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) => {
                open = Some(Fence {
                    info: info.to_string(),
                    body: String::new(),
                    before: std::mem::take(&mut before),
                })
            }
            (Some(_), Some("")) => out.extend(open.take()),
            (Some(f), _) => {
                f.body.push_str(line);
                f.body.push('\n');
            }
            (None, None) => {
                before.push_str(line);
                before.push('\n');
            }
        }
    }
    out
}

/// The part of `text` from `heading` to the next `## ` heading.
pub fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let start = text.find(heading).expect("the section's heading");
    let rest = &text[start + heading.len()..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

/// The ```sh blocks of `text`, in order.
pub fn sh_blocks(text: &str) -> Vec<String> {
    fences(text)
        .into_iter()
        .filter(|f| f.info == "sh")
        .map(|f| f.body)
        .collect()
}

/// A block's commands: continuation lines joined, comments kept (bash
/// ignores them).
pub fn commands(block: &str) -> Vec<String> {
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

/// `line` with the machines 10.0.0.N as loopback addresses 127.0.0.N.
pub fn loopback(line: &str) -> String {
    line.replace("10.0.0.", "127.0.0.")
}

/// `line` with `extra` added to its command, before a trailing comment.
pub fn with_args(line: &str, extra: &str) -> String {
    match line.find(" #") {
        Some(at) => format!("{} {extra}{}", &line[..at], &line[at..]),
        None => format!("{line} {extra}"),
    }
}

/// The gateway a `coopcache node` or `mount` line listening on
/// 127.0.0.N gets on one machine: 127.0.0.N:7171, each node's on its own
/// address (on separate machines every node keeps the default,
/// 127.0.0.1:7171).
pub fn gateway(line: &str) -> Option<String> {
    let at = line.split("--listen 127.0.0.").nth(1)?;
    let host = at.split(':').next()?;
    Some(format!("127.0.0.{host}:7171"))
}

/// The shell the blocks run in.
pub struct Shell {
    path: String,
    home: PathBuf,
    daemons: Vec<Child>,
}

impl Shell {
    pub fn new(home: &Path) -> Shell {
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

    /// Programs in `dir` are found first (a venv's).
    pub fn prepend_path(&mut self, dir: &Path) {
        self.path = format!("{}:{}", dir.display(), self.path);
    }

    pub fn command(&self, line: &str, cwd: &Path) -> Command {
        let mut c = Command::new("bash");
        c.args(["-euo", "pipefail", "-c", line])
            .current_dir(cwd)
            .env("PATH", &self.path)
            .env("HOME", &self.home)
            .env_remove("COOPCACHE_JOIN_TOKEN");
        c
    }

    /// Whether `line` succeeds.
    pub fn succeeds(&self, line: &str, cwd: &Path) -> bool {
        self.command(line, cwd)
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// Runs `line` to its end; its stdout as text. Fails the test if it
    /// fails.
    pub fn run(&self, line: &str, cwd: &Path) -> String {
        String::from_utf8_lossy(&self.run_bytes(line, cwd)).into_owned()
    }

    /// Runs `line` to its end; its stdout.
    pub fn run_bytes(&self, line: &str, cwd: &Path) -> Vec<u8> {
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
    pub fn run_script(&self, script: &str, cwd: &Path) -> String {
        let file = self.home.join("block.sh");
        std::fs::write(&file, script).unwrap();
        self.run(&format!("bash -euo pipefail {}", file.display()), cwd)
    }

    /// Starts `line` (a daemon, perhaps after `NAME=value` assignments)
    /// and waits until `ready` succeeds.
    pub fn start(&mut self, line: &str, cwd: &Path, ready: &str) {
        // `exec` after the assignments, so the daemon is the child and a
        // SIGTERM reaches it.
        let words: Vec<&str> = line.split(' ').collect();
        let env = words
            .iter()
            .take_while(|w| w.contains('=') && !w.starts_with('-'))
            .count();
        let line = format!("{} exec {}", words[..env].join(" "), words[env..].join(" "));
        let log = self.home.join(format!("daemon-{}.log", self.daemons.len()));
        let child = self
            .command(&line, cwd)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("bash");
        self.daemons.push(child);
        let end = Instant::now() + Duration::from_secs(60);
        while !self.succeeds(ready, cwd) {
            let exited = self.daemons.last_mut().unwrap().try_wait().unwrap();
            assert!(
                Instant::now() < end && exited.is_none(),
                "`{line}` never became ready (`{ready}`; {exited:?}): {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits up to `secs` seconds for `line`'s output to contain `want`.
    pub fn wait_for(&self, line: &str, cwd: &Path, want: &str, secs: u64) -> String {
        let end = Instant::now() + Duration::from_secs(secs);
        loop {
            let out = self.run(line, cwd);
            if out.contains(want) {
                return out;
            }
            assert!(Instant::now() < end, "`{line}` never said `{want}`: {out}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits up to 20 s for `dir` to be no mount point.
    pub fn wait_unmounted(&self, dir: &Path) {
        let end = Instant::now() + Duration::from_secs(20);
        while self.succeeds(&format!("mountpoint -q {}", dir.display()), &self.home) {
            assert!(Instant::now() < end, "{} still mounted", dir.display());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops every daemon as Ctrl-C would, and waits for each to end.
    pub fn stop(&mut self) {
        for mut d in self.daemons.drain(..) {
            let _ = Command::new("kill")
                .args(["-TERM", &d.id().to_string()])
                .status();
            let end = Instant::now() + Duration::from_secs(20);
            while d.try_wait().ok().flatten().is_none() {
                if Instant::now() > end {
                    let _ = d.kill();
                    let _ = d.wait();
                    panic!("a daemon did not stop on SIGTERM");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// Starts a `coopcache node` line (its 10.0.0.N as loopback, with its
    /// own gateway if it listens on an address of its own) and waits until
    /// its gateway answers `coopcache status`; the gateway.
    pub fn start_node(&mut self, line: &str, cwd: &Path) -> String {
        let line = loopback(line);
        let http = gateway(&line).unwrap_or_else(|| "127.0.0.1:7171".into());
        let ready = format!("coopcache status --node {http}");
        let line = match gateway(&line) {
            Some(_) => with_args(&line, &format!("--http {http}")),
            None => line,
        };
        self.start(&line, cwd, &ready);
        http
    }

    /// The block of one node over the current directory (the README's
    /// tour and guide/cluster.md), run in `here` with a file
    /// `some/file.bin` in it; checks what each command gives, and stops
    /// the node.
    pub fn one_node(&mut self, block: &str, here: &Path) {
        let data = sample();
        std::fs::create_dir_all(here.join("some")).unwrap();
        std::fs::write(here.join("some/file.bin"), &data).unwrap();
        for line in commands(block) {
            if line.starts_with("coopcache node") {
                self.start_node(&line, here);
            } else if line.starts_with("curl -H 'Range: bytes=0-99'") {
                let body = self.run_bytes(&line, here);
                assert_eq!(body, &data[..100], "the range the curl asks");
            } else {
                let out = self.run(&line, here);
                if line.starts_with("coopcache status") {
                    assert!(out.contains("members (1)"), "{out}");
                }
                if line.starts_with("coopcache warm") {
                    assert!(out.contains("warmed some: 1 files"), "{out}");
                }
                if line.contains("/metrics") {
                    assert!(out.contains("# TYPE coopcache_"), "{out}");
                }
            }
        }
        assert_eq!(std::fs::read(here.join("part")).unwrap(), &data[..4096]);
        self.stop();
    }

    /// The block of a cluster of nodes a and b of three certified (the
    /// README's tour and guide/cluster.md), run in `dir` over `nfs` for
    /// `/mnt/nfs/data`, with a file `shared.bin` put in it; checks that b
    /// sees a and reads the file through the cluster, and leaves the nodes
    /// running.
    pub fn two_nodes(&mut self, block: &str, dir: &Path, nfs: &Path) {
        let data = sample();
        std::fs::create_dir_all(nfs).unwrap();
        std::fs::write(nfs.join("shared.bin"), &data).unwrap();
        for line in commands(block) {
            let line = line.replace("/mnt/nfs/data", nfs.to_str().unwrap());
            if line.starts_with("coopcache node") {
                self.start_node(&line, dir);
            } else {
                self.run(&line, dir);
            }
        }
        let b = "coopcache status --node 127.0.0.2:7171";
        self.wait_for(b, dir, "members (2)", 30);
        let got = self.run_bytes("coopcache cat shared.bin --node 127.0.0.2:7171", dir);
        assert!(got == data, "b reads the origin's bytes");
    }

    /// The block of two mounts of one origin on one machine (the README's
    /// tour and guide/mount.md), its `/tmp/cc` in `dir`: runs it, and
    /// checks that b read a's file from a's memory, not the origin, and
    /// that the block's `pkill` unmounted both.
    pub fn two_mounts(&self, block: &str, dir: &Path) {
        let cc = dir.join("cc");
        let script = block.replace("/tmp/cc", cc.to_str().unwrap());
        let out = self.run_script(&script, dir);
        assert!(
            out.contains("origin: 0 reads"),
            "b read from the origin: {out}"
        );
        let reads = out.lines().find(|l| l.starts_with("reads:")).unwrap_or("");
        assert!(
            reads.contains("peer 64") || reads.contains("manager 64"),
            "b's 64 blocks came from a's memory: {out}"
        );
        for m in ["a", "b"] {
            self.wait_unmounted(&cc.join(m));
        }
    }
}

/// The bytes of the files the blocks read.
pub fn sample() -> Vec<u8> {
    (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect()
}

impl Drop for Shell {
    fn drop(&mut self) {
        for d in &mut self.daemons {
            let _ = d.kill();
            let _ = d.wait();
        }
    }
}
