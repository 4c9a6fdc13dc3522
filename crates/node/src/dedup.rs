//! The cluster's dedup key file (`coopcache cluster unify-key`,
//! `coopcache node --unify-key FILE`): 32 random bytes as 64 hex digits,
//! the key private nodes unify identical parked blocks under (`seal.rs`).
//! Every member that unifies needs the same file; whoever holds it can
//! confirm a guess at a unified block's contents, so it is written
//! readable by its owner only, like the CA's key.

use crate::seal::DedupKey;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What went wrong with a dedup key file.
#[derive(Debug, thiserror::Error)]
pub enum DedupKeyError {
    /// The file could not be read, written or created.
    #[error("dedup key {path}: {source}")]
    Io {
        /// The key file.
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// A key exists where a new one was to be written; it is kept.
    #[error(
        "dedup key {path} already exists: every unifying member needs the same key, so it is never replaced (remove it first to start over)"
    )]
    Exists {
        /// The key file.
        path: PathBuf,
    },
    /// The file does not hold a key.
    #[error(
        "dedup key {path}: expected 64 hex digits (as `coopcache cluster unify-key` writes), found {found}"
    )]
    Malformed {
        /// The key file.
        path: PathBuf,
        /// What it holds instead, shortened.
        found: String,
    },
}

/// Writes a new random dedup key to `path` (mode 0600), refusing to
/// replace one.
pub fn create(path: &Path) -> Result<DedupKey, DedupKeyError> {
    let key = crate::seal::random_salt();
    let mut text = crate::join::token::hex(&key);
    text.push('\n');
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let io = |source| DedupKeyError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = options.open(path).map_err(|e| match e.kind() {
        io::ErrorKind::AlreadyExists => DedupKeyError::Exists {
            path: path.to_owned(),
        },
        _ => io(e),
    })?;
    file.write_all(text.as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok(key)
}

/// Reads the dedup key in `path`.
pub fn load(path: &Path) -> Result<DedupKey, DedupKeyError> {
    let text = std::fs::read(path).map_err(|source| DedupKeyError::Io {
        path: path.to_owned(),
        source,
    })?;
    parse(&text).map_err(|found| DedupKeyError::Malformed {
        path: path.to_owned(),
        found,
    })
}

/// 64 hex digits, surrounding whitespace allowed; else what was found.
fn parse(text: &[u8]) -> Result<DedupKey, String> {
    let text = text.trim_ascii();
    if text.len() != 64 {
        return Err(format!("{} characters", text.len()));
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        b'A'..=b'F' => Ok(c - b'A' + 10),
        _ => Err(format!("the character {:?}", char::from(c))),
    };
    let mut key = [0u8; 32];
    for (i, pair) in text.chunks_exact(2).enumerate() {
        key[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_created_key_loads_back_and_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("unify.key");
        let key = create(&path).unwrap();
        assert_eq!(load(&path).unwrap(), key);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(matches!(create(&path), Err(DedupKeyError::Exists { .. })));
        assert_eq!(load(&path).unwrap(), key, "the first key stands");
    }

    #[test]
    fn a_malformed_key_is_refused_naming_the_file_and_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k");
        for (text, says) in [
            ("abc\n", "3 characters"),
            (&"g".repeat(64), "the character 'g'"),
            ("", "0 characters"),
        ] {
            std::fs::write(&path, text).unwrap();
            let e = load(&path).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("k:"), "{e}");
        }
        std::fs::write(&path, format!("  {}\n", "Ab".repeat(32))).unwrap();
        assert_eq!(load(&path).unwrap(), [0xab; 32]);
        let missing = load(&dir.path().join("none")).unwrap_err().to_string();
        assert!(missing.contains("none"), "{missing}");
    }
}
