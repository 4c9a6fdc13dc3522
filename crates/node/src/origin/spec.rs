//! The origin spec: where the origin lives, as the operator writes it.

use std::path::PathBuf;
use std::str::FromStr;

use super::OriginError;

/// The forms an [`OriginSpec`] is parsed from, for error messages.
pub const ACCEPTED_FORMS: &str = "accepted forms: DIR, file:///DIR, s3://BUCKET[/PREFIX], \
     http://HOST[:PORT][/PREFIX], https://HOST[:PORT][/PREFIX]";

/// Where an origin lives, parsed from an operator's spec string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OriginSpec {
    /// A local directory: `DIR` or `file:///DIR` (taken literally, no
    /// percent-decoding).
    Local(PathBuf),
    /// An S3 (or S3-compatible) bucket and key prefix: `s3://BUCKET/PREFIX`.
    /// The endpoint, region and credentials come from the `AWS_*`
    /// environment or from options.
    S3 {
        /// The bucket name.
        bucket: String,
        /// The key prefix, without leading or trailing `/` (may be empty).
        prefix: String,
    },
    /// An HTTP(S) server and URL prefix: `http://HOST/PREFIX`. The server
    /// must answer HEAD and ranged GET (nginx, Apache, most CDNs do).
    Http {
        /// The base URL, without trailing `/`.
        url: String,
    },
}

impl FromStr for OriginSpec {
    type Err = OriginError;

    fn from_str(spec: &str) -> Result<Self, OriginError> {
        let bad = |why: &str| OriginError::BadSpec {
            spec: spec.to_owned(),
            why: format!("{why}; {ACCEPTED_FORMS}"),
        };
        if spec.is_empty() {
            return Err(bad("it is empty"));
        }
        let Some((scheme, rest)) = spec.split_once("://") else {
            return Ok(OriginSpec::Local(PathBuf::from(spec)));
        };
        match scheme {
            "file" if rest.starts_with('/') => Ok(OriginSpec::Local(PathBuf::from(rest))),
            "file" => Err(bad("a file: URL takes an absolute path (three slashes)")),
            "s3" => parse_s3(rest).map_err(bad),
            "http" | "https" => parse_http(spec).map_err(bad),
            _ => Err(bad(&format!("unknown scheme {scheme:?}"))),
        }
    }
}

fn parse_s3(rest: &str) -> Result<OriginSpec, &'static str> {
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err("the bucket name is empty");
    }
    let bucket_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
    if !bucket.chars().all(bucket_char) {
        return Err("a bucket name takes letters, digits, '-', '.' and '_' only");
    }
    let prefix = prefix.trim_matches('/');
    if !prefix.is_empty() && object_store::path::Path::parse(prefix).is_err() {
        return Err("the key prefix has an empty, '.' or '..' part or a control character");
    }
    Ok(OriginSpec::S3 {
        bucket: bucket.to_owned(),
        prefix: prefix.to_owned(),
    })
}

fn parse_http(spec: &str) -> Result<OriginSpec, &'static str> {
    let rest = spec.split_once("://").map_or("", |(_, rest)| rest);
    if rest.split('/').next().is_none_or(str::is_empty) {
        return Err("the host is empty");
    }
    if spec.contains(['?', '#']) {
        return Err("an HTTP origin takes no query or fragment");
    }
    // The store appends path parts after a `/` of its own: a trailing `/`
    // here would double it.
    Ok(OriginSpec::Http {
        url: spec.trim_end_matches('/').to_owned(),
    })
}
