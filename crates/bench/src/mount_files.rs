//! `coopcache bench mount --phases files` (issue 40, item 5): what the
//! file system costs programs that write files, run as a user runs them,
//! side by side in one run on four systems:
//!
//! - `directory`: the origin directory itself (a plain directory, no FUSE);
//! - `coopcache shared` and `coopcache exclusive`: a one-node loopback
//!   cluster mounted in that consistency, over a plain local directory
//!   with NO emulated delay (this phase ignores `--origin-delay`): it
//!   measures the file system's cost per file, not the origin's distance
//!   nor cooperation;
//! - `rclone`: `rclone mount LOCALDIR MNT --vfs-cache-mode writes` over a
//!   plain local directory (left out, with a note, if rclone is not here);
//! - `bindfs`: `bindfs -f --multithreaded LOCALDIR MNT`, a plain FUSE
//!   passthrough of a local directory (libfuse, each call made on the
//!   directory at once), as a user runs it: the kernel keeps its names
//!   and attributes for libfuse's default second;
//! - `bindfs no cache`: the same with `-o attr_timeout=0,entry_timeout=0,
//!   negative_timeout=0`, so that the kernel asks for every name and
//!   attribute as it asks coopcache's mount (close-to-open, `--attr-ttl`
//!   0 by default): what any FUSE file system that writes through with
//!   that consistency pays per call on this machine, the floor a mount's
//!   time is read against (`x bindfs`). Both are left out, with a note,
//!   if bindfs is not here.
//!
//! The steps: `tar xf` of an archive of small seeded files (100 B - 8 KiB
//! in 30 directories), `rsync -a` of their tree, and a sequential write of
//! a big file read from memory (/dev/shm) by `dd bs=1M`, `cp` and
//! `sh -c 'cat SRC > DST'`, each timed to the program's exit (the close
//! included). Each run writes into a fresh directory. Every run's result
//! is checked byte for byte, through the system and where its bytes land
//! (the origin, rclone's or bindfs's directory): wrong bytes fail the
//! phase.
//!
//! Every step runs `--files-passes` times, the systems one after another
//! within a pass; rows give the median. Targets (coopcache's rows): tar
//! and rsync within 5x the directory's time and faster than rclone; a
//! write at least 1 GB/s or half the directory's speed.

use super::common::{Bar, median};
use super::mount::MountBenchArgs;
use super::mount_files_tree::Source;
use super::s3_servers::{FuseProcess, on_path};
use crate::loopback::{LoopbackSpec, shutdown, start_cluster};
use anyhow::{Context, Result, bail};
use coopcache_console::args::parse_size;
use coopcache_mount::{Consistency, MountOptions, Mounted};
use coopcache_node::NodeHandle;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The files phase's knobs.
#[derive(clap::Args, Clone)]
pub(crate) struct FilesArgs {
    /// Files phase: small files in the tree `tar xf` and `rsync -a` write.
    #[arg(long, default_value_t = 3000)]
    pub(super) files_count: u32,
    /// Files phase: the size of the file the sequential writers write.
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    pub(super) files_write_size: u64,
    /// Files phase: passes over the steps, each on every system.
    #[arg(long, default_value_t = 3)]
    pub(super) files_passes: u32,
}

/// The coopcache node's memory: `coopcache mount`'s default (2 GiB).
const NODE_MEMORY: u64 = 2 << 30;
/// How long rclone may take to write a run's files back to its directory
/// (`--vfs-write-back` is 5 s; 1 GiB then takes seconds).
const WRITE_BACK: Duration = Duration::from_secs(300);

/// A system written through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum System {
    Directory,
    Shared,
    Exclusive,
    Rclone,
    Bindfs,
    BindfsNoCache,
}

impl System {
    fn name(self) -> &'static str {
        match self {
            System::Directory => "directory",
            System::Shared => "coopcache shared",
            System::Exclusive => "coopcache exclusive",
            System::Rclone => "rclone",
            System::Bindfs => "bindfs",
            System::BindfsNoCache => "bindfs no cache",
        }
    }
}

/// A step: a program run into a fresh directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Tar,
    Rsync,
    Dd,
    Cp,
    Cat,
}

