//! Buckets and keys as the origin's paths: bucket `b`, key `k` is the
//! origin's `b/k`. S3 allows keys no file system path can be (`a//b`,
//! `../x`, a trailing `.`); those are refused with `InvalidArgument`
//! naming the key and the reason, never mapped to another path.

use crate::origin::check_path;
use s3s::{S3Result, s3_error};

/// S3's limit on a key's length in bytes.
pub const MAX_KEY: usize = 1024;

/// What a key names in the origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Target {
    /// A file: its origin path.
    File(String),
    /// A key ending in `/`: a directory, its origin path.
    Dir(String),
}

impl Target {
    /// The origin path.
    pub(super) fn path(&self) -> &str {
        match self {
            Target::File(p) | Target::Dir(p) => p,
        }
    }
}

/// The origin path of bucket `bucket` (a top-level directory).
pub(super) fn bucket_path(bucket: &str) -> S3Result<&str> {
    // `s3s` checked the name against S3's rules (lowercase letters, digits,
    // `-`, `.`); a name of dots alone is still no directory of ours.
    match check_path(bucket) {
        Ok(_) if !bucket.contains('/') => Ok(bucket),
        _ => Err(s3_error!(
            InvalidBucketName,
            "bucket name {bucket} is not a directory name"
        )),
    }
}

/// The origin path bucket `bucket`'s key `key` names.
pub(super) fn target(bucket: &str, key: &str) -> S3Result<Target> {
    let bucket = bucket_path(bucket)?;
    if key.len() > MAX_KEY {
        return Err(s3_error!(
            KeyTooLongError,
            "key longer than {MAX_KEY} bytes"
        ));
    }
    let (rest, dir) = match key.strip_suffix('/') {
        Some(rest) => (rest, true),
        None => (key, false),
    };
    if let Err(e) = check_path(rest) {
        return Err(s3_error!(
            InvalidArgument,
            "key {key:?} cannot name a file in the origin: {e}"
        ));
    }
    let path = format!("{bucket}/{rest}");
    Ok(if dir {
        Target::Dir(path)
    } else {
        Target::File(path)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_paths_under_their_bucket() {
        assert_eq!(
            target("b", "x/y.bin").expect("file"),
            Target::File("b/x/y.bin".into())
        );
        assert_eq!(target("b", "x/").expect("dir"), Target::Dir("b/x".into()));
        for bad in ["", "/", "a//b", "../x", "a/../../etc/passwd", "x//"] {
            let e = target("b", bad).expect_err(bad);
            assert_eq!(e.code().as_str(), "InvalidArgument", "{bad:?}");
        }
        let long = "k".repeat(MAX_KEY + 1);
        assert_eq!(
            target("b", &long).expect_err("long").code().as_str(),
            "KeyTooLongError"
        );
        assert!(bucket_path("..").is_err());
    }
}
