//! The CA node's record of the join tokens it issued, in the key
//! directory beside `ca.key`: `join-tokens`, one line per token,
//!
//! ```text
//! SHA256(secret) in hex   expires (Unix s)   open | used:NAME
//! ```
//!
//! Only the secret's hash is kept, so reading the file does not give a
//! usable token. Every change (issuing, redeeming) happens under an
//! exclusive `flock` on `join-tokens.lock` and replaces the file whole
//! (a temporary file renamed over it), so two joins racing for one token,
//! in one process or two, see one another's mark: exactly one wins.
//! Expired entries are dropped at every change; at most [`MAX_TOKENS`]
//! are kept.

use super::JoinError;
use super::token::{JoinToken, hex};
use crate::tls;
use sha2::{Digest, Sha256};
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The table's file, in the key directory.
pub const TABLE_FILE: &str = "join-tokens";

/// The lock file beside it (the table itself is replaced by renames, so
/// it cannot carry the lock).
pub const LOCK_FILE: &str = "join-tokens.lock";

/// Tokens recorded at most (unexpired ones; used ones are dropped first
/// to make room).
pub const MAX_TOKENS: usize = 1024;

/// A table file larger than this is refused unread (1024 lines are about
/// 180 KiB).
const MAX_TABLE_BYTES: u64 = 512 << 10;

/// Why the CA node refuses a token. Nothing is changed by a refusal: a
/// token refused for its name can still be used with another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No record of it: never issued here, mistyped, or expired and pruned.
    Unknown,
    /// Used already, by the node named.
    Used {
        /// The name the certificate was issued to.
        by: String,
    },
    /// Past its expiry (Unix seconds).
    Expired {
        /// When it expired.
        at: u64,
    },
    /// A certificate for this name was issued already.
    NameTaken {
        /// The name asked for.
        name: String,
    },
}

/// One issued token.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    hash: [u8; 32],
    expires: u64,
    used_by: Option<String>,
}

/// The exclusive lock on a key directory's token table, held until drop.
struct Locked {
    _file: fs::File,
    table: PathBuf,
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> JoinError + '_ {
    move |source| JoinError::Io {
        path: path.to_owned(),
        source,
    }
}

impl Locked {
    /// Blocks until this process holds the lock.
    fn acquire(dir: &Path) -> Result<Locked, JoinError> {
        let path = dir.join(LOCK_FILE);
        let mut options = fs::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&path).map_err(io_error(&path))?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| io_error(&path)(e.into()))?;
        Ok(Locked {
            _file: file,
            table: dir.join(TABLE_FILE),
        })
    }

    fn read(&self) -> Result<Vec<Entry>, JoinError> {
        let file = match fs::File::open(&self.table) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(&self.table)(e)),
        };
        let mut text = String::new();
        file.take(MAX_TABLE_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(io_error(&self.table))?;
        if text.len() as u64 > MAX_TABLE_BYTES {
            return Err(self.bad(0, "larger than 512 KiB"));
        }
        let mut entries = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            entries.push(parse_line(line).ok_or_else(|| self.bad(i + 1, line))?);
            if entries.len() > 4 * MAX_TOKENS {
                return Err(self.bad(i + 1, "too many lines"));
            }
        }
        Ok(entries)
    }

    fn bad(&self, line: usize, what: &str) -> JoinError {
        JoinError::Table {
            path: self.table.clone(),
            reason: format!(
                "line {line}: {what:?}: expected `SHA256HEX EXPIRES open|used:NAME`; \
                 remove the file to forget every token issued"
            ),
        }
    }

    /// Drops expired entries and replaces the file.
    fn write(&self, mut entries: Vec<Entry>, now: u64) -> Result<(), JoinError> {
        entries.retain(|e| e.expires > now);
        let mut text =
            String::from("# coopcache join tokens: sha256(secret) expires(unix s) state\n");
        for e in &entries {
            let state = match &e.used_by {
                Some(name) => format!("used:{name}"),
                None => "open".to_owned(),
            };
            text.push_str(&format!("{} {} {state}\n", hex(&e.hash), e.expires));
        }
        tls::replace(&self.table, text.as_bytes(), 0o600)?;
        Ok(())
    }
}

