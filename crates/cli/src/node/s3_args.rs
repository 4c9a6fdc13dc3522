//! `coopcache node`'s S3 endpoint settings: where it listens and whom it
//! admits.

use anyhow::{Result, bail};
use coopcache_node::config::FileConfig;
use coopcache_node::gateway::GatewayOptions;
use coopcache_node::s3::{AccessKeys, S3Options};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Default)]
pub struct S3Args {
    /// Serve an S3 endpoint on this address: unmodified S3 clients
    /// (boto3, the AWS CLI, rclone, s3fs) read and write the origin
    /// through the cluster; buckets are the origin's top-level
    /// directories [default: none].
    #[arg(long, env = "COOPCACHE_S3")]
    s3: Option<SocketAddr>,
    /// File of `ACCESS_KEY_ID SECRET_KEY` lines (`#` comments): the keys
    /// whose AWS Signature V4 the S3 endpoint accepts.
    #[arg(long, env = "COOPCACHE_S3_KEYS")]
    s3_keys: Option<PathBuf>,
    /// Unsigned S3 requests may list and read (never write); anyone who
    /// can reach --s3 then reads every file this daemon can.
    #[arg(long, env = "COOPCACHE_S3_ALLOW_ANONYMOUS_READ")]
    s3_allow_anonymous_read: bool,
}

impl S3Args {
    /// The endpoint's address and options, if one is asked for; refuses
    /// an endpoint that would admit nobody, and keys without an endpoint.
    /// Flags, then `file`.
    pub fn options(
        self,
        file: &FileConfig,
        connections: &GatewayOptions,
        exclusive: bool,
    ) -> Result<Option<(SocketAddr, S3Options)>> {
        let s3_keys = self.s3_keys.or(file.s3_keys.clone());
        let anonymous_read =
            self.s3_allow_anonymous_read || file.s3_allow_anonymous_read.unwrap_or(false);
        let Some(addr) = self.s3.or(file.s3) else {
            if s3_keys.is_some() || anonymous_read {
                bail!(
                    "--s3-keys and --s3-allow-anonymous-read need --s3 ADDR (the S3 endpoint's address)"
                );
            }
            return Ok(None);
        };
        let keys = match &s3_keys {
            Some(path) => Some(AccessKeys::from_file(path)?),
            None => None,
        };
        if keys.is_none() && !anonymous_read {
            bail!(
                "--s3 {addr} needs --s3-keys FILE (lines of `ACCESS_KEY_ID SECRET_KEY` for signed requests) or --s3-allow-anonymous-read (unsigned reads only)"
            );
        }
        if anonymous_read && !addr.ip().is_loopback() {
            tracing::warn!(%addr, "the S3 endpoint serves unsigned reads on a non-loopback address (--s3-allow-anonymous-read): anyone who can reach it reads every file this daemon can");
        }
        Ok(Some((
            addr,
            S3Options {
                keys,
                anonymous_read,
                exclusive,
                // The gateway's bounds, but no bearer token: S3 clients
                // sign their requests instead.
                connections: GatewayOptions {
                    token: None,
                    ..connections.clone()
                },
            },
        )))
    }
}
