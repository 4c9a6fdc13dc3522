//! The origin: the slow shared storage behind the cache (the paper's
//! server disk), reached through `object_store`.
//!
//! An origin is a local directory, an S3 (or S3-compatible) bucket prefix or
//! an HTTP(S) URL prefix. The cache reads it: [`Origin::stat`] gives a
//! file's size and [`FileVersion`], and [`Origin::read`] reads a byte range
//! of exactly that version, so a block cached under one version is never
//! mixed with bytes of another. The mount also writes a directory or an S3
//! origin (`change.rs`: drafts put in place whole at a close); HTTP is
//! read-only.
//!
//! Paths from users go through [`check_path`] first; they can never name
//! anything outside the origin's root or prefix. A local directory is read
//! by its own reader (`origin/local/`) rather than `object_store`: the kernel confines every open
//! beneath the directory (symbolic links that stay inside work, links or
//! mount points that lead out are refused), and versions include the
//! change time, which no user can set back.

mod backend;
mod change;
mod copies;
mod counts;
mod draft;
mod error;
mod inline;
mod local;
mod note;
mod object_change;
mod object_write;
mod path;
mod spec;
pub mod tree;
mod written;

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectMeta, ObjectStore};

pub use change::SetTime;
pub use counts::OriginCounts;
pub use draft::Draft;
pub use error::OriginError;
pub use inline::on_this_thread;
pub use path::check_path;
pub use spec::{ACCEPTED_FORMS, OriginSpec};
pub use tree::{DirEntry, Entry, EntryKind, Owner, PosixAttrs};

/// A version of a file in the origin: its size and a version string that
/// changes whenever the content may have changed.
///
/// The version is the store's ETag when it gives one: S3's content hash,
/// nginx's `"mtime-size"`; for a local directory `ino-ctime-mtime-size`
/// (hex, nanoseconds; see `origin/local/`), so a rewritten or replaced file never
/// matches an old version, whatever its mtime says. A store without ETags
/// falls back to `lm-<last-modified µs>-<size>`. A store that gives
/// neither (some application servers) offers nothing that changes with the
/// content: its files are refused ([`OriginError::NoValidator`]) unless the
/// origin is declared immutable ([`Origin::immutable`]), and then their
/// version is `immutable-<size>`.
///
/// The limit of a time-based version: a file rewritten in place at the same
/// size within one tick of the timestamp clock keeps its version (for a
/// local directory only on kernels before 6.13 and within 1-4 ms; one
/// second for nginx's ETag, whose mtime a user can also set back). S3's
/// ETag is a content hash and has no such limit.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FileVersion {
    /// The file's size in bytes.
    pub size: u64,
    /// The store's version string (see the type's documentation).
    pub version: String,
    /// When the file was last modified, as the origin says (the gateway's
    /// `Last-Modified`); `None` when it does not say. Informational: the
    /// version, not this, decides whether bytes belong together.
    #[serde(default)]
    pub modified: Option<std::time::SystemTime>,
    /// Permission bits, as the origin reports them (S3 and HTTP always
    /// `0o644`): what a file's manager answers a mount's `getattr` with in
    /// `exclusive` mode, beside the size and time.
    #[serde(default = "default_perm")]
    pub perm: u16,
    /// Owner and group, where the origin keeps them (a directory does):
    /// what a manager answers a mount's `getattr` with beside `perm`, so
    /// that the kernel checks permissions against the same owner in both
    /// consistency modes.
    #[serde(default)]
    pub owner: Option<Owner>,
}

/// Permission bits of a version that came without them.
fn default_perm() -> u16 {
    0o644
}

/// A file's version with the path it is the version of: what a file's
/// manager records and answers in `exclusive` mode, so that an opener can
/// tell its own file's version from that of another path whose key (a
/// 64-bit hash) is the same.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathVersion {
    /// The path.
    pub path: Arc<str>,
    /// Its version.
    pub version: FileVersion,
}

/// What a file's manager needs of a version: whether it has a first block
/// to serve with an open's answer, and which path it is of.
impl coopcache_core::c2cfs::exclusive::Version for PathVersion {
    fn has_first_block(&self) -> bool {
        self.version.size > 0
    }

    fn is_of(&self, path: &str) -> bool {
        *self.path == *path
    }

    fn size(&self) -> u64 {
        self.version.size
    }
}

/// Prefix of a version string made up from the modification time, for
/// stores that give no ETag. No ETag form starts with it (strong ETags
/// are quoted or, for local files, hex).
const FALLBACK: &str = "lm-";

/// Prefix of the version of a file in an origin declared immutable that
/// gives no validator at all.
const IMMUTABLE: &str = "immutable-";

