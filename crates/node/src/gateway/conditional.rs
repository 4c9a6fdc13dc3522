//! Conditional requests (RFC 9110 section 13): `If-Match`,
//! `If-Unmodified-Since`, `If-None-Match`, `If-Modified-Since` and
//! `If-Range`, evaluated in the order of section 13.2.2 against the file's
//! entity tag and modification time.
//!
//! `If-Range` matters most: a client resuming a download sends the ETag
//! (or date) of the copy it has with a `Range`; if the file changed, the
//! range must be ignored and the whole new file sent (13.1.5), or the
//! client splices two versions into a file that matches neither.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, header};

/// A file's validators: its entity tag and its modification time.
#[derive(Debug, Clone)]
pub struct Validators {
    /// The opaque tag, without quotes.
    pub tag: String,
    /// Whether the tag is weak (`W/`): the origin gave a weak one.
    pub weak: bool,
    /// Modification time, truncated to the second as HTTP dates are.
    pub modified: Option<SystemTime>,
}

impl Validators {
    /// The validators of an origin version string and modification time:
    /// quotes around the version are dropped, `W/` kept as weakness.
    pub fn new(version: &str, modified: Option<SystemTime>) -> Validators {
        let (weak, rest) = match version.strip_prefix("W/") {
            Some(rest) => (true, rest),
            None => (false, version),
        };
        let tag = rest.trim_matches('"');
        // An origin's version may hold what an entity tag may not (a quote,
        // a space, a control character): then the tag is a hash of it, so
        // the header stays well-formed and still changes with the version.
        // Found by the fuzz target `gateway_conditional`.
        let valid = |c: char| c == '\x21' || ('\x23'..='\x7e').contains(&c);
        let tag = if !tag.is_empty() && tag.chars().all(valid) {
            tag.to_owned()
        } else {
            blake3::hash(version.as_bytes()).to_hex()[..32].to_owned()
        };
        Validators {
            tag,
            weak,
            modified: modified.map(whole_seconds),
        }
    }

    /// The `ETag` header value.
    pub fn etag(&self) -> String {
        let w = if self.weak { "W/" } else { "" };
        format!("{w}\"{}\"", self.tag)
    }

    /// The `Last-Modified` header value.
    pub fn last_modified(&self) -> Option<String> {
        self.modified.map(httpdate::fmt_http_date)
    }
}

/// What the preconditions decide.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Serve the request; `honour_range` is false when `If-Range` did not
    /// match (the whole representation is sent instead of the range).
    Serve {
        /// Whether a `Range` header may be applied.
        honour_range: bool,
    },
    /// 304 Not Modified.
    NotModified,
    /// 412 Precondition Failed.
    Failed,
}

/// Evaluates the preconditions of a GET or HEAD (section 13.2.2).
pub fn evaluate(headers: &HeaderMap, v: &Validators) -> Decision {
    let text = |name| headers.get(name).and_then(|h| h.to_str().ok());
    let date = |name| text(name).and_then(|t| httpdate::parse_http_date(t).ok());
    // Step 1-2: If-Match, else If-Unmodified-Since.
    if let Some(list) = text(header::IF_MATCH) {
        if !matches_any(list, v, Compare::Strong) {
            return Decision::Failed;
        }
    } else if let (Some(since), Some(modified)) = (date(header::IF_UNMODIFIED_SINCE), v.modified)
        && modified > since
    {
        return Decision::Failed;
    }
    // Step 3-4: If-None-Match, else If-Modified-Since.
    if let Some(list) = text(header::IF_NONE_MATCH) {
        if matches_any(list, v, Compare::Weak) {
            return Decision::NotModified;
        }
    } else if let (Some(since), Some(modified)) = (date(header::IF_MODIFIED_SINCE), v.modified)
        && modified <= since
    {
        return Decision::NotModified;
    }
    // Step 5: If-Range (only meaningful with a Range).
    let honour_range = match text(header::IF_RANGE) {
        None => true,
        Some(_) if !headers.contains_key(header::RANGE) => true,
        Some(cond) => if_range_matches(cond.trim(), v),
    };
    Decision::Serve { honour_range }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Compare {
    Strong,
    Weak,
}

/// Whether `list` (`*` or comma-separated entity tags) names the file.
/// A malformed list matches nothing.
fn matches_any(list: &str, v: &Validators, how: Compare) -> bool {
    if list.trim() == "*" {
        return true; // the file exists: we are answering for it
    }
    parse_tags(list).is_some_and(|tags| {
        tags.iter()
            .any(|(weak, tag)| *tag == v.tag && (how == Compare::Weak || (!weak && !v.weak)))
    })
}

/// `If-Range`: a strong entity tag equal to ours, or an HTTP date equal to
/// our modification time (section 13.1.5); a weak tag never matches.
fn if_range_matches(cond: &str, v: &Validators) -> bool {
    if cond.starts_with('"') || cond.starts_with("W/") {
        return matches!(parse_tags(cond).as_deref(), Some([(false, tag)]) if *tag == v.tag && !v.weak);
    }
    match (httpdate::parse_http_date(cond), v.modified) {
        (Ok(date), Some(modified)) => date == modified,
        _ => false,
    }
}

/// Parses `#entity-tag` (section 8.8.3): `W/"..."` or `"..."`, separated
/// by commas and spaces. `None` if any element is malformed.
fn parse_tags(list: &str) -> Option<Vec<(bool, &str)>> {
    let mut tags = Vec::new();
    let mut rest = list;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return Some(tags);
        }
        let weak = rest.starts_with("W/");
        if weak {
            rest = &rest[2..];
        }
        let body = rest.strip_prefix('"')?;
        let end = body.find('"')?;
        tags.push((weak, &body[..end]));
        rest = &body[end + 1..];
        if !(rest.is_empty() || rest.starts_with([',', ' ', '\t'])) {
            return None;
        }
    }
}

