//! The origin: the slow shared storage behind the cache (the paper's
//! server disk), reached through `object_store`.
//!
//! An origin is a local directory, an S3 (or S3-compatible) bucket prefix or
//! an HTTP(S) URL prefix. The cache only ever reads it: [`Origin::stat`]
//! gives a file's size and [`FileVersion`], and [`Origin::read`] reads a
//! byte range of exactly that version, so a block cached under one version
//! is never mixed with bytes of another.
//!
//! Paths from users go through [`check_path`] first; they can never name
//! anything outside the origin's root or prefix. (A local origin follows
//! symbolic links found inside its directory: placing them there is the
//! operator's choice.)

mod error;
mod path;
mod spec;

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::http::HttpBuilder;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ClientConfigKey, GetOptions, GetRange, ObjectMeta, ObjectStore, RetryConfig};

pub use error::OriginError;
pub use path::check_path;
pub use spec::{ACCEPTED_FORMS, OriginSpec};

/// Retries for remote origins: a few quick ones for a dropped connection or
/// a 5xx, bounded so an unreachable origin fails in seconds, not the
/// three minutes `object_store` allows by default.
fn retry_config() -> RetryConfig {
    RetryConfig {
        max_retries: 3,
        retry_timeout: Duration::from_secs(15),
        ..RetryConfig::default()
    }
}

/// Which kind of store an origin is; decides how [`Origin::check`] probes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    Local,
    S3,
    Http,
}

/// A version of a file in the origin: its size and a version string that
/// changes whenever the content may have changed.
///
/// The version is the store's ETag when it gives one: S3's content hash,
/// nginx's `"mtime-size"`, and for a local directory `object_store`'s
/// `inode-mtime-size` (hex, mtime in microseconds), so a rewritten or
/// replaced file never matches an old version. A store without ETags falls
/// back to `lm-<last-modified µs>-<size>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FileVersion {
    /// The file's size in bytes.
    pub size: u64,
    /// The store's version string (see the type's documentation).
    pub version: String,
}

/// Prefix of a version string made up from the modification time, for
/// stores that give no ETag. No ETag form starts with it (strong ETags
/// are quoted or, for local files, hex).
const FALLBACK: &str = "lm-";

impl FileVersion {
    fn from_meta(meta: &ObjectMeta) -> FileVersion {
        let version = match &meta.e_tag {
            Some(e_tag) => e_tag.clone(),
            None => format!(
                "{FALLBACK}{}-{}",
                meta.last_modified.timestamp_micros(),
                meta.size
            ),
        };
        FileVersion {
            size: meta.size,
            version,
        }
    }

    /// The `If-Match` value for this version, when the store can check it:
    /// a strong ETag. Weak ETags never match strongly, and a made-up
    /// version is unknown to the store; both are checked after the fact.
    fn if_match(&self) -> Option<String> {
        let v = &self.version;
        (!v.starts_with(FALLBACK) && !v.starts_with("W/")).then(|| v.clone())
    }
}

/// The slow shared storage behind the cache.
#[derive(Clone, Debug)]
pub struct Origin {
    store: Arc<dyn ObjectStore>,
    /// Key prefix inside the store (S3); empty for a directory or HTTP,
    /// whose store is rooted at the prefix already.
    prefix: Path,
    backend: Backend,
    description: String,
    delay: Option<Duration>,
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
            OriginSpec::Local(dir) => open_local(spec, &dir, options),
            OriginSpec::S3 { bucket, prefix } => open_s3(spec, &bucket, &prefix, options),
            OriginSpec::Http { url } => open_http(spec, &url, options),
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

    /// A human-readable description, e.g. `local directory /srv/data`.
    pub fn describe(&self) -> &str {
        &self.description
    }