impl FileVersion {
    /// The version `meta` describes; `None` when the store gave neither an
    /// ETag nor a `Last-Modified` (`object_store` then reports the epoch)
    /// and the origin is not declared immutable.
    fn from_meta(meta: &ObjectMeta, immutable: bool) -> Option<FileVersion> {
        let dated = meta.last_modified.timestamp_nanos_opt() != Some(0);
        let version = match &meta.e_tag {
            Some(e_tag) => e_tag.clone(),
            None if dated => format!(
                "{FALLBACK}{}-{}",
                meta.last_modified.timestamp_micros(),
                meta.size
            ),
            None if immutable => format!("{IMMUTABLE}{}", meta.size),
            None => return None,
        };
        Some(FileVersion {
            size: meta.size,
            version,
            modified: dated.then(|| meta.last_modified.into()),
            perm: default_perm(),
            owner: None,
        })
    }

    /// The `If-Match` value for this version, when the store can check it:
    /// a strong ETag. Weak ETags never match strongly, and a made-up
    /// version is unknown to the store; both are checked after the fact.
    fn if_match(&self) -> Option<String> {
        let v = &self.version;
        let made_up = v.starts_with(FALLBACK) || v.starts_with(IMMUTABLE);
        (!made_up && !v.starts_with("W/")).then(|| v.clone())
    }
}

/// An origin's space, as a mount's `statfs` (`df`) reports it: counts of
/// `fragment`-byte blocks and of files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Space {
    /// Preferred I/O size.
    pub block_size: u32,
    /// The unit of the block counts.
    pub fragment: u32,
    /// Blocks in all.
    pub blocks: u64,
    /// Blocks free.
    pub free: u64,
    /// Blocks free to unprivileged users.
    pub available: u64,
    /// Files (inodes) in all.
    pub files: u64,
    /// Files free.
    pub files_free: u64,
    /// Longest name, in bytes.
    pub name_max: u32,
}

impl Space {
    /// An object store's: no capacity to report, so a pebibyte of 4 KiB
    /// blocks, all free (what rclone reports by default), and S3's
    /// longest key as the longest name.
    pub const UNBOUNDED: Space = Space {
        block_size: 4096,
        fragment: 4096,
        blocks: 1 << 38,
        free: 1 << 38,
        available: 1 << 38,
        files: 1 << 32,
        files_free: 1 << 32,
        name_max: 255,
    };
}

/// The slow shared storage behind the cache.
#[derive(Clone, Debug)]
pub struct Origin {
    store: Store,
    description: String,
    delay: Option<Duration>,
    /// Files never change: a store without validators is served anyway.
    immutable: bool,
    /// Versions this origin was just given, with their bytes.
    copies: Arc<copies::Copies>,
    /// What it was asked so far, by kind ([`Origin::counts`]).
    counts: Arc<counts::Counts>,
}

/// What an origin reads from.
#[derive(Clone, Debug)]
enum Store {
    /// A local directory, read by [`local::LocalDir`].
    Local(Arc<local::LocalDir>),
    /// S3 or HTTP through `object_store`.
    Object {
        store: Arc<dyn ObjectStore>,
        /// Key prefix inside the store (S3); empty for HTTP, whose store
        /// is rooted at the prefix already.
        prefix: Path,
        backend: backend::Backend,
    },
}

impl Origin {
    /// Opens the origin named by `spec` (see [`OriginSpec`] and
    /// [`ACCEPTED_FORMS`]), configured from the environment for S3
    /// (`AWS_ENDPOINT`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_REGION`, `AWS_ALLOW_HTTP`, ...).
    ///
    /// Nothing is contacted yet; call [`Origin::check`] to find out whether
    /// the origin answers.
    pub fn open(spec: &str) -> Result<Origin, OriginError> {
        Origin::open_with(spec, &[])
    }

    /// Like [`Origin::open`], with `object_store` configuration keys that
    /// override the environment: for S3 any `AmazonS3ConfigKey`
    /// (`endpoint`, `access_key_id`, `secret_access_key`, `region`,
    /// `allow_http`, ...), for HTTP any `ClientConfigKey` (`allow_http`,
    /// `timeout`, ...). A local directory takes no options.
    pub fn open_with(spec: &str, options: &[(&str, &str)]) -> Result<Origin, OriginError> {
        match spec.parse::<OriginSpec>()? {
            OriginSpec::Local(dir) => backend::open_local(spec, &dir, options),
            OriginSpec::S3 { bucket, prefix } => backend::open_s3(spec, &bucket, &prefix, options),
            OriginSpec::Http { url } => backend::open_http(spec, &url, options),
        }
    }

