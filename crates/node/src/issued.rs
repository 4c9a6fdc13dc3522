//! The names a cluster CA has issued certificates to, and their ids, kept
//! for the CA's lifetime in `issued-names` beside `ca.key`: one
//! `NAME ID` line per node.
//!
//! A node's id is in its certificate ([`tls::peer_identity`]), chosen here
//! when the name is first issued: the smallest id no issued name has
//! (`coopcache cluster init a b c` gives 0, 1, 2), or one the operator
//! asks for. Renewing a name keeps its id; no two names ever share one;
//! and a join token can never obtain a name issued before, even after
//! every token that named it has expired and left the token table (a new
//! key under an old name would be a second member with the first one's
//! identity).
//!
//! Certificates in the directory (`NAME.pem`, issued before the register
//! existed or copied in) count as issued, with the id they carry.

use crate::tls::{self, TlsError};
use coopcache_core::coop::NodeId;
use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read, Write};
use std::path::Path;

/// The register's file, in the key directory.
pub const ISSUED_FILE: &str = "issued-names";

/// Names revoked (`crate::revocation::revoke`), one per line: never
/// issued again, renewals included.
pub const REVOKED_FILE: &str = "revoked-names";

/// Names a register holds at most: 65,536 lines of at most 76 bytes are
/// about 5 MB, read whole at every issue.
pub const MAX_ISSUED: usize = 65_536;

/// A register larger than this is refused unread.
const MAX_BYTES: u64 = (MAX_ISSUED as u64) * (tls::MAX_NAME_LEN as u64 + 12);

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> TlsError + '_ {
    move |source| TlsError::Io {
        path: path.to_owned(),
        source,
    }
}

fn bad(path: &Path, reason: String) -> TlsError {
    TlsError::BadRegister {
        path: path.to_owned(),
        reason,
    }
}

