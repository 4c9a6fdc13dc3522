//! `coopcache mount`: the origin as a POSIX file system through FUSE, its
//! file bytes read through the cooperative cache.
//!
//! Names, attributes, directory listings and links come from the origin;
//! file contents are read through the node exactly as `coopcache cat`
//! reads them, with close-to-open consistency (each open reads the version
//! the origin had at that open; see `fs.rs`). A local directory or S3
//! origin can be written: files are written through to the origin at every
//! close (see `write.rs`), directories, links, renames, modes and times
//! directly. S3 keeps no modes, times or links: mode and time changes are
//! accepted and not kept, links are refused (`EPERM`), and a directory
//! rename answers `EXDEV` so that `mv` copies it (see
//! `coopcache_node::origin`). HTTP origins are mounted read-only (`EROFS`).
//!
//! In `exclusive` mode ([`Consistency::Exclusive`]) an open asks the
//! file's manager instead of the origin: the core's C2Cfs commit state
//! (`coopcache_core::c2cfs::exclusive`), which every close, removal and rename
//! through a mount updates. Hard links are not supported (`ENOTSUP`), nor
//! extended attributes. Owners are the origin's (a directory keeps them;
//! S3 and HTTP files belong to the mounting user), and the kernel checks
//! permissions against them (`default_permissions`).
//!
//! A reader of a file several peers hold takes its blocks from all of them
//! (C2Cfs's parallel segment fetch: the block's manager picks the holder,
//! `coopcache_core::coop::Holders::stripe_except`).
//!
//! A daemon killed without unmounting leaves its mount point dead
//! ("Transport endpoint is not connected"); [`mount`] detaches such a mount
//! first, so running `coopcache mount` again recovers it.

mod errno;
mod fs;
mod inodes;
mod locks;
mod names;
mod passthrough;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use coopcache_node::NodeHandle;
use fuser::{BackgroundSession, Config, MountOption, SessionACL};

pub use fs::{CoopFs, MAX_HANDLES};
pub use inodes::MAX_INODES;
pub use passthrough::mount_passthrough;

/// How to mount.
#[derive(Clone, Debug)]
pub struct MountOptions {
    /// How long the kernel may trust names and attributes before asking
    /// again (opens always ask: close-to-open).
    pub attr_ttl: Duration,
    /// Let users other than the one mounting use the mount (`allow_other`;
    /// the kernel still checks permission bits).
    pub allow_other: bool,
    /// How an open learns the version it reads.
    pub consistency: Consistency,
}

/// How an open learns the version of a file it reads (C2Cfs section 3;
/// both are close-to-open).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Consistency {
    /// Writers outside the cluster may exist: every open asks the origin
    /// for the file's version.
    #[default]
    Shared,
    /// Every write goes through the cluster's mounts: an open asks the
    /// file's manager (a member, by rendezvous), which knows the version
    /// of the last close from the origin itself; no origin round trip. A
    /// writer outside the cluster is not seen until the file next changes
    /// through a mount. Directory renames answer `EXDEV` (`mv` then copies
    /// file by file), since a manager knows files, not directories.
    Exclusive,
}

impl std::str::FromStr for Consistency {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "shared" => Ok(Consistency::Shared),
            "exclusive" => Ok(Consistency::Exclusive),
            _ => Err(format!("`{s}`: expected shared or exclusive")),
        }
    }
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            attr_ttl: Duration::from_secs(1),
            allow_other: false,
            consistency: Consistency::Shared,
        }
    }
}

/// Why a mount failed.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    /// The mount point is missing or not a directory.
    #[error("mount point {}: {why}", dir.display())]
    BadDir {
        /// The mount point.
        dir: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A dead mount was found and could not be detached.
    #[error(
        "mount point {} holds a dead mount (its daemon is gone) that could not be detached: {why}; try `fusermount3 -uz {}` or `umount -l {}`",
        dir.display(), dir.display(), dir.display()
    )]
    Stale {
        /// The mount point.
        dir: PathBuf,
        /// What the unmount said.
        why: String,
    },
    /// The kernel or `fusermount3` refused the mount.
    #[error(
        "mounting {} failed: {source} (is fuse3 installed and /dev/fuse readable? an unprivileged user needs fusermount3)",
        dir.display()
    )]
    Fuse {
        /// The mount point.
        dir: PathBuf,
        /// What FUSE said.
        source: std::io::Error,
    },
}

