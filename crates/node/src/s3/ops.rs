//! The cache's own operations on the S3 endpoint, for clients that speak
//! only S3 (a training job's credentials, `curl --aws-sigv4`): signed
//! like any request, with the endpoint's keys, never anonymous.
//!
//! - `POST /BUCKET/KEY?coopcache-warm`: warms the key (a file), or the
//!   prefix if it ends in `/` or names a directory (`crate::warm`);
//! - `POST /BUCKET/KEY?coopcache-pin`, `POST /BUCKET/KEY?coopcache-evict`:
//!   pins it on this node, or evicts it from the cluster (`crate::pins`);
//! - `DELETE /BUCKET/KEY?coopcache-pin`: unpins it.
//!
//! Each answers when done, with the gateway's JSON (the last progress
//! line of `POST /v1/warm`, or what `unpin` let go); a client that goes
//! away stops it. A warm-up or pin that stopped early (the pinned share
//! full) is `507 Insufficient Storage` with the same JSON.

use super::errors::from_node;
use super::names::{bucket_path, target};
use crate::handle::NodeHandle;
use crate::warm::{Goal, Warm};
use hyper::http::{Extensions, HeaderValue, StatusCode};
use hyper::{HeaderMap, Method, Uri};
use s3s::route::S3Route;
use s3s::{Body, S3Request, S3Response, S3Result, s3_error};
use std::sync::Arc;

/// The goals the query can name, as `coopcache-VERB` ([`Goal::verb`]).
const GOALS: [Goal; 3] = [Goal::Warm, Goal::Pin, Goal::Evict];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Run(Goal),
    Unpin,
}

/// The route `s3s` asks before its own operations.
pub(super) struct CacheOps {
    pub(super) node: Arc<NodeHandle>,
}

/// The operation `method` and `uri` ask for, if any: the query must be
/// one operation's word alone (S3's own sub-resources never start so).
fn op_of(method: &Method, uri: &Uri) -> Option<Op> {
    let query = uri.query()?;
    let word = query.strip_suffix('=').unwrap_or(query);
    let verb = word.strip_prefix("coopcache-")?;
    let goal = *GOALS.iter().find(|g| g.verb() == verb)?;
    match (method, goal) {
        (&Method::POST, goal) => Some(Op::Run(goal)),
        (&Method::DELETE, Goal::Pin) => Some(Op::Unpin),
        _ => None,
    }
}

/// The origin path of a path-style URI's bucket and key ("" key: the
/// whole bucket).
fn path_of(uri: &Uri) -> S3Result<String> {
    let raw = uri.path().trim_start_matches('/');
    let decoded = percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .map_err(|_| s3_error!(InvalidURI, "the path is not UTF-8"))?;
    let (bucket, key) = decoded.split_once('/').unwrap_or((&decoded, ""));
    if bucket.is_empty() {
        return Err(s3_error!(
            InvalidRequest,
            "name a bucket, and a key or prefix"
        ));
    }
    Ok(match key {
        "" => bucket_path(bucket)?.to_owned(),
        key => target(bucket, key)?.path().to_owned(),
    })
}

fn json(status: StatusCode, value: &impl serde::Serialize) -> S3Response<Body> {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    let mut r = S3Response::new(Body::from(bytes::Bytes::from(bytes)));
    r.status = Some(status);
    r.headers.insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

#[async_trait::async_trait]
impl S3Route for CacheOps {
    fn is_match(&self, method: &Method, uri: &Uri, _: &HeaderMap, _: &mut Extensions) -> bool {
        op_of(method, uri).is_some()
    }

    async fn call(&self, req: S3Request<Body>) -> S3Result<S3Response<Body>> {
        let op = op_of(&req.method, &req.uri).ok_or_else(|| s3_error!(NotImplemented))?;
        let path = path_of(&req.uri)?;
        match op {
            Op::Unpin => {
                let done = self.node.unpin(&path).await.map_err(from_node)?;
                Ok(json(StatusCode::OK, &done))
            }
            Op::Run(goal) => {
                let run = Warm::start_for(self.node.clone(), path, goal)
                    .await
                    .map_err(from_node)?;
                let done = run.finish().await;
                let status = match done.error {
                    Some(_) => StatusCode::INSUFFICIENT_STORAGE,
                    None => StatusCode::OK,
                };
                Ok(json(status, &done))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_query_of_one_operation_word_is_ours() {
        let op = |m: Method, u: &str| op_of(&m, &u.parse().unwrap());
        assert_eq!(
            op(Method::POST, "/b/k?coopcache-warm"),
            Some(Op::Run(Goal::Warm))
        );
        assert_eq!(
            op(Method::POST, "/b/k?coopcache-pin="),
            Some(Op::Run(Goal::Pin))
        );
        assert_eq!(op(Method::DELETE, "/b/k?coopcache-pin"), Some(Op::Unpin));
        assert_eq!(op(Method::DELETE, "/b/k?coopcache-warm"), None);
        assert_eq!(op(Method::GET, "/b/k?coopcache-pin"), None);
        assert_eq!(op(Method::POST, "/b/k?uploads"), None, "S3's own");
        assert_eq!(op(Method::POST, "/b/k?coopcache-warm&x=1"), None);
    }

    #[test]
    fn paths_are_the_buckets_and_keys() {
        let p = |u: &str| path_of(&u.parse().unwrap());
        assert_eq!(p("/b/dir/").unwrap(), "b/dir");
        assert_eq!(p("/b/a%20b.bin").unwrap(), "b/a b.bin");
        assert_eq!(p("/b").unwrap(), "b");
        assert!(p("/").is_err());
        assert!(p("/b/..").is_err());
    }
}
