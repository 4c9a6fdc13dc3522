//! Joining a cluster with nothing but a token (issue 15, item 4).
//!
//! ```text
//!  CA node (holds ca.key)                          joiner (holds nothing)
//!  coopcache cluster token  -> prints cct1-...  ->  coopcache node --join CA:PORT --token cct1-...
//!  join-tokens: sha256(secret), expiry              key pair made here, never sent
//!                                  <- TLS 1.3, ALPN coopcache-join/1, server chain
//!                                     [node cert, CA cert]; the joiner checks the
//!                                     CA's SHA-256 against the token's fingerprint
//!                                     and the chain against that CA, or hangs up
//!                                  <- Request {secret, name, CSR}
//!  redeem: known, unused, unexpired,
//!  name free -> marked used on disk
//!  sign the CSR's key as NAME       -> Answer {certificate, CA certificate}
//!                                     NAME.key (0600), NAME.pem, ca.pem written;
//!                                     the node starts as a member
//! ```
//!
//! The join protocol runs on the member listener: a connection whose
//! ClientHello asks for [`JOIN_ALPN`](crate::tls::JOIN_ALPN) gets the join
//! server configuration (no client certificate), every other one the
//! mutual-TLS configuration as before, so a process without a certificate
//! still reads no frame of the member protocol.
//!
//! - [`token`]: the token's text form; [`table`]: the CA node's record.
//! - [`wire`]: the two messages; [`server`], [`client`]: the two sides;
//!   [`discover`]: where to join, heard on the LAN.

pub mod client;
pub mod discover;
pub mod server;
pub mod table;
pub mod token;
pub mod wire;

use crate::tls::TlsError;
use std::path::PathBuf;
use token::{BadToken, utc};
use wire::Denial;

pub use client::enroll;
pub use table::Refusal;
pub use token::JoinToken;

/// What went wrong issuing, redeeming or using a join token. Each says
/// what failed and what to do; none leaves a half-written file (a failure
/// after a token was marked used says so).
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// `coopcache cluster token` where there is no CA key.
    #[error(
        "{}/ca.key does not exist: join tokens are issued where the cluster CA key is \
         (the directory of `coopcache cluster init`, or of the node started with --init), \
         and that node answers the joins",
        dir.display()
    )]
    NoCaKey {
        /// The key directory.
        dir: PathBuf,
    },
    /// A zero lifetime.
    #[error("--ttl must be at least 1s")]
    BadTtl,
    /// An address too long for a token.
    #[error("the join address is longer than 255 bytes")]
    BadAddress,
    /// The system's random number generator failed.
    #[error("the system's random number generator failed; no token was issued")]
    Random,
    /// The table holds [`table::MAX_TOKENS`] unexpired, unused tokens.
    #[error(
        "{} holds {} unexpired unused tokens: wait for some to expire, or remove the file \
         to revoke every token issued",
        path.display(),
        table::MAX_TOKENS
    )]
    Full {
        /// The table file.
        path: PathBuf,
    },
    /// The table file does not parse.
    #[error("{}: {reason}", path.display())]
    Table {
        /// The table file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Keys or certificates.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// A token's text.
    #[error(transparent)]
    Token(#[from] BadToken),
    /// No address to ask.
    #[error(
        "no address to join through: give --join HOST:PORT (the --listen address of the node \
         holding the CA key), a token made with `coopcache cluster token --address HOST:PORT`, \
         or --discover on that node's subnet"
    )]
    NoAddress,
    /// Discovery heard no member of the token's cluster.
    #[error(
        "--discover heard no member of the token's cluster on {group} within {secs} s: \
         start the node holding the CA key with --discover on this subnet, or give --join HOST:PORT"
    )]
    NoneDiscovered {
        /// The multicast group listened to.
        group: std::net::SocketAddrV4,
        /// How long it listened.
        secs: u64,
    },
    /// TCP could not connect.
    #[error(
        "cannot reach the CA node at {addr} ({reason}): check that the node holding the CA key \
         runs there (its --listen address) and that the port is open; the token was not sent"
    )]
    Unreachable {
        /// The address dialled.
        addr: String,
        /// Why.
        reason: String,
    },
    /// The server's CA is not the one the token pins.
    #[error(
        "the node at {addr} is not of the token's cluster: its CA certificate's SHA-256 is {}, \
         the token's {expected}; the token's secret was not sent. Check --join (another cluster, \
         or something intercepting the connection) or ask for a token of this cluster",
        found.as_deref().unwrap_or("(no CA certificate presented)")
    )]
    WrongCa {
        /// The address dialled.
        addr: String,
        /// The token's fingerprint (hex).
        expected: String,
        /// The presented CA's fingerprint (hex), if one was presented.
        found: Option<String>,
    },
    /// TLS failed for another reason.
    #[error("TLS with the node at {addr} failed: {reason}; the token was not sent")]
    Handshake {
        /// The address dialled.
        addr: String,
        /// What rustls said.
        reason: String,
    },
    /// The CA node refused.
    #[error("{}", refusal_text(addr, denial))]
    Refused {
        /// The address dialled.
        addr: String,
        /// Its answer.
        denial: Denial,
    },
    /// The other end spoke something else.
    #[error("the node at {addr} answered the join request unexpectedly: {reason}")]
    Protocol {
        /// The address dialled.
        addr: String,
        /// What was wrong.
        reason: String,
    },
    /// `--data-dir` holds another cluster's CA.
    #[error(
        "{} belongs to another cluster than the token's (CA SHA-256 {found}, token {expected}): \
         give this cluster's node an empty --data-dir",
        path.display()
    )]
    OtherCluster {
        /// The CA file.
        path: PathBuf,
        /// The token's fingerprint (hex).
        expected: String,
        /// The file's (hex).
        found: String,
    },
}

const NEW_TOKEN: &str = "ask for a new one: `coopcache cluster token --dir KEYDIR` on the CA node";

fn refusal_text(addr: &str, denial: &Denial) -> String {
    match denial {
        Denial::Token(Refusal::Unknown) => format!(
            "the CA node at {addr} does not know this join token (issued by another CA node, \
             mistyped, or expired and forgotten); {NEW_TOKEN}"
        ),
        Denial::Token(Refusal::Used { by }) => format!(
            "the join token was already used (by node {by}) and tokens are single-use; {NEW_TOKEN}"
        ),
        Denial::Token(Refusal::Expired { at }) => {
            format!("the join token expired at {}; {NEW_TOKEN}", utc(*at))
        }
        Denial::Token(Refusal::NameTaken { name }) => format!(
            "the CA node at {addr} already issued a certificate for the name {name}: choose \
             another --name (the token was not used)"
        ),
        Denial::NoCa => format!(
            "the node at {addr} does not hold the cluster CA key: join through the node that \
             does (where `coopcache cluster token` ran); the token was not used"
        ),
        Denial::BadRequest(d) => format!(
            "the CA node at {addr} refused the request as malformed ({d}); the token was not used"
        ),
        Denial::Internal(d) => format!("the CA node at {addr} failed: {d}; see its log"),
    }
}