impl Step {
    const ALL: [Step; 5] = [Step::Tar, Step::Rsync, Step::Dd, Step::Cp, Step::Cat];

    fn name(self) -> &'static str {
        match self {
            Step::Tar => "tar xf",
            Step::Rsync => "rsync -a",
            Step::Dd => "dd bs=1M",
            Step::Cp => "cp",
            Step::Cat => "cat >",
        }
    }

    /// The program the step needs.
    fn program(self) -> &'static str {
        match self {
            Step::Tar => "tar",
            Step::Rsync => "rsync",
            Step::Dd => "dd",
            Step::Cp => "cp",
            Step::Cat => "sh",
        }
    }

    fn writes_big(self) -> bool {
        matches!(self, Step::Dd | Step::Cp | Step::Cat)
    }

    /// What the step makes in its fresh directory `at`.
    fn output(self, at: &Path) -> PathBuf {
        match self {
            Step::Tar => at.to_path_buf(),
            Step::Rsync => at.join("r"),
            Step::Dd => at.join("big"),
            Step::Cp => at.join("big2"),
            Step::Cat => at.join("big3"),
        }
    }

    /// The command, as a user would type it, writing into `at`.
    fn command(self, src: &Source, at: &Path) -> Result<Command> {
        let out = self.output(at);
        let mut cmd = Command::new(self.program());
        match self {
            Step::Tar => {
                let archive = src.archive.as_ref().context("no archive: tar missing")?;
                cmd.arg("xf").arg(archive).arg("-C").arg(at);
            }
            Step::Rsync => {
                let mut from = src.tree.clone().into_os_string();
                from.push("/");
                let mut to = out.into_os_string();
                to.push("/");
                cmd.arg("-a").arg(from).arg(to);
            }
            Step::Dd => {
                let mut i = std::ffi::OsString::from("if=");
                i.push(&src.big);
                let mut o = std::ffi::OsString::from("of=");
                o.push(out);
                cmd.arg(i).arg(o).arg("bs=1M");
            }
            Step::Cp => {
                cmd.arg(&src.big).arg(out);
            }
            Step::Cat => {
                cmd.args(["-c", "cat \"$1\" > \"$2\"", "sh"])
                    .arg(&src.big)
                    .arg(out);
            }
        }
        Ok(cmd)
    }
}

/// One system and step: the median of its passes.
#[derive(serde::Serialize)]
pub(crate) struct FilesRow {
    bench: &'static str,
    phase: &'static str,
    system: &'static str,
    step: &'static str,
    /// Files the step writes, and their bytes.
    files: u64,
    bytes: u64,
    /// Each pass's seconds, to the program's exit.
    passes: Vec<f64>,
    seconds: f64,
    mb_per_s: f64,
    /// Seconds over the directory's (medians).
    vs_directory: f64,
    /// Seconds over `bindfs no cache`'s, the plain FUSE passthrough's with
    /// the mount's consistency (medians), if it ran.
    vs_bindfs: Option<f64>,
    /// Bytes read back and found right in the last pass, through the
    /// system (a difference fails the phase before any row).
    verified_bytes: u64,
    target: Option<String>,
    met: Option<bool>,
}

/// Runs the phase in `dir`: its rows, and notes on what was left out.
pub(crate) async fn bench(
    args: &MountBenchArgs,
    files: &FilesArgs,
    dir: &Path,
) -> Result<(Vec<FilesRow>, Vec<String>)> {
    std::fs::create_dir_all(dir)?;
    let mut notes = Vec::new();
    let mut steps = Vec::new();
    for step in Step::ALL {
        if on_path(step.program()).is_some() {
            steps.push(step);
        } else {
            notes.push(format!(
                "{}: {} not found on the PATH, step left out",
                step.name(),
                step.program()
            ));
        }
    }
    let rclone = on_path("rclone");
    if rclone.is_none() {
        notes.push("rclone not found on the PATH (apt-get install rclone): left out".into());
    }
    let bindfs = on_path("bindfs");
    if bindfs.is_none() {
        notes.push("bindfs not found on the PATH (apt-get install bindfs): left out".into());
    }
    for note in &notes {
        eprintln!("files: {note}");
    }
    let source = tokio::task::block_in_place(|| {
        Source::build(
            dir,
            files.files_count,
            files.files_write_size,
            args.seed.value,
            steps.contains(&Step::Tar),
        )
    })?;
    let mut targets = Vec::new();
    let result = async {
        for system in [System::Directory, System::Shared, System::Exclusive] {
            targets.push(Target::start(system, dir, None).await?);
        }
        if let Some(exe) = &rclone {
            targets.push(Target::start(System::Rclone, dir, Some(exe)).await?);
        }
        if let Some(exe) = &bindfs {
            for system in [System::Bindfs, System::BindfsNoCache] {
                targets.push(Target::start(system, dir, Some(exe)).await?);
            }
        }
        measure(files.files_passes, &steps, &targets, &source)
    }
    .await;
    for t in targets {
        t.stop().await;
    }
    Ok((result?, notes))
}

