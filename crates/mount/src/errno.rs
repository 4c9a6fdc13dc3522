//! What a file system call returns when the cache or the origin fails.

use coopcache_node::NodeError;
use coopcache_node::driver::ReadError;
use coopcache_node::origin::OriginError;
use fuser::Errno;

/// The errno a program sees for `e`.
pub(crate) fn of_origin(e: &OriginError) -> Errno {
    match e {
        OriginError::NotFound { .. } | OriginError::NotAFile { .. } => Errno::ENOENT,
        OriginError::PermissionDenied { .. } => Errno::EACCES,
        OriginError::BadPath { too_long: true, .. } => Errno::ENAMETOOLONG,
        // A name no checked path can spell does not exist here.
        OriginError::BadPath { .. } => Errno::ENOENT,
        OriginError::NotALink { .. } => Errno::EINVAL,
        OriginError::TooLarge { .. } => Errno::E2BIG,
        OriginError::ReadOnly { .. } => Errno::EROFS,
        OriginError::Exists { .. } => Errno::EEXIST,
        OriginError::NotEmpty { .. } => Errno::ENOTEMPTY,
        OriginError::IsADirectory { .. } => Errno::EISDIR,
        OriginError::NotADirectory { .. } => Errno::ENOTDIR,
        // Changed under an open file: the program reopens to see the new
        // version (close-to-open); until then its reads fail.
        OriginError::Changed { .. } => Errno::ESTALE,
        // The origin directory's own refusal (a full disk, a quota, a
        // read-only file system) is the program's to see, as is.
        OriginError::CrossDevice { .. } => Errno::EXDEV,
        // symlink(2)'s answer on a file system without links.
        OriginError::Unsupported { .. } => Errno::EPERM,
        OriginError::Local { source, .. } | OriginError::Spool { source, .. } => {
            source.raw_os_error().map_or(Errno::EIO, Errno::from_i32)
        }
        _ => Errno::EIO,
    }
}

/// The errno a program sees for a failed read through the node.
pub(crate) fn of_node(e: &NodeError) -> Errno {
    match e {
        NodeError::Origin(o) => of_origin(o),
        NodeError::Read(ReadError::Origin(o)) => of_origin(o),
        NodeError::Range { .. } => Errno::EINVAL,
        _ => Errno::EIO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_paths_say_why_in_their_errno() {
        let bad = |too_long| OriginError::BadPath {
            path: "p".into(),
            why: "w".into(),
            too_long,
        };
        assert_eq!(of_origin(&bad(true)), Errno::ENAMETOOLONG);
        assert_eq!(of_origin(&bad(false)), Errno::ENOENT);
        let full = OriginError::Local {
            path: "p".into(),
            source: std::io::Error::from_raw_os_error(libc::ENOSPC),
        };
        assert_eq!(of_origin(&full), Errno::ENOSPC);
    }
}
