//! The mount's own limits on names, checked before an origin sees them.
//!
//! POSIX says a name longer than `NAME_MAX`, or a path longer than
//! `PATH_MAX`, is `ENAMETOOLONG`. The kernel checks the path a program
//! gives, from the program's own root, but the origin sees the path
//! relative to its root, under its own prefix (a directory's location, an
//! S3 bucket's key prefix): left to the origin, the same name would fit
//! or not depending on where the origin lives. So the mount applies one
//! limit of its own, the one `statfs` reports: 255 bytes per name, and the
//! protocol's 4,096 bytes for a path below the mount point (the longest a
//! C2Cfs frame carries).

use std::ffi::OsStr;

use coopcache_core::c2cfs::exclusive::MAX_PATH;
use coopcache_node::origin::tree::join;
use fuser::Errno;

/// The longest name, in bytes (Linux's `NAME_MAX`).
pub(crate) const NAME_MAX: usize = 255;

/// The path of `name` in the directory `dir`, or the error a program
/// gets: `ENAMETOOLONG` past the mount's limits, `not_utf8` for a name
/// no origin can hold (S3 keys and the protocol's paths are UTF-8).
pub(crate) fn child_path(dir: &str, name: &OsStr, not_utf8: Errno) -> Result<String, Errno> {
    if name.len() > NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    let name = name.to_str().ok_or(not_utf8)?;
    let path = join(dir, name);
    if path.len() > MAX_PATH {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths_past_the_limits_are_too_long() {
        let ok = "n".repeat(NAME_MAX);
        assert_eq!(
            child_path("", OsStr::new(&ok), Errno::EINVAL),
            Ok(ok.clone())
        );
        let long = "n".repeat(NAME_MAX + 1);
        assert_eq!(
            child_path("", OsStr::new(&long), Errno::EINVAL),
            Err(Errno::ENAMETOOLONG)
        );
        // A path of exactly 4,096 bytes fits, one byte more does not.
        let dir = vec!["d".repeat(250); 16].join("/");
        let last = "n".repeat(MAX_PATH - dir.len() - 1);
        assert!(child_path(&dir, OsStr::new(&last), Errno::EINVAL).is_ok());
        let over = format!("{last}n");
        assert_eq!(
            child_path(&dir, OsStr::new(&over), Errno::EINVAL),
            Err(Errno::ENAMETOOLONG)
        );
    }
}