/// Runs every step `passes` times on every target, then the rows.
fn measure(passes: u32, steps: &[Step], targets: &[Target], src: &Source) -> Result<Vec<FilesRow>> {
    let bar = Bar::new(
        u64::from(passes) * (steps.len() * targets.len()) as u64,
        "runs",
    );
    // [step][target]: each pass's seconds; the last pass's checked bytes.
    let mut seconds = vec![vec![Vec::new(); targets.len()]; steps.len()];
    let mut verified = vec![vec![0; targets.len()]; steps.len()];
    for pass in 1..=passes {
        for (s, &step) in steps.iter().enumerate() {
            for (t, target) in targets.iter().enumerate() {
                // The program and every FUSE call it makes block: off the
                // runtime's workers, which serve coopcache's mounts.
                let (secs, checked) =
                    tokio::task::block_in_place(|| target.run(step, pass, src))
                        .with_context(|| format!("{} on {}", step.name(), target.system.name()))?;
                seconds[s][t].push(secs);
                verified[s][t] = checked;
                bar.inc();
            }
        }
    }
    drop(bar);
    let mut rows = Vec::new();
    for (s, &step) in steps.iter().enumerate() {
        let of = |system| {
            let t = targets.iter().position(|t| t.system == system)?;
            Some(median(&seconds[s][t]))
        };
        let directory = of(System::Directory).unwrap_or(0.0);
        let rclone = of(System::Rclone);
        let bindfs = of(System::BindfsNoCache);
        for (t, target) in targets.iter().enumerate() {
            let (files, bytes) = if step.writes_big() {
                (1, src.big_size)
            } else {
                (src.files.len() as u64, src.tree_bytes)
            };
            let secs = median(&seconds[s][t]);
            let mb_per_s = bytes as f64 / 1e6 / secs.max(f64::MIN_POSITIVE);
            let vs_directory = secs / directory.max(f64::MIN_POSITIVE);
            let (target_text, met) =
                judge(target.system, step, vs_directory, mb_per_s, secs, rclone);
            rows.push(FilesRow {
                bench: "mount",
                phase: "files",
                system: target.system.name(),
                step: step.name(),
                files,
                bytes,
                passes: seconds[s][t].clone(),
                seconds: secs,
                mb_per_s,
                vs_directory,
                vs_bindfs: bindfs.map(|b| secs / b.max(f64::MIN_POSITIVE)),
                verified_bytes: verified[s][t],
                target: target_text,
                met,
            });
        }
    }
    Ok(rows)
}

/// The issue's target for a coopcache row, and whether it is met; the
/// directory and rclone are what it is judged against.
fn judge(
    system: System,
    step: Step,
    vs_directory: f64,
    mb_per_s: f64,
    secs: f64,
    rclone: Option<f64>,
) -> (Option<String>, Option<bool>) {
    if !matches!(system, System::Shared | System::Exclusive) {
        return (None, None);
    }
    let (text, met) = if step.writes_big() {
        (
            ">= 1000 MB/s or >= 0.50 of the directory's MB/s",
            mb_per_s >= 1000.0 || vs_directory <= 2.0,
        )
    } else {
        match rclone {
            Some(r) => (
                "<= 5x the directory, < rclone",
                vs_directory <= 5.0 && secs < r,
            ),
            None => ("<= 5x the directory (rclone not run)", vs_directory <= 5.0),
        }
    };
    (Some(text.into()), Some(met))
}

