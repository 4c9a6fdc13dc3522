//! `coopcache node`'s gateway settings: who may use it and how its
//! connections are bounded.

use anyhow::Result;
use coopcache_console::args::parse_duration;
use coopcache_node::config::FileConfig;
use coopcache_node::gateway::{GatewayOptions, Token, check_exposure};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args, Debug, Default)]
pub struct GatewayArgs {
    /// File holding the gateway's bearer token (one word of 16 or more
    /// characters); clients then send `Authorization: Bearer TOKEN`.
    /// Needed for an --http address other than loopback.
    #[arg(long, env = "COOPCACHE_HTTP_TOKEN_FILE")]
    http_token_file: Option<PathBuf>,
    /// Serve a non-loopback --http address without a token: anyone who can
    /// reach it reads every file the daemon can (logged as a warning).
    #[arg(long, env = "COOPCACHE_HTTP_ALLOW_ANONYMOUS")]
    http_allow_anonymous: bool,
    /// Time a gateway client has to send a request's header, counted from
    /// connecting or from the end of its previous response [default: 20s].
    #[arg(long, env = "COOPCACHE_HTTP_HEADER_TIMEOUT", value_parser = parse_duration)]
    http_header_timeout: Option<Duration>,
    /// A gateway connection moving no byte for this long is closed [default: 60s].
    #[arg(long, env = "COOPCACHE_HTTP_IDLE_TIMEOUT", value_parser = parse_duration)]
    http_idle_timeout: Option<Duration>,
    /// Gateway connections served at once; one more waits up to 1 s for a
    /// slot, then gets 503. Each costs about 16 KiB beyond --memory
    /// [default: 512, lowered to stay under the open-file limit].
    #[arg(long, env = "COOPCACHE_HTTP_MAX_CONNECTIONS")]
    http_max_connections: Option<usize>,
}

impl GatewayArgs {
    /// The gateway's options for `http`, from flags then `file`; refuses a
    /// non-loopback address without a token unless anonymous access is
    /// asked for, and warns then.
    pub fn options(self, file: &FileConfig, http: SocketAddr) -> Result<GatewayOptions> {
        let defaults = GatewayOptions::default();
        let duration = |flag: Option<Duration>, key: &str, value: &Option<String>, default| match (
            flag, value,
        ) {
            (Some(d), _) => Ok(d),
            (None, Some(s)) => {
                parse_duration(s).map_err(|e| anyhow::anyhow!("config key {key}: {e}"))
            }
            (None, None) => Ok(default),
        };
        let token = match self.http_token_file.or(file.http_token_file.clone()) {
            Some(path) => Some(Token::from_file(&path)?),
            None => None,
        };
        let anonymous = self.http_allow_anonymous || file.http_allow_anonymous.unwrap_or(false);
        if check_exposure(http, token.as_ref(), anonymous)? {
            tracing::warn!(%http, "the gateway serves a non-loopback address without a token (--http-allow-anonymous): anyone who can reach it reads every file this daemon can");
        }
        Ok(GatewayOptions {
            header_timeout: duration(
                self.http_header_timeout,
                "http_header_timeout",
                &file.http_header_timeout,
                defaults.header_timeout,
            )?,
            idle_timeout: duration(
                self.http_idle_timeout,
                "http_idle_timeout",
                &file.http_idle_timeout,
                defaults.idle_timeout,
            )?,
            max_connections: self
                .http_max_connections
                .or(file.http_max_connections)
                .unwrap_or(defaults.max_connections)
                .max(1),
            token,
            ..defaults
        })
    }
}
