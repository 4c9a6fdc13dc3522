//! A file being written through the mount, whatever the origin: a
//! temporary file beside its target in a local directory
//! (`local/write.rs`), a spool file put at the commit for S3
//! (`object_write.rs`). Both record the ranges their open wrote and merge
//! them over the file as it is at the commit.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;

use super::counts::Counts;
use super::object_write::ObjectDraft;
use super::{FileVersion, OriginError, Owner, SetTime, local};

/// A file being written: nothing of it is visible to others until
/// [`Draft::commit`]; dropped uncommitted, it leaves the file as it was.
#[derive(Debug)]
pub struct Draft {
    kind: Kind,
    /// Its origin's counts: writes into the origin, and the commit.
    counts: Arc<Counts>,
}

#[derive(Debug)]
enum Kind {
    Local(local::Draft),
    Object(ObjectDraft),
}

impl Draft {
    pub(super) fn local(d: local::Draft, counts: Arc<Counts>) -> Draft {
        let kind = Kind::Local(d);
        Draft { kind, counts }
    }

    pub(super) fn object(d: ObjectDraft, counts: Arc<Counts>) -> Draft {
        let kind = Kind::Object(d);
        Draft { kind, counts }
    }

    /// The file holding the draft's bytes.
    fn file(&self) -> &File {
        match &self.kind {
            Kind::Local(d) => d.file(),
            Kind::Object(d) => d.file(),
        }
    }

    /// An I/O failure of the draft's file, as the kind of draft reports it.
    fn io(&self, e: io::Error) -> OriginError {
        match &self.kind {
            Kind::Local(d) => OriginError::Local {
                path: d.path().into(),
                source: e,
            },
            Kind::Object(d) => OriginError::Spool {
                path: d.path().into(),
                source: e,
            },
        }
    }

    /// Writes `data` at `offset`.
    pub fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), OriginError> {
        match &mut self.kind {
            // Into the origin's directory (on NFS, a WRITE).
            Kind::Local(d) => {
                self.counts.write(data.len());
                d.write_at(offset, data, false)
            }
            // Into the local spool: the origin sees the put at the commit.
            Kind::Object(d) => d.write_at(offset, data, false),
        }
    }

    /// Appends `data` at the draft's end (`O_APPEND`): at the commit it
    /// goes after the end of the file as it is then, so appends of writers
    /// on other nodes meanwhile are kept. Returns the offset written at.
    pub fn append(&mut self, data: &[u8]) -> Result<u64, OriginError> {
        let at = self.len()?;
        match &mut self.kind {
            Kind::Local(d) => {
                self.counts.write(data.len());
                d.write_at(at, data, true)?;
            }
            Kind::Object(d) => d.write_at(at, data, true)?,
        }
        Ok(at)
    }

    /// Reads up to `len` bytes at `offset` (fewer at the end).
    pub fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>, OriginError> {
        let mut buf = vec![0; len];
        let mut got = 0;
        while got < len {
            match self.file().read_at(&mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(e)),
            }
        }
        buf.truncate(got);
        Ok(buf)
    }

    /// Sets the length (truncates or extends with zeros).
    pub fn set_len(&mut self, len: u64) -> Result<(), OriginError> {
        match &mut self.kind {
            Kind::Local(d) => d.set_len(len),
            Kind::Object(d) => d.set_len(len),
        }
    }

    /// Sets the permission bits the file will have (an object store keeps
    /// none: accepted and not kept).
    pub fn set_mode(&self, mode: u32) -> Result<(), OriginError> {
        match &self.kind {
            Kind::Local(d) => d.set_mode(mode),
            Kind::Object(_) => Ok(()),
        }
    }

    /// Gives a file the draft creates to `owner`, its creator (a file the
    /// origin had keeps its owner; an object store keeps none; a process
    /// that may not give files away keeps them).
    pub fn set_creator(&self, owner: Owner) -> Result<(), OriginError> {
        match &self.kind {
            Kind::Local(d) => d.set_creator(owner),
            Kind::Object(_) => Ok(()),
        }
    }

    /// Sets the owner and group the file will have (`None`: unchanged;
    /// an object store keeps none: [`OriginError::Unsupported`]).
    pub fn set_owner(&self, uid: Option<u32>, gid: Option<u32>) -> Result<(), OriginError> {
        match &self.kind {
            Kind::Local(d) => d.set_owner(uid, gid),
            Kind::Object(d) => Err(OriginError::Unsupported {
                origin: "an object store".into(),
                what: format!("owners (of {})", d.path()),
            }),
        }
    }

    /// The permission bits and owner the file will have, where the origin
    /// keeps them (`None`: an object store).
    pub fn attrs(&self) -> Result<Option<(u16, Owner)>, OriginError> {
        match &self.kind {
            Kind::Local(d) => d.attrs().map(Some),
            Kind::Object(_) => Ok(None),
        }
    }

    /// Sets the times the file will have (an object store sets its own at
    /// the put: accepted and not kept).
    pub fn set_times(
        &mut self,
        atime: Option<SetTime>,
        mtime: Option<SetTime>,
    ) -> Result<(), OriginError> {
        match &mut self.kind {
            Kind::Local(d) => d.set_times(atime, mtime),
            Kind::Object(_) => Ok(()),
        }
    }

    /// The current length.
    pub fn len(&self) -> Result<u64, OriginError> {
        let meta = self.file().metadata().map_err(|e| self.io(e))?;
        Ok(meta.len())
    }

    /// Whether nothing is written yet.
    pub fn is_empty(&self) -> Result<bool, OriginError> {
        Ok(self.len()? == 0)
    }

    /// When the draft was last written (what a new file's writers report
    /// as its modification time before the commit).
    pub fn modified(&self) -> Result<SystemTime, OriginError> {
        let meta = self.file().metadata().map_err(|e| self.io(e))?;
        meta.modified().map_err(|e| self.io(e))
    }

    /// Makes the draft the file, merged over what others committed since
    /// it began (see `local/write.rs` and `object_write.rs`), and returns
    /// the new version.
    pub async fn commit(self) -> Result<FileVersion, OriginError> {
        self.commit_keeping(0).await.map(|(version, _)| version)
    }

    /// [`Draft::commit`], and the new version's bytes if it is at most
    /// `up_to` bytes long and the origin is a local directory: read back
    /// from the file just renamed into place, for the writer's node to
    /// take in without reading the origin again (`None` for S3, whose
    /// writer's copy the node reads instead, and if the file changed).
    pub async fn commit_keeping(
        self,
        up_to: u64,
    ) -> Result<(FileVersion, Option<Bytes>), OriginError> {
        self.counts.commit();
        match self.kind {
            Kind::Local(d) => {
                let path = d.path().to_owned();
                super::blocking(path, move || d.commit_keeping(up_to)).await
            }
            Kind::Object(d) => Ok((d.commit(&self.counts).await?, None)),
        }
    }
}