    /// Emulates a slow origin: every [`stat`](Origin::stat) and non-empty
    /// [`read`](Origin::read) sleeps `per_read` before touching the store.
    ///
    /// This stands in for a WAN or NFS round trip in experiments and tests:
    /// this kernel has no `netem` to delay real traffic.
    pub fn with_delay(mut self, per_read: Duration) -> Origin {
        self.delay = Some(per_read);
        self.description = format!("{} (+{per_read:?} emulated delay)", self.description);
        self
    }

    /// Declares that the origin's files never change, so that a store
    /// giving neither ETag nor `Last-Modified` is served all the same
    /// (`--origin-immutable`). Without it such files are refused with
    /// [`OriginError::NoValidator`]: a change could never be seen, and every
    /// node would serve the old bytes for ever, or mix old and new blocks.
    /// Stores that do give a validator are unaffected.
    pub fn immutable(mut self) -> Origin {
        self.immutable = true;
        self.description = format!("{} (immutable)", self.description);
        self
    }

    /// A human-readable description, e.g. `local directory /srv/data`.
    pub fn describe(&self) -> &str {
        &self.description
    }

    /// The size and version of the file at `path` (a HEAD request).
    pub async fn stat(&self, path: &str) -> Result<FileVersion, OriginError> {
        let location = self.location(path)?;
        self.pause().await;
        let (store, prefixed) = match &self.store {
            Store::Local(dir) => {
                let (dir, path) = (dir.clone(), path.to_owned());
                return blocking(path.clone(), move || dir.stat(&path)).await;
            }
            Store::Object { store, prefix, .. } => (store, prefixed(prefix, location)),
        };
        let meta = store
            .head(&prefixed)
            .await
            .map_err(|e| OriginError::from_store(path, e))?;
        FileVersion::from_meta(&meta, self.immutable).ok_or_else(|| OriginError::NoValidator {
            path: path.to_owned(),
        })
    }

    /// Reads `range` of `path`, which must still be at `version`.
    ///
    /// The range end is clamped to the version's size, and an empty range
    /// returns no bytes without contacting the origin. If the file changed
    /// since `version` was stat'ed the result is [`OriginError::Changed`]
    /// (the store refuses `If-Match` where it can, and the version it
    /// returns is compared in any case). A reply of the wrong length is
    /// [`OriginError::Short`].
    pub async fn read(
        &self,
        path: &str,
        version: &FileVersion,
        range: Range<u64>,
    ) -> Result<Bytes, OriginError> {
        let location = self.location(path)?;
        let range = range.start..range.end.min(version.size);
        if range.is_empty() {
            return Ok(Bytes::new());
        }
        if let Some(copy) = self.copies.get(path, &version.version) {
            let p = path.to_owned();
            return blocking(p.clone(), move || read_copy(&p, &copy, range)).await;
        }
        self.pause().await;
        let (store, location) = match &self.store {
            Store::Local(dir) => {
                let (dir, path, version) = (dir.clone(), path.to_owned(), version.clone());
                return blocking(path.clone(), move || dir.read(&path, &version, range)).await;
            }
            Store::Object { store, prefix, .. } => (store, prefixed(prefix, location)),
        };
        let options = GetOptions {
            if_match: version.if_match(),
            range: Some(GetRange::Bounded(range.clone())),
            ..GetOptions::default()
        };
        let fail = |e| OriginError::from_store(path, e);
        let got = store.get_opts(&location, options).await.map_err(fail)?;
        let got_version = FileVersion::from_meta(&got.meta, self.immutable);
        if got_version.is_none_or(|v| v.version != version.version) {
            return Err(OriginError::Changed { path: path.into() });
        }
        let bytes = got.bytes().await.map_err(fail)?;
        let expected = range.end - range.start;
        if bytes.len() as u64 != expected {
            return Err(OriginError::Short {
                path: path.into(),
                expected,
                got: bytes.len() as u64,
            });
        }
        Ok(bytes)
    }

    /// Forgets the writer's copy of `path` at `version`, if one is kept
    /// (see `origin/copies.rs`): its version is read from the store from
    /// now on.
    pub fn forget_copy(&self, path: &str, version: &FileVersion) {
        self.copies.forget(path, &version.version);
    }

