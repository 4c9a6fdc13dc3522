//! A Rust client of a node's HTTP gateway: what `coopcache cat` and
//! `coopcache status` use, and what programs embedding coopcache can use.

use crate::driver::Status;
use crate::pins::{PinnedFile, Unpinned};
use crate::warm::{Goal, WarmProgress};
use bytes::Bytes;
use std::ops::Range;

/// A gateway client.
#[derive(Clone, Debug)]
pub struct Client {
    base: String,
    http: reqwest::Client,
    /// `Authorization` value for a gateway behind a token.
    bearer: Option<String>,
}

/// Why a gateway request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Could not reach the gateway.
    #[error(
        "cannot reach the node's gateway at {url}: {source} (is `coopcache node` running, and is --http its gateway address?)"
    )]
    Unreachable {
        /// The URL.
        url: String,
        /// Why.
        source: reqwest::Error,
    },
    /// The gateway answered with an error.
    #[error("{url}: {status}: {body}")]
    Status {
        /// The URL.
        url: String,
        /// HTTP status.
        status: reqwest::StatusCode,
        /// The gateway's message.
        body: String,
    },
    /// The answer was not what a gateway sends.
    #[error("{url}: unexpected answer: {why}")]
    Bad {
        /// The URL.
        url: String,
        /// What was wrong.
        why: String,
    },
}

impl Client {
    /// A client of the gateway at `addr` (`host:port` or a URL).
    pub fn new(addr: &str) -> Client {
        let base = if addr.starts_with("http://") || addr.starts_with("https://") {
            addr.trim_end_matches('/').to_string()
        } else {
            format!("http://{addr}")
        };
        Client {
            base,
            http: reqwest::Client::new(),
            bearer: None,
        }
    }

    /// Sends `token` as `Authorization: Bearer TOKEN` (a gateway started
    /// with `--http-token-file`).
    pub fn with_token(mut self, token: &str) -> Client {
        self.bearer = Some(format!("Bearer {}", token.trim()));
        self
    }

    async fn get(
        &self,
        url: String,
        range: Option<Range<u64>>,
    ) -> Result<reqwest::Response, ClientError> {
        let mut req = self.http.get(&url);
        if let Some(r) = range {
            if r.end <= r.start {
                return Err(ClientError::Bad {
                    url,
                    why: format!("empty range {}..{}", r.start, r.end),
                });
            }
            req = req.header("Range", format!("bytes={}-{}", r.start, r.end - 1));
        }
        self.send(req, &url).await
    }

    /// Reads `range` of `path` (the whole file if `None`). The path is
    /// checked as the gateway would (it must stay inside the origin) and
    /// each segment percent-encoded, so an HTTP client's URL clean-up can
    /// never turn it into another path.
    pub async fn read(&self, path: &str, range: Option<Range<u64>>) -> Result<Bytes, ClientError> {
        crate::origin::check_path(path).map_err(|e| ClientError::Bad {
            url: path.to_string(),
            why: e.to_string(),
        })?;
        let encoded: Vec<String> = path.split('/').map(encode_segment).collect();
        let url = format!("{}/v1/files/{}", self.base, encoded.join("/"));
        let resp = self.get(url.clone(), range).await?;
        resp.bytes()
            .await
            .map_err(|source| ClientError::Unreachable { url, source })
    }

    /// Warms `path` ("" for the whole origin) through the node
    /// (`crate::warm`), calling `seen` with each progress line; the last
    /// one (`done`). Dropping the future stops the warm-up.
    pub async fn warm(
        &self,
        path: &str,
        seen: impl FnMut(&WarmProgress),
    ) -> Result<WarmProgress, ClientError> {
        self.run(Goal::Warm, path, seen).await
    }

    /// As [`Client::warm`], for `goal`: `coopcache pin` and `coopcache
    /// evict` (`crate::pins`).
    pub async fn run(
        &self,
        goal: Goal,
        path: &str,
        mut seen: impl FnMut(&WarmProgress),
    ) -> Result<WarmProgress, ClientError> {
        let verb = goal.verb();
        let url = self.path_url(verb, path)?;
        let mut resp = self.send(self.http.post(&url), &url).await?;
        let unreachable = |source| ClientError::Unreachable {
            url: url.clone(),
            source,
        };
        let mut pending = Vec::new();
        let mut last = None;
        while let Some(chunk) = resp.chunk().await.map_err(unreachable)? {
            pending.extend_from_slice(&chunk);
            while let Some(end) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                let p: WarmProgress =
                    serde_json::from_slice(&line).map_err(|e| ClientError::Bad {
                        url: url.clone(),
                        why: format!("a progress line that is not one: {e}"),
                    })?;
                seen(&p);
                last = Some(p);
            }
        }
        match last {
            Some(p) if p.done => Ok(p),
            _ => Err(ClientError::Bad {
                url,
                why: format!("the {verb}'s progress ended before it did (the node stopped?)"),
            }),
        }
    }

    /// Unpins every file at `path` or under it ("" for all) on the node.
    pub async fn unpin(&self, path: &str) -> Result<Unpinned, ClientError> {
        let url = self.path_url("pin", path)?;
        let resp = self.send(self.http.delete(&url), &url).await?;
        resp.json().await.map_err(|e| ClientError::Bad {
            url,
            why: e.to_string(),
        })
    }

    /// The files the node holds pinned.
    pub async fn pins(&self) -> Result<Vec<PinnedFile>, ClientError> {
        let url = format!("{}/v1/pins", self.base);
        let resp = self.get(url.clone(), None).await?;
        resp.json().await.map_err(|e| ClientError::Bad {
            url,
            why: e.to_string(),
        })
    }

    /// `/v1/VERB/PATH`, the path checked as the gateway would and each
    /// segment percent-encoded (`/v1/VERB` for "").
    fn path_url(&self, verb: &str, path: &str) -> Result<String, ClientError> {
        Ok(match path.trim_matches('/') {
            "" => format!("{}/v1/{verb}", self.base),
            path => {
                crate::origin::check_path(path).map_err(|e| ClientError::Bad {
                    url: path.to_string(),
                    why: e.to_string(),
                })?;
                let encoded: Vec<String> = path.split('/').map(encode_segment).collect();
                format!("{}/v1/{verb}/{}", self.base, encoded.join("/"))
            }
        })
    }

    /// Sends `req` to `url` with the token, if any; an error status is
    /// an error with the gateway's message.
    async fn send(
        &self,
        mut req: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<reqwest::Response, ClientError> {
        if let Some(bearer) = &self.bearer {
            req = req.header("Authorization", bearer);
        }
        let resp = req
            .send()
            .await
            .map_err(|source| ClientError::Unreachable {
                url: url.to_string(),
                source,
            })?;
        if !resp.status().is_success() {
            let status = resp.status();
            let body = resp.text().await.unwrap_or_default().trim().to_string();
            let url = url.to_string();
            return Err(ClientError::Status { url, status, body });
        }
        Ok(resp)
    }

    /// The node's status.
    pub async fn status(&self) -> Result<Status, ClientError> {
        let url = format!("{}/v1/status", self.base);
        let resp = self.get(url.clone(), None).await?;
        resp.json().await.map_err(|e| ClientError::Bad {
            url,
            why: e.to_string(),
        })
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