/// Every name issued by the CA in `dir` and its id: the register's, then
/// the certificates' in the directory that it does not list.
pub fn issued(dir: &Path) -> Result<BTreeMap<String, NodeId>, TlsError> {
    let path = dir.join(ISSUED_FILE);
    let mut names = BTreeMap::new();
    match fs::File::open(&path) {
        Ok(file) => {
            let mut text = String::new();
            file.take(MAX_BYTES + 1)
                .read_to_string(&mut text)
                .map_err(io_error(&path))?;
            if text.len() as u64 > MAX_BYTES {
                return Err(bad(&path, format!("larger than {MAX_BYTES} bytes")));
            }
            for (i, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let parsed = line.split_once(' ').and_then(|(name, id)| {
                    let id = id.trim().parse::<NodeId>().ok()?;
                    tls::check_name(name).ok().map(|()| (name.to_owned(), id))
                });
                let Some((name, id)) = parsed else {
                    return Err(bad(
                        &path,
                        format!(
                            "line {}: {line:?}: expected `NAME ID`; restore the file from a backup",
                            i + 1
                        ),
                    ));
                };
                names.insert(name, id);
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_error(&path)(e)),
    }
    for entry in fs::read_dir(dir).map_err(io_error(dir))? {
        let entry = entry.map_err(io_error(dir))?;
        let file = entry.file_name();
        let Some(name) = file.to_str().and_then(|f| f.strip_suffix(".pem")) else {
            continue;
        };
        if name == "ca" || tls::check_name(name).is_err() || names.contains_key(name) {
            continue;
        }
        if let Some(id) = tls::cert_file_id(&entry.path(), name) {
            names.insert(name.to_owned(), id);
        }
    }
    Ok(names)
}

/// Whether `name` was issued by the CA in `dir`.
pub fn contains(dir: &Path, name: &str) -> Result<bool, TlsError> {
    Ok(issued(dir)?.contains_key(name))
}

/// The id `name` gets from the CA in `dir`: the one it was issued with,
/// else `wanted` if given and free, else the smallest free one; recorded
/// (on disk before this returns) if new.
pub fn assign(dir: &Path, name: &str, wanted: Option<NodeId>) -> Result<NodeId, TlsError> {
    if is_barred(dir, name)? {
        return Err(TlsError::Revoked {
            name: name.to_owned(),
        });
    }
    let names = issued(dir)?;
    if let Some(&id) = names.get(name) {
        return match wanted {
            Some(wanted) if wanted != id => Err(TlsError::IdFixed {
                name: name.to_owned(),
                id,
                wanted,
            }),
            _ => Ok(id),
        };
    }
    if names.len() >= MAX_ISSUED {
        return Err(bad(
            &dir.join(ISSUED_FILE),
            format!("{MAX_ISSUED} names issued already"),
        ));
    }
    let taken: std::collections::HashMap<NodeId, &String> =
        names.iter().map(|(n, &id)| (id, n)).collect();
    let id = match wanted {
        Some(w) => match taken.get(&w) {
            Some(other) => {
                return Err(TlsError::IdTaken {
                    name: name.to_owned(),
                    other: (*other).clone(),
                    id: w,
                });
            }
            None => w,
        },
        // At most MAX_ISSUED ids are taken, so one below it is free.
        None => (0..).find(|id| !taken.contains_key(id)).unwrap_or(0),
    };
    record(dir, name, id)?;
    Ok(id)
}

/// Bars `name` from ever being issued again (it was revoked).
pub(crate) fn bar(dir: &Path, name: &str) -> Result<(), TlsError> {
    if is_barred(dir, name)? {
        return Ok(());
    }
    append(&dir.join(REVOKED_FILE), &format!("{name}\n"))
}

fn is_barred(dir: &Path, name: &str) -> Result<bool, TlsError> {
    let path = dir.join(REVOKED_FILE);
    match fs::read_to_string(&path) {
        Ok(text) => Ok(text.lines().any(|l| l.trim() == name)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_error(&path)(e)),
    }
}

fn record(dir: &Path, name: &str, id: NodeId) -> Result<(), TlsError> {
    append(&dir.join(ISSUED_FILE), &format!("{name} {id}\n"))
}

/// Appends `line` to `path` (created 0600), on disk before returning.
fn append(path: &Path, line: &str) -> Result<(), TlsError> {
    let mut options = fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(io_error(path))?;
    // One write of one short line: appends from two processes never mix.
    file.write_all(line.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(io_error(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_assigned_once_and_never_shared() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        tls::init_cluster(dir.path(), &names, 1).unwrap();
        for (i, name) in names.iter().enumerate() {
            let identity = tls::Identity::load(dir.path(), name).unwrap();
            assert_eq!(identity.id, i as NodeId, "{name}");
        }
        // Renewal keeps the id; a new name takes the smallest free one, or
        // the one asked for if free.
        tls::issue(dir.path(), "b", 1).unwrap();
        assert_eq!(tls::Identity::load(dir.path(), "b").unwrap().id, 1);
        assert_eq!(assign(dir.path(), "d", Some(9)).unwrap(), 9);
        assert_eq!(assign(dir.path(), "e", None).unwrap(), 3);
        let err = assign(dir.path(), "f", Some(1)).unwrap_err().to_string();
        assert!(err.contains("\"f\"") && err.contains("\"b\""), "{err}");
        let err = assign(dir.path(), "b", Some(7)).unwrap_err().to_string();
        assert!(err.contains("issued with id 1"), "{err}");
        // The register outlives the certificate files.
        fs::remove_file(dir.path().join("a.pem")).unwrap();
        assert!(contains(dir.path(), "a").unwrap());
        assert_eq!(assign(dir.path(), "a", None).unwrap(), 0);
    }

    #[test]
    fn a_corrupt_register_is_refused_naming_the_line() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(ISSUED_FILE), "ok 1\nnot/ok 2\n").unwrap();
        let err = issued(dir.path()).unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
        assert!(err.contains("issued-names"), "{err}");
    }
}
