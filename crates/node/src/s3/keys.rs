//! The S3 endpoint's access keys: a file of `ACCESS_KEY_ID SECRET_KEY`
//! lines, as an operator writes them (`#` starts a comment), checked when
//! the node starts so a typo shows then, not at a client's first request.

use s3s::S3Result;
use s3s::auth::{S3Auth, SecretKey, SimpleAuth};
use std::fmt;
use std::path::Path;

/// Shortest access key id accepted (MinIO's rule, which the clients' own
/// checks assume).
pub const MIN_ACCESS_KEY: usize = 3;
/// Shortest secret accepted (MinIO's rule): a shorter one is guessable.
pub const MIN_SECRET_KEY: usize = 8;

/// Why a keys file was refused.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// The file could not be read.
    #[error("cannot read the S3 keys file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not `ACCESS_KEY_ID SECRET_KEY`.
    #[error("S3 keys file {path}, line {line}: {why} (expected `ACCESS_KEY_ID SECRET_KEY`)")]
    Line {
        /// The file.
        path: String,
        /// 1-based.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// No key at all.
    #[error("S3 keys file {path} holds no key (expected `ACCESS_KEY_ID SECRET_KEY` lines)")]
    Empty {
        /// The file.
        path: String,
    },
}

/// The access keys clients may sign with.
#[derive(Clone)]
pub struct AccessKeys {
    pairs: Vec<(String, String)>,
}

impl fmt::Debug for AccessKeys {
    // Never the secrets, even in a debug log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<&str> = self.pairs.iter().map(|(id, _)| id.as_str()).collect();
        f.debug_struct("AccessKeys").field("ids", &ids).finish()
    }
}

impl AccessKeys {
    /// Keys from the text of a keys file (`path` names it in errors).
    pub fn parse(text: &str, path: &str) -> Result<AccessKeys, KeysError> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |why: String| KeysError::Line {
                path: path.to_owned(),
                line: i + 1,
                why,
            };
            let words: Vec<&str> = line.split_whitespace().collect();
            let [id, secret] = words[..] else {
                return Err(bad(format!("{} words", words.len())));
            };
            if id.len() < MIN_ACCESS_KEY {
                return Err(bad(format!(
                    "access key id shorter than {MIN_ACCESS_KEY} characters"
                )));
            }
            if secret.len() < MIN_SECRET_KEY {
                return Err(bad(format!(
                    "secret key shorter than {MIN_SECRET_KEY} characters"
                )));
            }
            if pairs.iter().any(|(known, _)| known == id) {
                return Err(bad(format!("access key id {id} given twice")));
            }
            pairs.push((id.to_owned(), secret.to_owned()));
        }
        if pairs.is_empty() {
            return Err(KeysError::Empty {
                path: path.to_owned(),
            });
        }
        Ok(AccessKeys { pairs })
    }

    /// Reads a keys file.
    pub fn from_file(path: &Path) -> Result<AccessKeys, KeysError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| KeysError::Read {
            path: shown.clone(),
            source,
        })?;
        AccessKeys::parse(&text, &shown)
    }

    /// How many keys.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Never true: a keys file holds at least one.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The `s3s` authenticator over these keys.
    pub(super) fn auth(&self) -> KeyAuth {
        let mut auth = SimpleAuth::new();
        for (id, secret) in &self.pairs {
            auth.register(id.clone(), SecretKey::from(secret.as_str()));
        }
        KeyAuth(auth)
    }
}

/// Looks a request's access key id up: an unknown one is S3's
/// `InvalidAccessKeyId`, a wrong signature `SignatureDoesNotMatch`
/// (`s3s` checks the signature with the secret found here).
pub(super) struct KeyAuth(SimpleAuth);

#[async_trait::async_trait]
impl S3Auth for KeyAuth {
    async fn get_secret_key(&self, access_key: &str) -> S3Result<SecretKey> {
        // S3's answer for an unknown key (`s3s`'s own says `NotSignedUp`).
        match self.0.lookup(access_key) {
            Some(secret) => Ok(secret.clone()),
            None => Err(s3s::s3_error!(
                InvalidAccessKeyId,
                "no access key {access_key} in this node's --s3-keys"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_files_are_checked_line_by_line() {
        let k = AccessKeys::parse(
            "# ops\nalice secretsecret\n\nbob  s3cr3tpassword # ci\n",
            "k",
        )
        .expect("good");
        assert_eq!(k.len(), 2);
        assert!(!format!("{k:?}").contains("secret"), "{k:?}");
        for (text, want) in [
            ("", "holds no key"),
            ("# nothing\n", "holds no key"),
            ("alice\n", "line 1: 1 words"),
            ("alice secretsecret extra\n", "3 words"),
            ("ab secretsecret\n", "access key id shorter"),
            ("alice short\n", "secret key shorter"),
            (
                "alice secretsecret\nalice othersecret\n",
                "line 2: access key id alice given twice",
            ),
        ] {
            let e = AccessKeys::parse(text, "keys.txt")
                .expect_err(text)
                .to_string();
            assert!(e.contains(want) && e.contains("keys.txt"), "{text:?}: {e}");
        }
    }
}