fn parse_line(line: &str) -> Option<Entry> {
    let mut words = line.split_ascii_whitespace();
    let (hash, expires, state) = (words.next()?, words.next()?, words.next()?);
    if words.next().is_some() || hash.len() != 64 {
        return None;
    }
    let mut h = [0u8; 32];
    for (i, byte) in h.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hash.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    let used_by = match state {
        "open" => None,
        s => {
            let name = s.strip_prefix("used:")?;
            tls::check_name(name).ok()?;
            Some(name.to_owned())
        }
    };
    Some(Entry {
        hash: h,
        expires: expires.parse().ok()?,
        used_by,
    })
}

fn hash_of(secret: &[u8; 32]) -> [u8; 32] {
    Sha256::digest(secret).into()
}

/// Issues a token for the CA in `dir`, valid `ttl_secs` from `now` (Unix
/// seconds), naming `address` as where to join, and records it.
/// `dir` must hold `ca.key`: tokens are only honoured where certificates
/// can be signed.
pub fn issue(
    dir: &Path,
    ttl_secs: u64,
    address: Option<String>,
    now: u64,
) -> Result<JoinToken, JoinError> {
    if !dir.join(tls::CA_KEY_FILE).is_file() {
        return Err(JoinError::NoCaKey {
            dir: dir.to_owned(),
        });
    }
    if ttl_secs == 0 {
        return Err(JoinError::BadTtl);
    }
    if address
        .as_ref()
        .is_some_and(|a| a.len() > super::token::MAX_ADDRESS)
    {
        return Err(JoinError::BadAddress);
    }
    let fingerprint = tls::ca_fingerprint(dir)?;
    let mut secret = [0u8; 32];
    tls::provider()
        .secure_random
        .fill(&mut secret)
        .map_err(|_| JoinError::Random)?;
    let expires = now.saturating_add(ttl_secs);
    let lock = Locked::acquire(dir)?;
    let mut entries = lock.read()?;
    entries.retain(|e| e.expires > now);
    if entries.len() >= MAX_TOKENS {
        entries.retain(|e| e.used_by.is_none());
    }
    if entries.len() >= MAX_TOKENS {
        return Err(JoinError::Full {
            path: lock.table.clone(),
        });
    }
    entries.push(Entry {
        hash: hash_of(&secret),
        expires,
        used_by: None,
    });
    lock.write(entries, now)?;
    Ok(JoinToken {
        secret,
        fingerprint,
        expires,
        address,
    })
}

