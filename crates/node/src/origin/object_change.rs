//! Changes to an S3 origin's tree, for the mount: directories as prefixes
//! kept by an empty marker object, unlink, rmdir, and rename of a file as
//! a copy and a delete (see `object_write.rs` for the rules).

use object_store::path::Path;
use object_store::{ObjectStore, PutPayload};

use super::OriginError;
use super::object_write::DIR_MARKER;

/// What is at a key.
enum Found {
    File,
    /// A prefix with something under it (possibly only its marker).
    Dir,
    Nothing,
}

async fn find(store: &dyn ObjectStore, key: &Path, path: &str) -> Result<Found, OriginError> {
    match store.head(key).await {
        Ok(_) => Ok(Found::File),
        Err(object_store::Error::NotFound { .. }) => {
            let mut under = store.list(Some(key));
            match futures::StreamExt::next(&mut under).await {
                Some(Ok(_)) => Ok(Found::Dir),
                Some(Err(e)) => Err(OriginError::from_store(path, e)),
                None => Ok(Found::Nothing),
            }
        }
        Err(e) => Err(OriginError::from_store(path, e)),
    }
}

/// What is at `key` must be a file: a directory or nothing is refused as
/// `unlink(2)` refuses it.
async fn require_file(store: &dyn ObjectStore, key: &Path, path: &str) -> Result<(), OriginError> {
    match find(store, key, path).await? {
        Found::File => Ok(()),
        Found::Dir => Err(OriginError::IsADirectory { path: path.into() }),
        Found::Nothing => Err(OriginError::NotFound { path: path.into() }),
    }
}

fn marker(key: &Path) -> Path {
    key.child(DIR_MARKER)
}

async fn put_marker(store: &dyn ObjectStore, key: &Path, path: &str) -> Result<(), OriginError> {
    store
        .put(&marker(key), PutPayload::new())
        .await
        .map(drop)
        .map_err(|e| OriginError::from_store(path, e))
}

/// Keeps the directory holding `path` (at `key`) in existence after its
/// last object went: a directory lasts until `rmdir`, as on a disk.
/// `prefix` is the origin's root, which needs no marker.
async fn keep_parent(
    store: &dyn ObjectStore,
    prefix: &Path,
    key: &Path,
    path: &str,
) -> Result<(), OriginError> {
    let mut parts: Vec<_> = key.parts().collect();
    parts.pop();
    let parent: Path = parts.into_iter().collect();
    if parent == *prefix || !path.contains('/') {
        return Ok(());
    }
    if matches!(find(store, &parent, path).await?, Found::Nothing) {
        put_marker(store, &parent, path).await?;
    }
    Ok(())
}

/// Creates directory `path` at `key`.
pub(super) async fn mkdir(
    store: &dyn ObjectStore,
    key: &Path,
    path: &str,
) -> Result<(), OriginError> {
    match find(store, key, path).await? {
        Found::Nothing => put_marker(store, key, path).await,
        Found::File | Found::Dir => Err(OriginError::Exists { path: path.into() }),
    }
}

/// Removes the file `path` at `key`.
pub(super) async fn unlink(
    store: &dyn ObjectStore,
    prefix: &Path,
    key: &Path,
    path: &str,
) -> Result<(), OriginError> {
    require_file(store, key, path).await?;
    store
        .delete(key)
        .await
        .map_err(|e| OriginError::from_store(path, e))?;
    keep_parent(store, prefix, key, path).await
}

/// Removes the empty directory `path` at `key`.
pub(super) async fn rmdir(
    store: &dyn ObjectStore,
    prefix: &Path,
    key: &Path,
    path: &str,
) -> Result<(), OriginError> {
    match find(store, key, path).await? {
        Found::Dir => {}
        Found::File => return Err(OriginError::NotADirectory { path: path.into() }),
        Found::Nothing => return Err(OriginError::NotFound { path: path.into() }),
    }
    let mark = marker(key);
    let mut under = store.list(Some(key));
    while let Some(item) = futures::StreamExt::next(&mut under).await {
        let meta = item.map_err(|e| OriginError::from_store(path, e))?;
        if meta.location != mark {
            return Err(OriginError::NotEmpty { path: path.into() });
        }
    }
    store
        .delete(&mark)
        .await
        .map_err(|e| OriginError::from_store(path, e))?;
    keep_parent(store, prefix, key, path).await
}

/// Renames the file `from` (at `from_key`) to `to` (at `to_key`): a copy
/// and a delete. A directory is refused with
/// [`OriginError::CrossDevice`] (programs then copy it).
pub(super) async fn rename(
    store: &dyn ObjectStore,
    prefix: &Path,
    (from_key, from): (&Path, &str),
    (to_key, to): (&Path, &str),
    no_replace: bool,
    origin: &str,
) -> Result<(), OriginError> {
    match find(store, from_key, from).await? {
        Found::File => {}
        Found::Dir => {
            return Err(OriginError::CrossDevice {
                origin: origin.into(),
                path: from.into(),
            });
        }
        Found::Nothing => return Err(OriginError::NotFound { path: from.into() }),
    }
    match find(store, to_key, to).await? {
        Found::File if no_replace => return Err(OriginError::Exists { path: to.into() }),
        Found::Dir => return Err(OriginError::IsADirectory { path: to.into() }),
        Found::File | Found::Nothing => {}
    }
    if from_key == to_key {
        return Ok(());
    }
    let fail = |e| OriginError::from_store(from, e);
    store.copy(from_key, to_key).await.map_err(fail)?;
    store.delete(from_key).await.map_err(fail)?;
    keep_parent(store, prefix, from_key, from).await
}

/// Checks that `path` exists (a mode or time change to it is accepted
/// and not kept: S3 stores neither).
pub(super) async fn exists(
    store: &dyn ObjectStore,
    key: &Path,
    path: &str,
) -> Result<(), OriginError> {
    match find(store, key, path).await? {
        Found::File | Found::Dir => Ok(()),
        Found::Nothing => Err(OriginError::NotFound { path: path.into() }),
    }
}