    /// The size and version of the file at `path` (a HEAD request).
    pub async fn stat(&self, path: &str) -> Result<FileVersion, OriginError> {
        let location = self.location(path)?;
        self.pause().await;
        let meta = self
            .store
            .head(&location)
            .await
            .map_err(|e| OriginError::from_store(path, e))?;
        Ok(FileVersion::from_meta(&meta))
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
        self.pause().await;
        let options = GetOptions {
            if_match: version.if_match(),
            range: Some(GetRange::Bounded(range.clone())),
            ..GetOptions::default()
        };
        let fail = |e| OriginError::from_store(path, e);
        let got = self
            .store
            .get_opts(&location, options)
            .await
            .map_err(fail)?;
        if FileVersion::from_meta(&got.meta).version != version.version {
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

    /// Probes the origin once, so that an unreachable or misconfigured
    /// origin fails at startup with an error naming it.
    ///
    /// A directory or S3 prefix lists its first entry (an empty prefix is
    /// fine; a missing bucket or bad credentials are not). An HTTP origin
    /// is asked for HEAD of its base URL: any answer from the server,
    /// including 404 or 403, shows it is reachable.
    pub async fn check(&self) -> Result<(), OriginError> {
        let probe = match self.backend {
            Backend::Local | Backend::S3 => {
                let prefix = (!self.prefix.as_ref().is_empty()).then_some(&self.prefix);
                match self.store.list(prefix).next().await {
                    Some(Err(e)) => Err(e),
                    _ => Ok(()),
                }
            }
            Backend::Http => match self.store.head(&Path::default()).await {
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

    /// The store location of a user-supplied path.
    fn location(&self, path: &str) -> Result<Path, OriginError> {
        let relative = check_path(path)?;
        if self.prefix.as_ref().is_empty() {
            return Ok(relative);
        }
        Ok(self.prefix.parts().chain(relative.parts()).collect())
    }

    async fn pause(&self) {
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
    }
}

fn open_local(
    spec: &str,
    dir: &std::path::Path,
    options: &[(&str, &str)],
) -> Result<Origin, OriginError> {
    if let Some((key, _)) = options.first() {
        return Err(OriginError::BadOption {
            spec: spec.into(),
            key: (*key).into(),
            why: "a local directory takes no options".into(),
        });
    }
    let bad_dir = |why: String| OriginError::BadDir {
        dir: dir.to_owned(),
        why,
    };
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(bad_dir("it is not a directory".into())),
        Err(e) => return Err(bad_dir(e.to_string())),
    }
    let store = LocalFileSystem::new_with_prefix(dir).map_err(|e| bad_dir(e.to_string()))?;
    let root = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
    Ok(Origin {
        store: Arc::new(store),
        prefix: Path::default(),
        backend: Backend::Local,
        description: format!("local directory {}", root.display()),
        delay: None,
    })
}

fn open_s3(
    spec: &str,
    bucket: &str,
    prefix: &str,
    options: &[(&str, &str)],
) -> Result<Origin, OriginError> {
    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_retry(retry_config());
    for (key, value) in options {
        let parsed: AmazonS3ConfigKey = key.parse().map_err(|e| bad_option(spec, key, e))?;
        builder = builder.with_config(parsed, *value);
    }
    let endpoint = builder.get_config_value(&AmazonS3ConfigKey::Endpoint);
    let store = builder.build().map_err(|e| bad_spec(spec, e))?;
    let prefix = Path::parse(prefix).map_err(|e| bad_spec(spec, e))?;
    let mut description = format!("s3://{bucket}/{prefix}");
    if let Some(endpoint) = endpoint {
        description = format!("{description} at {endpoint}");
    }
    Ok(Origin {
        store: Arc::new(store),
        prefix,
        backend: Backend::S3,
        description,
        delay: None,
    })
}

fn open_http(spec: &str, url: &str, options: &[(&str, &str)]) -> Result<Origin, OriginError> {
    let mut builder = HttpBuilder::new().with_url(url).with_retry(retry_config());
    for (key, value) in options {
        let parsed: ClientConfigKey = key.parse().map_err(|e| bad_option(spec, key, e))?;
        builder = builder.with_config(parsed, *value);
    }
    let store = builder.build().map_err(|e| bad_spec(spec, e))?;
    Ok(Origin {
        store: Arc::new(store),
        prefix: Path::default(),
        backend: Backend::Http,
        description: url.to_owned(),
        delay: None,
    })
}

fn bad_spec(spec: &str, e: impl std::fmt::Display) -> OriginError {
    OriginError::BadSpec {
        spec: spec.into(),
        why: e.to_string(),
    }
}

fn bad_option(spec: &str, key: &str, e: impl std::fmt::Display) -> OriginError {
    OriginError::BadOption {
        spec: spec.into(),
        key: key.into(),
        why: e.to_string(),
    }
}