    /// Probes the origin once, so that an unreachable or misconfigured
    /// origin fails at startup with an error naming it.
    ///
    /// A directory or S3 prefix lists its first entry (an empty prefix is
    /// fine; a missing bucket or bad credentials are not). An HTTP origin
    /// is asked for HEAD of its base URL: any answer from the server,
    /// including 404 or 403, shows it is reachable.
    pub async fn check(&self) -> Result<(), OriginError> {
        let (store, prefix, backend) = match &self.store {
            Store::Local(dir) => {
                let dir = dir.clone();
                let probe = tokio::task::spawn_blocking(move || dir.probe()).await;
                return match probe {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(e)) => Err(OriginError::BadDir {
                        dir: self.description.clone().into(),
                        why: e.to_string(),
                    }),
                    Err(e) => Err(OriginError::BadDir {
                        dir: self.description.clone().into(),
                        why: format!("the probe failed: {e}"),
                    }),
                };
            }
            Store::Object {
                store,
                prefix,
                backend,
            } => (store, prefix, backend),
        };
        let probe = match backend {
            backend::Backend::S3 => {
                let prefix = (!prefix.as_ref().is_empty()).then_some(prefix);
                match store.list(prefix).next().await {
                    Some(Err(e)) => Err(e),
                    _ => Ok(()),
                }
            }
            backend::Backend::Http => match store.head(&Path::default()).await {
                Err(
                    object_store::Error::NotFound { .. }
                    | object_store::Error::PermissionDenied { .. }
                    | object_store::Error::NotModified { .. }
                    | object_store::Error::Precondition { .. },
                ) => Ok(()),
                other => other.map(drop),
            },
        };
        probe.map_err(|source| OriginError::Unreachable {
            origin: self.description.clone(),
            source,
        })
    }

    /// The origin's space: a directory's file system's, an object
    /// store's [`Space::UNBOUNDED`], an HTTP server's none (read-only).
    pub fn space(&self) -> Space {
        match &self.store {
            Store::Local(dir) => dir.space().unwrap_or(Space::UNBOUNDED),
            Store::Object {
                backend: backend::Backend::S3,
                ..
            } => Space::UNBOUNDED,
            Store::Object { .. } => Space {
                free: 0,
                available: 0,
                files_free: 0,
                ..Space::UNBOUNDED
            },
        }
    }

    /// Checks a user-supplied path (see [`check_path`]); the local
    /// resolver and the store prefix come after.
    fn location(&self, path: &str) -> Result<Path, OriginError> {
        check_path(path)
    }

    /// How paths are resolved in a local directory origin (`None` for S3
    /// and HTTP); tests and the startup log use it.
    pub fn confinement(&self) -> Option<&'static str> {
        match &self.store {
            Store::Local(dir) => Some(match dir.resolver() {
                local::Resolver::Openat2 => "openat2 RESOLVE_BENEATH (links inside followed)",
                local::Resolver::Walk => "component walk with O_NOFOLLOW (links refused)",
            }),
            Store::Object { .. } => None,
        }
    }

    async fn pause(&self) {
        // A zero delay sleeps not at all: tokio's timer would round it up
        // to its millisecond tick.
        if let Some(delay) = self.delay.filter(|d| !d.is_zero()) {
            tokio::time::sleep(delay).await;
        }
    }

    /// Names, attributes and listings asked of this origin so far
    /// ([`Origin::entry`], [`Origin::list`]: a mount's lookups, `getattr`s
    /// and directory reads), for the metrics.
    pub fn metadata_requests(&self) -> u64 {
        self.counts.now().metadata
    }

    /// Requests this origin has seen so far, by kind (block reads and
    /// version stats aside: the node counts those).
    pub fn counts(&self) -> OriginCounts {
        self.counts.now()
    }

    /// Counts a metadata request, and waits as every request does.
    async fn metadata_request(&self) {
        self.counts.metadata();
        self.pause().await;
    }
}

/// A checked path under a store's key prefix.
fn prefixed(prefix: &Path, relative: Path) -> Path {
    if prefix.as_ref().is_empty() {
        return relative;
    }
    prefix.parts().chain(relative.parts()).collect()
}

/// Reads `range` of a writer's copy of a version of `path`.
fn read_copy(path: &str, copy: &std::fs::File, range: Range<u64>) -> Result<Bytes, OriginError> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0; (range.end - range.start) as usize];
    copy.read_exact_at(&mut buf, range.start)
        .map_err(|source| OriginError::Spool {
            path: path.into(),
            source,
        })?;
    Ok(Bytes::from(buf))
}

/// Runs a local directory call on the blocking pool, or on this thread if
/// it may block ([`on_this_thread`]).
async fn blocking<T: Send + 'static>(
    path: String,
    f: impl FnOnce() -> Result<T, OriginError> + Send + 'static,
) -> Result<T, OriginError> {
    if inline::may_block() {
        return f();
    }
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(OriginError::Local {
            path,
            source: std::io::Error::other(e),
        })
    })
}
