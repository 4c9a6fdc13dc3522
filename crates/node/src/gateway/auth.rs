//! Who may use the gateway.
//!
//! The gateway reads every file the daemon can, for whoever connects: a
//! user of the machine (any uid, over loopback) or, bound elsewhere, anyone
//! on the network. A bearer token, read from a file the operator protects
//! with its permissions, narrows that to those who can read the file.
//! Loopback without a token stays the default (the node is the local
//! access point, like a mount); any other address needs a token, or
//! `--http-allow-anonymous` to say the exposure is meant.

use std::net::SocketAddr;
use std::path::Path;

/// A gateway bearer token. Only its BLAKE3 hash is kept, and it is
/// compared through `blake3::Hash`'s constant-time equality.
#[derive(Clone)]
pub struct Token {
    hash: blake3::Hash,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

/// Why the gateway may not start as asked.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// The token file could not be read.
    #[error("cannot read the gateway token file {path}: {source}")]
    TokenFile {
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The token file holds no usable token.
    #[error(
        "the gateway token file {path} {why}; put one line of at least {MIN_TOKEN} characters in it, e.g. `head -c 32 /dev/urandom | base64 > {path}`"
    )]
    BadToken {
        /// The file.
        path: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A non-loopback address without a token.
    #[error(
        "--http {addr} is not a loopback address, and the gateway has no token: anyone who can reach it could read every file this daemon can. Give --http-token-file FILE (clients send `Authorization: Bearer TOKEN`), or --http-allow-anonymous if that exposure is meant"
    )]
    Exposed {
        /// The gateway address.
        addr: SocketAddr,
    },
}

/// The shortest token accepted: guessing one must be out of reach.
pub const MIN_TOKEN: usize = 16;

impl Token {
    /// A token from its text (surrounding whitespace is not part of it).
    pub fn new(text: &str) -> Option<Token> {
        let text = text.trim();
        (text.len() >= MIN_TOKEN && !text.contains(char::is_whitespace)).then(|| Token {
            hash: blake3::hash(text.as_bytes()),
        })
    }

    /// Reads a token file: one line, at least [`MIN_TOKEN`] characters, no
    /// inner whitespace.
    pub fn from_file(path: &Path) -> Result<Token, AccessError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| AccessError::TokenFile {
            path: shown.clone(),
            source,
        })?;
        let bad = |why| AccessError::BadToken {
            path: shown.clone(),
            why,
        };
        match text.trim() {
            "" => Err(bad("is empty")),
            t if t.len() < MIN_TOKEN => Err(bad("holds too short a token")),
            t if t.contains(char::is_whitespace) => Err(bad("holds more than one word")),
            t => Ok(Token::new(t).expect("checked above")),
        }
    }

    /// Whether an `Authorization` header value carries this token.
    pub fn admits(&self, authorization: Option<&str>) -> bool {
        let Some(presented) = authorization.and_then(|a| a.strip_prefix("Bearer ")) else {
            return false;
        };
        blake3::hash(presented.trim().as_bytes()) == self.hash
    }
}

/// Decides whether a gateway on `addr` may start: loopback always, any
/// other address with a token or with `allow_anonymous` (the caller then
/// warns). Returns whether the gateway is exposed without authentication.
pub fn check_exposure(
    addr: SocketAddr,
    token: Option<&Token>,
    allow_anonymous: bool,
) -> Result<bool, AccessError> {
    if addr.ip().is_loopback() || token.is_some() {
        return Ok(false);
    }
    if allow_anonymous {
        return Ok(true);
    }
    Err(AccessError::Exposed { addr })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_checked_whole() {
        let t = Token::new("0123456789abcdefXYZ").expect("token");
        assert!(t.admits(Some("Bearer 0123456789abcdefXYZ")));
        assert!(!t.admits(Some("Bearer 0123456789abcdefXY")));
        assert!(!t.admits(Some("Basic 0123456789abcdefXYZ")));
        assert!(!t.admits(Some("0123456789abcdefXYZ")));
        assert!(!t.admits(None));
        assert!(Token::new("short").is_none());
        assert!(Token::new("two words that are long").is_none());
    }

    #[test]
    fn only_loopback_may_go_without_a_token() {
        let t = Token::new("0123456789abcdefXYZ");
        let lo: SocketAddr = "127.0.0.1:7171".parse().expect("addr");
        let lo6: SocketAddr = "[::1]:7171".parse().expect("addr");
        let any: SocketAddr = "0.0.0.0:7171".parse().expect("addr");
        assert!(!check_exposure(lo, None, false).expect("loopback"));
        assert!(!check_exposure(lo6, None, false).expect("loopback"));
        assert!(!check_exposure(any, t.as_ref(), false).expect("token"));
        assert!(check_exposure(any, None, true).expect("anonymous, warned"));
        let e = check_exposure(any, None, false).expect_err("refused");
        assert!(e.to_string().contains("--http-token-file"), "{e}");
    }

    #[test]
    fn token_files_are_checked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("token");
        for (text, want) in [
            ("", "empty"),
            ("abc\n", "too short"),
            ("0123456789abcdef 0123456789abcdef", "more than one word"),
        ] {
            std::fs::write(&f, text).expect("write");
            let e = Token::from_file(&f).expect_err(text).to_string();
            assert!(e.contains(want) && e.contains("token"), "{e}");
        }
        std::fs::write(&f, "0123456789abcdefXYZ\n").expect("write");
        assert!(
            Token::from_file(&f)
                .expect("good")
                .admits(Some("Bearer 0123456789abcdefXYZ"))
        );
        let missing = Token::from_file(&dir.path().join("none")).expect_err("missing");
        assert!(missing.to_string().contains("none"), "{missing}");
    }
}