fn whole_seconds(t: SystemTime) -> SystemTime {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => UNIX_EPOCH + Duration::from_secs(d.as_secs()),
        Err(_) => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn v() -> Validators {
        Validators::new(
            "abc-1",
            Some(UNIX_EPOCH + Duration::from_millis(1_700_000_000_500)),
        )
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, val) in pairs {
            h.insert(k.clone(), HeaderValue::from_str(val).expect("header"));
        }
        h
    }

    const BEFORE: &str = "Tue, 14 Nov 2023 22:13:19 GMT"; // 1699999999
    const AT: &str = "Tue, 14 Nov 2023 22:13:20 GMT"; // 1700000000

    #[test]
    fn etags_and_dates_render() {
        assert_eq!(v().etag(), "\"abc-1\"");
        assert_eq!(Validators::new("\"s3tag\"", None).etag(), "\"s3tag\"");
        assert_eq!(Validators::new("W/\"w\"", None).etag(), "W/\"w\"");
        assert_eq!(v().last_modified().as_deref(), Some(AT));
        // Not a valid entity tag: hashed, quoted once, still strong.
        let odd = Validators::new("x\"abc-1\"", None).etag();
        assert!(odd.len() == 34 && !odd[1..33].contains('"'), "{odd}");
        assert_ne!(odd, Validators::new("x\"abc-2\"", None).etag());
    }

    #[test]
    fn preconditions_follow_section_13_2_2() {
        use Decision::*;
        let serve = Serve { honour_range: true };
        let ev = |pairs: &[(header::HeaderName, &str)]| evaluate(&headers(pairs), &v());
        assert_eq!(ev(&[]), serve);
        assert_eq!(ev(&[(header::IF_NONE_MATCH, "\"abc-1\"")]), NotModified);
        assert_eq!(ev(&[(header::IF_NONE_MATCH, "W/\"abc-1\"")]), NotModified);
        assert_eq!(
            ev(&[(header::IF_NONE_MATCH, "\"x\", \"abc-1\"")]),
            NotModified
        );
        assert_eq!(ev(&[(header::IF_NONE_MATCH, "*")]), NotModified);
        assert_eq!(ev(&[(header::IF_NONE_MATCH, "\"old\"")]), serve);
        assert_eq!(ev(&[(header::IF_MATCH, "\"abc-1\"")]), serve);
        assert_eq!(ev(&[(header::IF_MATCH, "W/\"abc-1\"")]), Failed);
        assert_eq!(ev(&[(header::IF_MATCH, "\"old\"")]), Failed);
        assert_eq!(ev(&[(header::IF_MATCH, "garbage")]), Failed);
        assert_eq!(ev(&[(header::IF_MODIFIED_SINCE, AT)]), NotModified);
        assert_eq!(ev(&[(header::IF_MODIFIED_SINCE, BEFORE)]), serve);
        assert_eq!(ev(&[(header::IF_MODIFIED_SINCE, "not a date")]), serve);
        assert_eq!(ev(&[(header::IF_UNMODIFIED_SINCE, BEFORE)]), Failed);
        assert_eq!(ev(&[(header::IF_UNMODIFIED_SINCE, AT)]), serve);
        // If-None-Match wins over If-Modified-Since; If-Match over
        // If-Unmodified-Since.
        assert_eq!(
            ev(&[
                (header::IF_NONE_MATCH, "\"old\""),
                (header::IF_MODIFIED_SINCE, AT)
            ]),
            serve
        );
        assert_eq!(
            ev(&[
                (header::IF_MATCH, "\"abc-1\""),
                (header::IF_UNMODIFIED_SINCE, BEFORE)
            ]),
            serve
        );
    }

    #[test]
    fn if_range_needs_a_strong_match_or_the_exact_date() {
        let ev = |cond: &str| {
            evaluate(
                &headers(&[(header::RANGE, "bytes=0-9"), (header::IF_RANGE, cond)]),
                &v(),
            )
        };
        let range = |honour_range| Decision::Serve { honour_range };
        assert_eq!(ev("\"abc-1\""), range(true));
        assert_eq!(ev("\"stale\""), range(false));
        assert_eq!(ev("W/\"abc-1\""), range(false));
        assert_eq!(ev(AT), range(true));
        assert_eq!(ev(BEFORE), range(false));
        assert_eq!(ev("nonsense"), range(false));
        // Without a Range, If-Range is ignored.
        let no_range = evaluate(&headers(&[(header::IF_RANGE, "\"stale\"")]), &v());
        assert_eq!(no_range, range(true));
    }
}