/// Redeems `secret` for node `name` at `now` (Unix seconds): marks its
/// token used (on disk, before returning) if it is known, unused,
/// unexpired and no certificate for `name` was ever issued here; otherwise
/// says why not and changes nothing.
pub fn redeem(
    dir: &Path,
    secret: &[u8; 32],
    name: &str,
    now: u64,
) -> Result<Result<(), Refusal>, JoinError> {
    let lock = Locked::acquire(dir)?;
    let mut entries = lock.read()?;
    let hash = hash_of(secret);
    let Some(at) = entries.iter().position(|e| e.hash == hash) else {
        return Ok(Err(Refusal::Unknown));
    };
    if let Some(by) = &entries[at].used_by {
        return Ok(Err(Refusal::Used { by: by.clone() }));
    }
    if entries[at].expires <= now {
        return Ok(Err(Refusal::Expired {
            at: entries[at].expires,
        }));
    }
    // Issued names are kept for the CA's lifetime (crate::issued), not
    // only while a token that named them is in this table.
    let taken = entries.iter().any(|e| e.used_by.as_deref() == Some(name))
        || crate::issued::contains(dir, name)?;
    if taken {
        return Ok(Err(Refusal::NameTaken {
            name: name.to_owned(),
        }));
    }
    entries[at].used_by = Some(name.to_owned());
    lock.write(entries, now)?;
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    fn cluster() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        tls::init_cluster(dir.path(), &["ca-node".to_owned()], 1).unwrap();
        dir
    }

    #[test]
    fn a_token_is_redeemed_once_and_only_before_it_expires() {
        let dir = cluster();
        let t = issue(dir.path(), 60, None, 1000).unwrap();
        assert_eq!(t.fingerprint, tls::ca_fingerprint(dir.path()).unwrap());
        assert_eq!(t.expires, 1060);
        let text = fs::read_to_string(dir.path().join(TABLE_FILE)).unwrap();
        assert!(!text.contains(&hex(&t.secret)), "the secret is not stored");
        assert!(text.contains(&hex(&hash_of(&t.secret))), "{text}");
        assert_eq!(redeem(dir.path(), &t.secret, "b", 1001).unwrap(), Ok(()));
        assert_eq!(
            redeem(dir.path(), &t.secret, "c", 1002).unwrap(),
            Err(Refusal::Used { by: "b".into() })
        );
        let late = issue(dir.path(), 60, None, 1000).unwrap();
        assert_eq!(
            redeem(dir.path(), &late.secret, "c", 1060).unwrap(),
            Err(Refusal::Expired { at: 1060 })
        );
        assert_eq!(
            redeem(dir.path(), &[0; 32], "c", 1001).unwrap(),
            Err(Refusal::Unknown)
        );
    }

    #[test]
    fn a_name_issued_already_is_refused_without_using_the_token() {
        let dir = cluster();
        let t = issue(dir.path(), 60, None, 1000).unwrap();
        let taken = |name: &str| Err(Refusal::NameTaken { name: name.into() });
        assert_eq!(
            redeem(dir.path(), &t.secret, "ca-node", 1001).unwrap(),
            taken("ca-node")
        );
        assert_eq!(redeem(dir.path(), &t.secret, "b", 1001).unwrap(), Ok(()));
        let u = issue(dir.path(), 60, None, 1000).unwrap();
        assert_eq!(
            redeem(dir.path(), &u.secret, "b", 1001).unwrap(),
            taken("b")
        );
        assert_eq!(redeem(dir.path(), &u.secret, "c", 1001).unwrap(), Ok(()));
    }

    #[test]
    fn the_table_is_bounded_and_pruned() {
        let dir = cluster();
        let first = issue(dir.path(), 10, None, 1000).unwrap();
        for _ in 1..MAX_TOKENS {
            issue(dir.path(), 100, None, 1000).unwrap();
        }
        assert!(matches!(
            issue(dir.path(), 100, None, 1000),
            Err(JoinError::Full { .. })
        ));
        // The first expires at 1010: a later issue prunes it.
        issue(dir.path(), 100, None, 1011).unwrap();
        assert_eq!(
            redeem(dir.path(), &first.secret, "b", 1012).unwrap(),
            Err(Refusal::Unknown)
        );
        let lines = fs::read_to_string(dir.path().join(TABLE_FILE)).unwrap();
        assert_eq!(lines.lines().count(), MAX_TOKENS + 1);
    }

    #[test]
    fn only_a_directory_with_the_ca_key_issues_tokens() {
        let dir = cluster();
        fs::remove_file(dir.path().join(tls::CA_KEY_FILE)).unwrap();
        assert!(matches!(
            issue(dir.path(), 60, None, 1000),
            Err(JoinError::NoCaKey { .. })
        ));
    }

    #[test]
    fn a_corrupt_table_is_refused_naming_the_line() {
        let dir = cluster();
        fs::write(dir.path().join(TABLE_FILE), "# header\nnot a token line\n").unwrap();
        let e = redeem(dir.path(), &[0; 32], "b", 1).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }

    /// Threads race to redeem each token: exactly one wins each time.
    /// (Without the lock several win: tried by hand.)
    #[test]
    fn concurrent_redemptions_of_one_token_have_one_winner() {
        let dir = cluster();
        for round in 0..20 {
            let t = issue(dir.path(), 60, None, 1000).unwrap();
            let threads = 6;
            let barrier = Arc::new(Barrier::new(threads));
            let winners: usize = (0..threads)
                .map(|i| {
                    let (dir, barrier) = (dir.path().to_owned(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        redeem(&dir, &t.secret, &format!("n{round}-{i}"), 1001).unwrap()
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|h| usize::from(h.join().unwrap().is_ok()))
                .sum();
            assert_eq!(winners, 1, "round {round}");
        }
    }
}
