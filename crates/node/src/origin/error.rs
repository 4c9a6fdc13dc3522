//! What can go wrong between the cache and its origin.

use std::path::PathBuf;

/// An error opening, probing or reading an origin.
///
/// None of these leave anything behind: the origin is only ever read, so a
/// failed call changes nothing in the origin or in the cache that asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OriginError {
    /// The file does not exist in the origin (the HTTP gateway answers 404).
    #[error("{path} not found in the origin")]
    NotFound {
        /// The path as the caller gave it.
        path: String,
    },
    /// The path names something other than a regular file (a directory, a
    /// FIFO, a device); the HTTP gateway answers 404.
    #[error("{path} is {kind}, not a file")]
    NotAFile {
        /// The path as the caller gave it.
        path: String,
        /// What it is instead.
        kind: &'static str,
    },
    /// The origin refused to let the daemon read the file (its permissions);
    /// the HTTP gateway answers 403.
    #[error("{path} may not be read: the origin's permissions refuse it")]
    PermissionDenied {
        /// The path as the caller gave it.
        path: String,
    },
    /// The file changed since it was stat'ed: its version no longer matches.
    /// Stat it again and drop any blocks cached under the old version.
    #[error("{path} changed in the origin since it was stat'ed; stat it again")]
    Changed {
        /// The path as the caller gave it.
        path: String,
    },
    /// A user-supplied path was refused before reaching the origin.
    #[error("path {path:?} refused: {why}; a path must be relative and stay inside the origin")]
    BadPath {
        /// The path as the caller gave it.
        path: String,
        /// What is wrong with it.
        why: String,
        /// Whether it was refused for a name longer than the file system
        /// takes (the mount answers `ENAMETOOLONG`, not `ENOENT`).
        too_long: bool,
    },
    /// The origin spec is not one of the accepted forms.
    #[error("origin {spec:?} refused: {why}")]
    BadSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong with it, and the accepted forms.
        why: String,
    },
    /// A local origin directory does not exist or is not a directory.
    #[error("origin directory {} is not usable: {why}", dir.display())]
    BadDir {
        /// The directory named by the spec.
        dir: PathBuf,
        /// Why it cannot be used.
        why: String,
    },
    /// A store option key or value was refused.
    #[error("origin option {key:?} refused for {spec:?}: {why}")]
    BadOption {
        /// The spec the option was given with.
        spec: String,
        /// The option key.
        key: String,
        /// Why it was refused.
        why: String,
    },
    /// The origin could not be reached or refused the probe at startup.
    #[error("origin {origin} failed its startup probe (unreachable or misconfigured): {source}")]
    Unreachable {
        /// The origin's description.
        origin: String,
        /// What the store said.
        #[source]
        source: object_store::Error,
    },
    /// The store failed in another way while stat'ing or reading `path`.
    #[error("origin request for {path} failed: {source}")]
    Io {
        /// The path as the caller gave it.
        path: String,
        /// What the store said.
        #[source]
        source: object_store::Error,
    },
    /// A local directory origin failed in another way on `path`.
    #[error("reading {path} from the origin directory failed: {source}")]
    Local {
        /// The path as the caller gave it.
        path: String,
        /// What the kernel said.
        #[source]
        source: std::io::Error,
    },
    /// The local spool file holding a draft for an object store failed
    /// (a full disk, say) on `path`.
    #[error("the local spool of the writes to {path} failed: {source}")]
    Spool {
        /// The path as the caller gave it.
        path: String,
        /// What the kernel said.
        #[source]
        source: std::io::Error,
    },
    /// The origin cannot do this change in one step (an object store
    /// renaming a directory); a program falls back to copying, as across
    /// file systems.
    #[error("the origin {origin} cannot rename the directory {path} in one step")]
    CrossDevice {
        /// The origin's description.
        origin: String,
        /// The path as the caller gave it.
        path: String,
    },
    /// The origin has no such thing (an object store has no symbolic
    /// links).
    #[error("the origin {origin} cannot hold {what}")]
    Unsupported {
        /// The origin's description.
        origin: String,
        /// What it cannot hold.
        what: String,
    },
    /// The store gave neither an ETag nor a `Last-Modified` for the file,
    /// so a change to it could never be detected; refused unless the origin
    /// is declared immutable (`--origin-immutable`).
    #[error(
        "the origin gives neither an ETag nor a Last-Modified for {path}, so a change to it could not be detected; if the origin's files never change, start the node with --origin-immutable"
    )]
    NoValidator {
        /// The path as the caller gave it.
        path: String,
    },
    /// The origin cannot be written (HTTP).
    #[error("the origin {origin} is read-only here")]
    ReadOnly {
        /// The origin's description.
        origin: String,
    },
    /// Something already exists at the path.
    #[error("{path} already exists")]
    Exists {
        /// The path as the caller gave it.
        path: String,
    },
    /// A directory to remove is not empty.
    #[error("directory {path} is not empty")]
    NotEmpty {
        /// The path as the caller gave it.
        path: String,
    },
    /// A directory where a file was expected.
    #[error("{path} is a directory")]
    IsADirectory {
        /// The path as the caller gave it.
        path: String,
    },
    /// A file where a directory was expected.
    #[error("{path} is not a directory")]
    NotADirectory {
        /// The path as the caller gave it.
        path: String,
    },
    /// A link was asked for where there is none (`readlink` of a file).
    #[error("{path} is not a symbolic link")]
    NotALink {
        /// The path as the caller gave it.
        path: String,
    },
    /// A directory holds more entries than a listing may.
    #[error("{path} holds more than {max} entries; list a subdirectory")]
    TooLarge {
        /// The directory as the caller gave it.
        path: String,
        /// The limit.
        max: usize,
    },
    /// The store returned a different number of bytes than asked for.
    #[error("origin returned {got} bytes of {path} where {expected} were asked for")]
    Short {
        /// The path as the caller gave it.
        path: String,
        /// Bytes asked for (after clamping to the file size).
        expected: u64,
        /// Bytes returned.
        got: u64,
    },
}

impl OriginError {
    /// Whether there is no file at the path: nothing, or something that is
    /// not a file (the HTTP gateway maps this to 404).
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            OriginError::NotFound { .. } | OriginError::NotAFile { .. }
        )
    }

    /// Whether the file changed under the version the caller held.
    pub fn is_changed(&self) -> bool {
        matches!(self, OriginError::Changed { .. })
    }

    /// Classifies a store error met while working on `path`.
    pub(crate) fn from_store(path: &str, source: object_store::Error) -> OriginError {
        let path = path.to_owned();
        match source {
            object_store::Error::NotFound { .. } => OriginError::NotFound { path },
            object_store::Error::Precondition { .. } => OriginError::Changed { path },
            object_store::Error::PermissionDenied { .. } => OriginError::PermissionDenied { path },
            // A conditional put (`If-None-Match: *`) found the object.
            object_store::Error::AlreadyExists { .. } => OriginError::Exists { path },
            source => OriginError::Io { path, source },
        }
    }
}
