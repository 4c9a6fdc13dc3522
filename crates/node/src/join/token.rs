//! The join token: what `coopcache cluster token` prints and a joiner
//! passes to `coopcache node --token`.
//!
//! ```text
//! cct1-BASE64URL( secret [32] | CA fingerprint [32] | expires u64 BE | len u8 | address )
//! ```
//!
//! The secret is 256 random bits; the CA node keeps only its SHA-256. The
//! fingerprint is the SHA-256 of the cluster CA's certificate (DER), which
//! the joiner pins its TLS connection to. `expires` is in Unix seconds
//! (the CA node's record, not this copy, decides). The address, possibly
//! empty, is where the CA node accepts joins.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Every token starts with this (the format's version is in it).
pub const PREFIX: &str = "cct1-";

/// The longest address a token carries, in bytes.
pub const MAX_ADDRESS: usize = 255;

/// A join token's contents.
#[derive(Clone, PartialEq, Eq)]
pub struct JoinToken {
    /// The one-time secret.
    pub secret: [u8; 32],
    /// SHA-256 of the cluster CA's certificate (DER).
    pub fingerprint: [u8; 32],
    /// When the token stops being accepted, in Unix seconds.
    pub expires: u64,
    /// Where the CA node accepts joins (`HOST:PORT`), if the token says.
    pub address: Option<String>,
}

impl std::fmt::Debug for JoinToken {
    /// Never prints the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinToken")
            .field("fingerprint", &hex(&self.fingerprint))
            .field("expires", &self.expires)
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

/// Why a text is not a join token.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "not a coopcache join token ({0}); expected the `{PREFIX}...` text `coopcache cluster token` printed, whole"
)]
pub struct BadToken(pub &'static str);

impl JoinToken {
    /// The token as text.
    pub fn encode(&self) -> String {
        let address = self.address.as_deref().unwrap_or("");
        let mut raw = Vec::with_capacity(73 + address.len());
        raw.extend_from_slice(&self.secret);
        raw.extend_from_slice(&self.fingerprint);
        raw.extend_from_slice(&self.expires.to_be_bytes());
        raw.push(address.len().min(MAX_ADDRESS) as u8);
        raw.extend_from_slice(&address.as_bytes()[..address.len().min(MAX_ADDRESS)]);
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(raw))
    }

    /// Parses a token's text (surrounding white space ignored).
    pub fn decode(text: &str) -> Result<JoinToken, BadToken> {
        let body = text
            .trim()
            .strip_prefix(PREFIX)
            .ok_or(BadToken("it does not start with `cct1-`"))?;
        if body.len() > 4 * (73 + MAX_ADDRESS) / 3 + 4 {
            return Err(BadToken("too long"));
        }
        let raw = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| BadToken("not base64url"))?;
        if raw.len() < 73 {
            return Err(BadToken("too short"));
        }
        let (secret, rest) = raw.split_at(32);
        let (fingerprint, rest) = rest.split_at(32);
        let (expires, rest) = rest.split_at(8);
        let (len, address) = rest.split_at(1);
        if address.len() != usize::from(len[0]) {
            return Err(BadToken("its address length is wrong"));
        }
        let address =
            std::str::from_utf8(address).map_err(|_| BadToken("its address is not UTF-8"))?;
        Ok(JoinToken {
            secret: secret.try_into().map_err(|_| BadToken("too short"))?,
            fingerprint: fingerprint.try_into().map_err(|_| BadToken("too short"))?,
            expires: u64::from_be_bytes(expires.try_into().map_err(|_| BadToken("too short"))?),
            address: (!address.is_empty()).then(|| address.to_owned()),
        })
    }
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Unix seconds as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc(unix: u64) -> String {
    let t = i64::try_from(unix)
        .ok()
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok());
    match t {
        Some(t) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ),
        None => format!("{unix} (Unix seconds)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_roundtrip_and_bad_text_is_refused() {
        let t = JoinToken {
            secret: [7; 32],
            fingerprint: [9; 32],
            expires: 1_800_000_000,
            address: Some("10.0.0.1:7170".into()),
        };
        let text = t.encode();
        assert!(text.starts_with(PREFIX));
        assert_eq!(JoinToken::decode(&format!(" {text}\n")).unwrap(), t);
        let none = JoinToken {
            address: None,
            ..t.clone()
        };
        assert_eq!(JoinToken::decode(&none.encode()).unwrap(), none);
        assert!(!format!("{t:?}").contains("0707"), "Debug shows no secret");
        for bad in [
            "",
            "cct1-",
            "cct2-AAAA",
            "cct1-!!!!",
            &text[..text.len() - 3],
            &format!("{text}AA"),
        ] {
            assert!(JoinToken::decode(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn decoding_never_panics_on_any_input() {
        // Every truncation and every byte value at each position.
        let text = JoinToken {
            secret: [1; 32],
            fingerprint: [2; 32],
            expires: 3,
            address: Some("a:1".into()),
        }
        .encode();
        for end in 0..=text.len() {
            let _ = JoinToken::decode(&text[..end]);
        }
        for i in PREFIX.len()..text.len() {
            for c in [b'A', b'-', b'_', b'z', b'0', b'=', 0xff] {
                let mut b = text.clone().into_bytes();
                b[i] = c;
                let _ = JoinToken::decode(&String::from_utf8_lossy(&b));
            }
        }
    }
}
