//! Listing a bucket (`ListObjectsV2`, `ListObjects`): a walk of the
//! origin's directories in S3's key order, pruned by the prefix, resumed
//! after a key, stopped at a page's size.
//!
//! S3 sorts keys by their bytes, and `a-b` comes before `a/c` (`-` is
//! below `/`): a directory `a` therefore sorts among its siblings as
//! `a/`, and the walk visits siblings in that order, which yields every
//! key of the bucket in S3's order without holding more than one
//! directory's listing per level. A directory with nothing in it is the
//! key `dir/` (an empty object, as MinIO shows one, and as rclone and s3fs
//! make one for `mkdir`).

use super::errors::from_origin;
use super::meta::ObjectMeta;
use super::names::bucket_path;
use crate::handle::NodeHandle;
use crate::origin::{EntryKind, FileVersion};
use futures::StreamExt;
use s3s::S3Result;
use std::sync::Arc;

/// S3's largest page.
pub const MAX_KEYS: usize = 1000;

/// Objects stated at once while a page is filled.
const STAT_AHEAD: usize = 32;

/// What a listing asks.
pub(super) struct Query<'a> {
    pub bucket: &'a str,
    pub prefix: &'a str,
    /// Keys holding it after the prefix are rolled up into common prefixes.
    pub delimiter: Option<&'a str>,
    /// Only keys (and common prefixes) after this one.
    pub after: Option<&'a str>,
    /// Keys and common prefixes in the page, at most [`MAX_KEYS`].
    pub max: usize,
    /// C2Cfs `exclusive` mode: directories are listed by their managers
    /// (`crate::listing`), each once per change for the whole cluster.
    pub exclusive: bool,
}

/// One page of a listing.
#[derive(Debug, Default)]
pub(super) struct Page {
    /// Objects, in key order: key, version, and the S3 attributes kept
    /// with that version.
    pub objects: Vec<(String, Arc<FileVersion>, Option<ObjectMeta>)>,
    /// Common prefixes, in order.
    pub prefixes: Vec<String>,
    /// More keys follow.
    pub truncated: bool,
    /// The last key or common prefix of the page: where the next starts.
    pub last: Option<String>,
}

/// A directory's entry as a key: the key, what it is, and a file's
/// version if the listing gave it.
type Listed = (String, EntryKind, Option<FileVersion>);

/// A directory being walked: its key prefix (`""` or ending in `/`), its
/// entries as keys in order, and the next one to visit.
struct Frame {
    entries: Vec<Listed>,
    next: usize,
}

/// Lists one page of `q.bucket`.
pub(super) async fn page(node: &NodeHandle, q: &Query<'_>) -> S3Result<Page> {
    let bucket = bucket_path(q.bucket)?;
    let max = q.max.min(MAX_KEYS);
    let mut page = Page::default();
    let mut keys: Vec<(String, Option<FileVersion>)> = Vec::new();
    if max == 0 {
        return Ok(page);
    }
    // Start in the deepest directory the prefix names whole: `a/b/c` is
    // walked from `a/b/`.
    let start = match q.prefix.rfind('/') {
        Some(i) => &q.prefix[..=i],
        None => "",
    };
    let Some(first) = entries(node, q, bucket, start).await? else {
        return Ok(page); // no such directory: nothing has the prefix
    };
    let mut stack = vec![Frame {
        entries: first,
        next: 0,
    }];
    let after = q.after.unwrap_or("");
    while let Some(top) = stack.last_mut() {
        let Some((key, kind, version)) = top.entries.get(top.next).cloned() else {
            stack.pop();
            continue;
        };
        top.next += 1;
        // Rolled up into a common prefix: the key's part after the prefix
        // holds the delimiter (a directory: within its own name, so every
        // key under it rolls up alike).
        if let Some(cp) = common_prefix(q.prefix, q.delimiter, &key, kind) {
            if cp.as_str() > after && page.prefixes.last() != Some(&cp) {
                if keys.len() + page.prefixes.len() == max {
                    page.truncated = true;
                    break;
                }
                page.last = Some(cp.clone());
                page.prefixes.push(cp);
            }
            continue;
        }
        if kind == EntryKind::Dir {
            // Every key under `key` is before `after`: skip the subtree.
            if key.as_str() < after && !after.starts_with(key.as_str()) {
                continue;
            }
            if let Some(inner) = entries(node, q, bucket, &key).await?
                && !inner.is_empty()
            {
                stack.push(Frame {
                    entries: inner,
                    next: 0,
                });
                continue;
            }
            // An empty directory is the object `key`.
        }
        if key.as_str() > after && !take(&mut page, &mut keys, max, key, version) {
            break;
        }
    }
    page.objects = describe(node, bucket, keys).await;
    Ok(page)
}

