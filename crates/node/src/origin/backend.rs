//! Opening each kind of store: a local directory, S3, HTTP.

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::http::HttpBuilder;
use object_store::path::Path;
use object_store::{ClientConfigKey, RetryConfig};

use super::local::LocalDir;
use super::{Origin, OriginError, Store};

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
pub(super) enum Backend {
    S3,
    Http,
}

pub(super) fn open_local(
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
    let local = LocalDir::open(dir).map_err(|e| bad_dir(e.to_string()))?;
    let root = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
    Ok(Origin {
        store: Store::Local(Arc::new(local)),
        description: format!("local directory {}", root.display()),
        delay: None,
        immutable: false,
        copies: Arc::default(),
        counts: Arc::default(),
    })
}

pub(super) fn open_s3(
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
        store: Store::Object {
            store: Arc::new(store),
            prefix,
            backend: Backend::S3,
        },
        description,
        delay: None,
        immutable: false,
        copies: Arc::default(),
        counts: Arc::default(),
    })
}

pub(super) fn open_http(
    spec: &str,
    url: &str,
    options: &[(&str, &str)],
) -> Result<Origin, OriginError> {
    let mut builder = HttpBuilder::new().with_url(url).with_retry(retry_config());
    // An `http://` spec asks for plain HTTP; `object_store` refuses it unless told.
    if url.starts_with("http://") {
        builder = builder.with_config(ClientConfigKey::AllowHttp, "true");
    }
    for (key, value) in options {
        let parsed: ClientConfigKey = key.parse().map_err(|e| bad_option(spec, key, e))?;
        builder = builder.with_config(parsed, *value);
    }
    let store = builder.build().map_err(|e| bad_spec(spec, e))?;
    Ok(Origin {
        store: Store::Object {
            store: Arc::new(store),
            prefix: Path::default(),
            backend: Backend::Http,
        },
        description: url.to_owned(),
        delay: None,
        immutable: false,
        copies: Arc::default(),
        counts: Arc::default(),
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
