//! A Rust client of a node's HTTP gateway: what `coopcache cat` and
//! `coopcache status` use, and what programs embedding coopcache can use.

use crate::driver::Status;
use bytes::Bytes;
use std::ops::Range;

/// A gateway client.
#[derive(Clone, Debug)]
pub struct Client {
    base: String,
    http: reqwest::Client,
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
        }
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
        let resp = req
            .send()
            .await
            .map_err(|source| ClientError::Unreachable {
                url: url.clone(),
                source,
            })?;
        if !resp.status().is_success() {
            let status = resp.status();
            let body = resp.text().await.unwrap_or_default().trim().to_string();
            return Err(ClientError::Status { url, status, body });
        }
        Ok(resp)
    }

    /// Reads `range` of `path` (the whole file if `None`).
    pub async fn read(&self, path: &str, range: Option<Range<u64>>) -> Result<Bytes, ClientError> {
        let url = format!("{}/v1/files/{}", self.base, path.trim_start_matches('/'));
        let resp = self.get(url.clone(), range).await?;
        resp.bytes()
            .await
            .map_err(|source| ClientError::Unreachable { url, source })
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
