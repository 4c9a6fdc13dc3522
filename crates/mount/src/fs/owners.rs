//! Who owns what the mount shows and makes: the origin's owners where it
//! keeps them (a directory), else the mount's own user (S3, HTTP).

use coopcache_node::origin::Owner;
use fuser::{Errno, Request};

use super::CoopFs;
use crate::write::NewFile;

impl CoopFs {
    /// The mount's own user and group (this process's).
    pub(super) fn owner(&self) -> Owner {
        Owner {
            uid: self.uid,
            gid: self.gid,
        }
    }

    /// What a file `req` creates is made with: `perm`, and the caller as
    /// owner where the origin keeps owners (else the mount's user, which
    /// is what such a file shows).
    pub(super) fn new_file(&self, req: &Request, perm: u16) -> NewFile {
        NewFile {
            perm,
            creator: self.creator(req).unwrap_or(self.owner()),
        }
    }

    /// The caller of `req`, who owns what it creates, where the origin
    /// keeps owners.
    pub(super) fn creator(&self, req: &Request) -> Option<Owner> {
        self.node.origin().keeps_owners().then(|| Owner {
            uid: req.uid(),
            gid: req.gid(),
        })
    }

    /// The owner and group a `chown` asks for, as the origin is told
    /// them: as asked where it keeps owners; elsewhere nothing to change
    /// if they are the mount's own, else `EPERM`.
    pub(super) fn owner_asked(
        &self,
        uid: Option<u32>,
        gid: Option<u32>,
    ) -> Result<(Option<u32>, Option<u32>), Errno> {
        // -1 means "unchanged" to chown: the kernel never sends it.
        if uid == Some(u32::MAX) || gid == Some(u32::MAX) {
            return Err(Errno::EINVAL);
        }
        match self.node.origin().keeps_owners() {
            true => Ok((uid, gid)),
            // S3 and HTTP files are the mount's user's: giving them to
            // it changes nothing, another owner cannot be kept (as on
            // FAT or s3fs).
            false if uid.is_some_and(|u| u != self.uid) => Err(Errno::EPERM),
            false if gid.is_some_and(|g| g != self.gid) => Err(Errno::EPERM),
            false => Ok((None, None)),
        }
    }
}