/// A mounted file system; dropping it unmounts.
pub struct Mounted {
    session: BackgroundSession,
    dir: PathBuf,
}

impl Mounted {
    /// The mount point.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the file system was unmounted from outside (`umount`,
    /// `fusermount3 -u`): its FUSE threads have ended.
    pub fn ended(&self) -> bool {
        self.session.guard.is_finished()
    }

    /// Waits until the file system is unmounted from outside.
    pub async fn until_ended(&self) {
        while !self.ended() {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    /// Unmounts and waits for the FUSE threads to end. If programs still
    /// hold files or directories open in the mount (`EBUSY`), detaches it
    /// lazily instead, so that no dead mount point stays behind once this
    /// process exits; their next calls fail. Says which happened.
    pub fn unmount(self) -> std::io::Result<Unmounted> {
        let dir = self.dir;
        if self.session.guard.is_finished() {
            return self.session.join().map(|()| Unmounted::Clean);
        }
        match self.session.umount_and_join() {
            Ok(()) => Ok(Unmounted::Clean),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                detach(&dir).map_err(std::io::Error::other)?;
                Ok(Unmounted::Detached)
            }
            Err(e) => Err(e),
        }
    }
}

/// How a mount ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unmounted {
    /// Nothing was open: unmounted and joined.
    Clean,
    /// Files were open: detached lazily (`umount -l`).
    Detached,
}

/// Mounts `node`'s origin on `dir`; `rt` is the runtime the node runs on.
pub fn mount(
    dir: &Path,
    node: Arc<NodeHandle>,
    rt: tokio::runtime::Handle,
    opts: &MountOptions,
) -> Result<Mounted, MountError> {
    recover_stale(dir)?;
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(MountError::BadDir {
                dir: dir.into(),
                why: "it is not a directory".into(),
            });
        }
        Err(e) => {
            return Err(MountError::BadDir {
                dir: dir.into(),
                why: e.to_string(),
            });
        }
    }
    let mut config = fuse_config("coopcache");
    config
        .mount_options
        .push(MountOption::Subtype("coopcache".into()));
    if opts.allow_other {
        config.acl = SessionACL::All;
    }
    if !node.origin().writable() {
        config.mount_options.push(MountOption::RO);
    }
    let notifier = Arc::new(std::sync::OnceLock::new());
    let fs = CoopFs::new(rt, node, opts.attr_ttl, opts.consistency, notifier.clone());
    let mounted = spawn(fs, dir, &config)?;
    let _ = notifier.set(mounted.session.notifier());
    Ok(mounted)
}

/// Waits on a FUSE thread for `f`, with the origin's local directory
/// calls made on this thread rather than handed to the blocking pool and
/// back ([`coopcache_node::origin::on_this_thread`]).
pub(crate) fn wait<F: std::future::Future>(rt: &tokio::runtime::Handle, f: F) -> F::Output {
    coopcache_node::origin::on_this_thread(|| rt.block_on(f))
}

/// Serves `fs` on `dir` on FUSE threads of its own.
fn spawn<F: fuser::Filesystem + Send + Sync + 'static>(
    fs: F,
    dir: &Path,
    config: &Config,
) -> Result<Mounted, MountError> {
    // Canonical before the mount: after it, resolving `dir` would ask the
    // file system being mounted.
    let at = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.into());
    let session = fuser::spawn_mount(fs, dir, config).map_err(|source| MountError::Fuse {
        dir: dir.into(),
        source,
    })?;
    if let Err(e) = set_read_ahead(&at, READ_AHEAD_KB) {
        // Not root (sysfs is root's): the kernel's default, correct and
        // slower for large sequential reads.
        tracing::debug!(dir = %dir.display(), error = %e, "the mount's read-ahead was left at the kernel's default");
    }
    Ok(Mounted {
        session,
        dir: dir.into(),
    })
}