/// Puts object `key` in the page, unless the page is full (then marked
/// truncated): whether it was.
fn take(
    page: &mut Page,
    keys: &mut Vec<(String, Option<FileVersion>)>,
    max: usize,
    key: String,
    version: Option<FileVersion>,
) -> bool {
    if keys.len() + page.prefixes.len() == max {
        page.truncated = true;
        return false;
    }
    page.last = Some(key.clone());
    keys.push((key, version));
    true
}

/// The common prefix `key` rolls up into, if any.
fn common_prefix(
    prefix: &str,
    delimiter: Option<&str>,
    key: &str,
    kind: EntryKind,
) -> Option<String> {
    let d = delimiter.filter(|d| !d.is_empty())?;
    let rest = key.strip_prefix(prefix)?;
    let at = rest.find(d)?;
    let end = prefix.len() + at + d.len();
    // A file's key with the delimiter after the prefix rolls up; so does
    // a directory's when the delimiter ends within its key (all its keys
    // share that much). One that does not is walked.
    (kind != EntryKind::Dir || end <= key.len()).then(|| key[..end].to_owned())
}

/// The entries of the directory at key prefix `dir` whose keys start with
/// `prefix` (or lead to it), in key order; `None` if it is not there.
async fn entries(
    node: &NodeHandle,
    q: &Query<'_>,
    bucket: &str,
    dir: &str,
) -> S3Result<Option<Vec<Listed>>> {
    let prefix = q.prefix;
    let path = match dir.strip_suffix('/') {
        Some(d) => format!("{bucket}/{d}"),
        None => bucket.to_owned(),
    };
    let listed = match q.exclusive {
        true => (node.list_exclusive(&path).await).map(|l| l.entries().to_vec()),
        false => node.origin().list(&path).await,
    };
    let listed = match listed {
        Ok(l) => l,
        Err(e)
            if e.is_not_found()
                || matches!(e, crate::origin::OriginError::NotADirectory { .. }) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(from_origin(e)),
    };
    let mut out: Vec<Listed> = listed
        .into_iter()
        .map(|e| {
            let key = match e.kind {
                EntryKind::Dir => format!("{dir}{}/", e.name),
                _ => format!("{dir}{}", e.name),
            };
            (key, e.kind, e.version)
        })
        .filter(|(key, _, _)| key.starts_with(prefix))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Some(out))
}

/// Each key's version (size, tag, time): the listing's where it gave one
/// (an object store's: one request a page, not one a key), else stated
/// through the node's version cache; a key removed since the listing is
/// left out.
async fn describe(
    node: &NodeHandle,
    bucket: &str,
    keys: Vec<(String, Option<FileVersion>)>,
) -> Vec<(String, Arc<FileVersion>, Option<ObjectMeta>)> {
    futures::stream::iter(keys)
        .map(|(key, listed)| async move {
            if key.ends_with('/') {
                let version = Arc::new(FileVersion {
                    size: 0,
                    version: "dir".into(),
                    modified: None,
                    perm: 0o755,
                    owner: None,
                });
                return Some((key, version, None));
            }
            let path = format!("{bucket}/{key}");
            let version = match listed {
                Some(v) => Arc::new(v),
                None => node.stat(&path).await.ok()?,
            };
            let meta = ObjectMeta::of(node, &path).await;
            Some((key, version, meta))
        })
        .buffered(STAT_AHEAD)
        .filter_map(|x| async move { x })
        .collect()
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_roll_up_at_the_delimiter_after_the_prefix() {
        let f = EntryKind::File;
        let d = EntryKind::Dir;
        assert_eq!(common_prefix("", Some("/"), "a/", d).as_deref(), Some("a/"));
        assert_eq!(common_prefix("", Some("/"), "a", f), None);
        assert_eq!(
            common_prefix("a/", Some("/"), "a/b/", d).as_deref(),
            Some("a/b/")
        );
        assert_eq!(common_prefix("a/", Some("/"), "a/x", f), None);
        assert_eq!(
            common_prefix("", Some("-"), "x-1", f).as_deref(),
            Some("x-")
        );
        // The delimiter is not in the directory's own key: walked.
        assert_eq!(common_prefix("", Some("-"), "a/", d), None);
        assert_eq!(common_prefix("", None, "a/", d), None);
        assert_eq!(common_prefix("", Some(""), "a/", d), None);
    }
}
