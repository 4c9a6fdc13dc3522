//! `coopcache node --token`: a node with no certificate asks the CA node
//! for one (`coopcache_node::join`) before it starts.

use super::settings::Settings;
use anyhow::{Context, Result};
use coopcache_node::join::{self, JoinError, token};

/// Obtains this node's certificate with its join token and writes it into
/// the data directory; returns the address that issued it (a member, so
/// also a seed).
pub async fn obtain(s: &Settings) -> Result<String> {
    let Some(token) = &s.token else {
        anyhow::bail!("no --token");
    };
    let addresses = match (&s.join[..], &token.address, s.discover) {
        ([_, ..], _, _) => s.join.clone(),
        ([], Some(address), _) => vec![address.clone()],
        ([], None, Some(group)) => join::discover::members(group, &token.fingerprint).await?,
        ([], None, None) => return Err(JoinError::NoAddress.into()),
    };
    tracing::info!(
        name = %s.name,
        ca_sha256 = %token::hex(&token.fingerprint),
        expires = %token::utc(token.expires),
        "no certificate yet: asking for one with the join token at {}",
        addresses.join(", ")
    );
    let via = join::enroll(&addresses, token, &s.data_dir, &s.name)
        .await
        .with_context(|| format!("joining with the token as {}", s.name))?;
    tracing::info!(
        %via,
        dir = %s.data_dir.display(),
        "joined: certificate issued and written; the token is spent and no longer needed"
    );
    Ok(via)
}
