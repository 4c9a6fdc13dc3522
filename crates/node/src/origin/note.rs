//! Notes kept with an origin's files (`local/note.rs`): a directory
//! origin keeps them in an extended attribute; S3 and HTTP keep none
//! through this crate (an S3 origin's own ETag is already its content's).

use super::{Origin, OriginError, Store, check_path};

impl Origin {
    /// The note kept with `path`, if any.
    pub async fn note(&self, path: &str) -> Result<Option<Vec<u8>>, OriginError> {
        check_path(path)?;
        match &self.store {
            Store::Local(dir) => {
                let (dir, p) = (dir.clone(), path.to_owned());
                super::blocking(path.to_owned(), move || dir.note(&p)).await
            }
            Store::Object { .. } => Ok(None),
        }
    }

    /// Keeps `note` with `path`; `false` where the origin keeps none.
    pub async fn set_note(&self, path: &str, note: Vec<u8>) -> Result<bool, OriginError> {
        check_path(path)?;
        match &self.store {
            Store::Local(dir) => {
                let (dir, p) = (dir.clone(), path.to_owned());
                super::blocking(path.to_owned(), move || dir.set_note(&p, &note)).await
            }
            Store::Object { .. } => Ok(false),
        }
    }
}