/// KiB the kernel reads ahead of a sequential reader of a mount, asked in
/// requests of up to this size. The kernel's default, 128 KiB, takes a
/// large file through FUSE in eight times as many requests, each a round
/// of wake-ups between the reader, the FUSE threads and the node's tasks:
/// reading 100 MiB from peers' memory through a mount went from 0.59 of a
/// FUSE passthrough's speed to 0.71 (docs/benchmarks.md, "Read throughput
/// beside a FUSE passthrough"). Random reads are not affected: the kernel
/// grows its window only for sequential ones.
pub const READ_AHEAD_KB: u32 = 1024;

/// Sets the read-ahead of the FUSE connection mounted on `dir` (a
/// canonical path): its device's `read_ahead_kb` in sysfs (root only).
/// The device is read from the kernel's mount table, not from a `stat` of
/// `dir` (which would be a request to the file system itself, and would
/// leave its attributes cached); only a FUSE mount's is touched.
fn set_read_ahead(dir: &Path, kb: u32) -> std::io::Result<()> {
    let table = std::fs::read_to_string("/proc/self/mountinfo")?;
    let device = fuse_device(&table, dir).ok_or_else(|| {
        std::io::Error::other(format!(
            "no FUSE mount on {} in the mount table",
            dir.display()
        ))
    })?;
    let knob = format!("/sys/class/bdi/{device}/read_ahead_kb");
    std::fs::write(knob, kb.to_string())
}

/// The `major:minor` of the last FUSE mount on `dir` in `mountinfo`
/// (proc(5): `id parent major:minor root point options... - type ...`,
/// spaces in paths written `\040`).
fn fuse_device(mountinfo: &str, dir: &Path) -> Option<String> {
    let want = dir.to_str()?.replace(' ', "\\040");
    mountinfo.lines().rev().find_map(|line| {
        let (mount, fs) = line.split_once(" - ")?;
        let fields: Vec<&str> = mount.split(' ').collect();
        let (device, point) = (*fields.get(2)?, *fields.get(4)?);
        let fuse = fs.starts_with("fuse");
        (fuse && point == want).then(|| device.to_string())
    })
}

/// The FUSE configuration every mount of this crate starts from (the
/// bench's passthrough too, so that it differs from coopcache's mount only
/// in what it does per call).
fn fuse_config(fs_name: &str) -> Config {
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName(fs_name.into()),
        MountOption::DefaultPermissions,
        MountOption::NoDev,
        MountOption::NoSuid,
    ];
    // Metadata calls wait on the origin on the FUSE thread that asked:
    // several threads keep one slow lookup from stalling the rest.
    config.n_threads = Some(4);
    config
}

/// Detaches a dead FUSE mount left on `dir` by a daemon that died without
/// unmounting; does nothing if `dir` is not one.
pub fn recover_stale(dir: &Path) -> Result<(), MountError> {
    let dead = matches!(
        std::fs::metadata(dir),
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN)
    );
    if !dead {
        return Ok(());
    }
    tracing::warn!(dir = %dir.display(), "a dead mount was left here; detaching it");
    detach(dir).map_err(|why| MountError::Stale {
        dir: dir.into(),
        why,
    })
}

/// Detaches the mount on `dir` lazily: root directly, others through the
/// setuid helper.
fn detach(dir: &Path) -> Result<(), String> {
    if rustix::mount::unmount(dir, rustix::mount::UnmountFlags::DETACH).is_ok() {
        return Ok(());
    }
    let out = std::process::Command::new("fusermount3")
        .arg("-uz")
        .arg(dir)
        .output();
    match out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(String::from_utf8_lossy(&o.stderr).trim().to_owned()),
        Err(e) => Err(format!("fusermount3: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fuse_device_is_read_from_the_mount_table() {
        let table = "\
22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
40 22 0:39 / /tmp/my\\040dir rw,nosuid - fuse coopcache rw,user_id=0
41 22 0:40 / /tmp/other rw - tmpfs tmpfs rw
42 40 0:41 / /tmp/my\\040dir rw,nosuid - fuse.coopcache coopcache rw
";
        let dir = Path::new("/tmp/my dir");
        assert_eq!(fuse_device(table, dir).as_deref(), Some("0:41"), "the last");
        assert_eq!(
            fuse_device(table, Path::new("/tmp/other")),
            None,
            "not FUSE"
        );
        assert_eq!(fuse_device(table, Path::new("/")), None);
        assert_eq!(fuse_device(table, Path::new("/tmp/my")), None);
    }
}