/// What serves a system's directory.
enum Serving {
    Nothing,
    Coopcache {
        nodes: Vec<Arc<NodeHandle>>,
        mount: Mounted,
    },
    /// rclone or bindfs.
    Fuse(FuseProcess),
}

/// A system, ready: where programs write (`view`), where the bytes land
/// (`backing`: the origin, rclone's or bindfs's directory).
struct Target {
    system: System,
    view: PathBuf,
    backing: PathBuf,
    serving: Serving,
}

impl Target {
    /// Sets `system` up under `dir/NAME`; `exe` is rclone's or bindfs's.
    async fn start(system: System, dir: &Path, exe: Option<&PathBuf>) -> Result<Target> {
        let home = dir.join(system.name().replace(' ', "-"));
        let backing = home.join("origin");
        let view = home.join("mnt");
        std::fs::create_dir_all(&backing)?;
        std::fs::create_dir_all(&view)?;
        let serving = match system {
            System::Directory => {
                return Ok(Target {
                    system,
                    view: backing.clone(),
                    backing,
                    serving: Serving::Nothing,
                });
            }
            System::Shared => coopcache(&home, &backing, &view, Consistency::Shared).await?,
            System::Exclusive => coopcache(&home, &backing, &view, Consistency::Exclusive).await?,
            System::Rclone => {
                let exe = exe.context("rclone was not looked for")?;
                let config = home.join("rclone.conf");
                std::fs::write(&config, "")?;
                let mut cmd = Command::new(exe);
                cmd.arg("mount")
                    .arg(&backing)
                    .arg(&view)
                    .args(["--vfs-cache-mode", "writes"])
                    .arg("--cache-dir")
                    .arg(home.join("cache"))
                    .arg("--config")
                    .arg(&config);
                let log = home.join("rclone.log");
                let p = tokio::task::block_in_place(|| FuseProcess::start(cmd, &view, &log))?;
                Serving::Fuse(p)
            }
            System::Bindfs | System::BindfsNoCache => {
                let exe = exe.context("bindfs was not looked for")?;
                let mut cmd = Command::new(exe);
                // Multithreaded, as coopcache's mount is (4 FUSE threads):
                // a `tar xf` of 3,000 files of 100 B - 8 KiB into `bindfs SRC
                // MNT` took 4.4-6.7 s, into `bindfs --multithreaded SRC
                // MNT` 2.3-4.2 s (three runs each, alternating, by hand).
                cmd.args(["-f", "--multithreaded"]);
                if system == System::BindfsNoCache {
                    cmd.args(["-o", "attr_timeout=0,entry_timeout=0,negative_timeout=0"]);
                }
                cmd.arg(&backing).arg(&view);
                let log = home.join("fuse.log");
                let p = tokio::task::block_in_place(|| FuseProcess::start(cmd, &view, &log))?;
                Serving::Fuse(p)
            }
        };
        Ok(Target {
            system,
            view,
            backing,
            serving,
        })
    }

