//! The gateway's conditional requests (`gateway::evaluate`): any
//! `If-Match`, `If-None-Match`, `If-Modified-Since`, `If-Unmodified-Since`,
//! `If-Range` and `Range` values against a file's validators. Input: lines
//! `name: value`, the first naming the file's version. Beyond not
//! panicking: a request carrying the file's own ETag in `If-None-Match`
//! (and no `If-Match` or `If-Unmodified-Since`) is never served in full,
//! and one with `If-Match: *` alone is never refused.

use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use coopcache_node::gateway::{Decision, Validators, evaluate};
use std::time::{Duration, UNIX_EPOCH};

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.lines();
    let version = lines.next().unwrap_or("");
    let v = Validators::new(
        version,
        Some(UNIX_EPOCH + Duration::from_secs(1_700_000_000)),
    );
    let mut headers = HeaderMap::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (Ok(name), Ok(value)) = (
            HeaderName::try_from(name.trim()),
            HeaderValue::from_str(value.trim()),
        ) else {
            continue;
        };
        headers.append(name, value);
    }
    // Any header set gets a decision without panicking.
    let _ = evaluate(&headers, &v);
    let own = HeaderValue::from_str(&v.etag());
    let plain = !headers.contains_key(header::IF_MATCH)
        && !headers.contains_key(header::IF_UNMODIFIED_SINCE);
    if plain && let Ok(own) = own {
        let mut h = headers.clone();
        h.insert(header::IF_NONE_MATCH, own);
        assert_eq!(evaluate(&h, &v), Decision::NotModified, "{h:?}");
    }
    let mut star = HeaderMap::new();
    star.insert(header::IF_MATCH, HeaderValue::from_static("*"));
    assert!(!matches!(evaluate(&star, &v), Decision::Failed));
}