    /// One run of `step` into a fresh directory: its seconds, after
    /// checking what it wrote (the bytes checked through the system).
    fn run(&self, step: Step, pass: u32, src: &Source) -> Result<(f64, u64)> {
        let name = format!("p{pass}-{}", step.program());
        let at = self.view.join(&name);
        std::fs::create_dir(&at).with_context(|| format!("creating {}", at.display()))?;
        // Nothing of a run before (another system's write-back, a
        // removed file's discard) lands in this one's time.
        rustix::fs::sync();
        let mut cmd = step.command(src, &at)?;
        let secs = timed(&mut cmd)?;
        let check = |dir: &Path| {
            if step.writes_big() {
                src.check_big(&step.output(dir))
            } else {
                src.check_tree(&step.output(dir))
            }
        };
        let checked = check(&at)?;
        let landed = self.backing.join(&name);
        match self.serving {
            Serving::Nothing => {}
            Serving::Coopcache { .. } => {
                check(&landed).context("in the origin directory")?;
            }
            Serving::Fuse(_) if self.system != System::Rclone => {
                check(&landed).context("in bindfs's directory")?;
            }
            // rclone writes back after its close, in the background: the
            // next run waits for it, and it must land right.
            Serving::Fuse(_) => {
                let deadline = Instant::now() + WRITE_BACK;
                while let Err(e) = check(&landed) {
                    if Instant::now() > deadline {
                        return Err(e.context(format!(
                            "in rclone's directory, {} s after the run",
                            WRITE_BACK.as_secs()
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        }
        // A big file is not kept: the disk holds a run's at a time.
        if step.writes_big() {
            let out = step.output(&at);
            std::fs::remove_file(&out).with_context(|| format!("removing {}", out.display()))?;
        }
        Ok((secs, checked))
    }

    /// Unmounts and stops what serves the system.
    async fn stop(self) {
        match self.serving {
            Serving::Nothing => {}
            Serving::Coopcache { nodes, mount } => {
                let _ = tokio::task::spawn_blocking(move || mount.unmount()).await;
                shutdown(&nodes);
            }
            Serving::Fuse(p) => {
                let _ = tokio::task::spawn_blocking(move || drop(p)).await;
            }
        }
    }
}

/// A one-node cluster over the directory `origin`, mounted on `at` in
/// `consistency`.
async fn coopcache(
    home: &Path,
    origin: &Path,
    at: &Path,
    consistency: Consistency,
) -> Result<Serving> {
    let mut spec = LoopbackSpec::new(home, 1, origin.to_path_buf())?;
    // A local directory as is: the phase measures the file system.
    spec.origin_delay = Duration::ZERO;
    // Close-to-open, as `coopcache mount` by default.
    spec.attr_ttl = Duration::ZERO;
    // One member from the start: its commit table answers at once, not
    // 5 s after the cluster formed.
    spec.commit_stable = Some(Duration::ZERO);
    let nodes = start_cluster(&spec, &[NODE_MEMORY]).await?;
    let opts = MountOptions {
        consistency,
        ..MountOptions::default()
    };
    let rt = tokio::runtime::Handle::current();
    let mount = coopcache_mount::mount(at, nodes[0].clone(), rt, &opts)
        .context("mounting (root and /dev/fuse needed)")?;
    Ok(Serving::Coopcache { nodes, mount })
}

/// Runs `cmd` to its exit: its seconds. Fails with its output if it
/// fails; what it says on success goes to stderr (a warning of tar or
/// rsync about a file system is worth seeing), dd's record counts aside.
fn timed(cmd: &mut Command) -> Result<f64> {
    let shown = format!("{cmd:?}");
    cmd.stdin(Stdio::null());
    let started = Instant::now();
    let out = cmd.output().with_context(|| format!("running {shown}"))?;
    let secs = started.elapsed().as_secs_f64();
    let said = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("{shown} failed ({}): {said}", out.status);
    }
    if !said.is_empty() && cmd.get_program() != "dd" {
        eprintln!("files: {shown} said: {said}");
    }
    Ok(secs)
}

/// The rows as a table, and the notes.
pub(crate) fn table(rows: &[FilesRow], notes: &[String]) {
    println!(
        "\n{:<20} {:<9} {:>5} {:>8} {:>26} {:>8} {:>7} {:>6} {:>8}  target",
        "system", "step", "files", "MB", "seconds (passes)", "median", "MB/s", "x dir", "x bindfs"
    );
    for r in rows {
        let passes: Vec<String> = r.passes.iter().map(|s| format!("{s:.3}")).collect();
        let target = match (&r.target, r.met) {
            (Some(t), Some(met)) => format!("{t}: {}", if met { "met" } else { "MISSED" }),
            _ => String::new(),
        };
        let vs_bindfs = r.vs_bindfs.map_or("-".into(), |x| format!("{x:.2}"));
        println!(
            "{:<20} {:<9} {:>5} {:>8.1} {:>26} {:>8.3} {:>7.0} {:>6.2} {vs_bindfs:>8}  {target}",
            r.system,
            r.step,
            r.files,
            r.bytes as f64 / 1e6,
            passes.join(" "),
            r.seconds,
            r.mb_per_s,
            r.vs_directory,
        );
    }
    for note in notes {
        println!("note: {note}");
    }
}
