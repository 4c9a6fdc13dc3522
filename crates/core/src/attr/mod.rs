//! Attribute caches (`attribute-caches.txt`): a node's cache split into
//! sub-caches chosen by a request's file type and size, each with its own
//! block size.
//!
//! - [`FileRequest`]: the request-level model, (client, file, type, size,
//!   offset, length, read or write), split into blocks of the sub-cache that
//!   takes it.
//! - [`AttrConfig`]: a configuration in the paper's notation
//!   (`64K/128 ID, x/4K Temporal, 2M/128K Sequential`), the Unix baseline,
//!   and the variable scheme of the paper's Table 1.
//! - [`AttributeCache`]: the sub-caches as one [`Policy`](crate::Policy),
//!   so an attribute cache can be the local cache of any cooperation
//!   algorithm.

mod cache;
mod notation;

pub use cache::{AttributeCache, request_keys, span};
pub use notation::{AttrConfig, Category, NotationError, Resolved, SubCacheSize, SubCacheSpec};

/// What kind of file a request touches (Unix file types, section 2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileType {
    /// File metadata: small and highly reused.
    Inode,
    /// A directory: small and highly reused.
    Directory,
    /// A data file read or written by a program.
    Datafile,
    /// A program, read whole when executed.
    Executable,
}

impl FileType {
    /// Every type.
    pub const ALL: [FileType; 4] = [
        FileType::Inode,
        FileType::Directory,
        FileType::Datafile,
        FileType::Executable,
    ];

    /// The name traces and reports use.
    pub fn name(self) -> &'static str {
        match self {
            FileType::Inode => "inode",
            FileType::Directory => "directory",
            FileType::Datafile => "datafile",
            FileType::Executable => "executable",
        }
    }

    /// Parses `inode`, `dir`/`directory`, `data`/`datafile`,
    /// `exec`/`executable` (any case).
    pub fn parse(text: &str) -> Option<FileType> {
        match text.trim().to_ascii_lowercase().as_str() {
            "inode" | "i" => Some(FileType::Inode),
            "dir" | "directory" | "d" => Some(FileType::Directory),
            "data" | "datafile" | "f" => Some(FileType::Datafile),
            "exec" | "executable" | "x" => Some(FileType::Executable),
            _ => None,
        }
    }
}

/// Read or write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Access {
    /// A read.
    #[default]
    Read,
    /// A write.
    Write,
}

/// One file-system request (the paper's appendix A.5 request model).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileRequest {
    /// Who made it.
    pub client: u32,
    /// The file's unique id.
    pub file: u64,
    /// The file's type.
    pub kind: FileType,
    /// The file's size in bytes (decides Temporal against Sequential).
    pub file_size: u64,
    /// First byte requested.
    pub offset: u64,
    /// Bytes requested; executables are read whole whatever this says.
    pub len: u64,
    /// Read or write.
    pub access: Access,
}

impl FileRequest {
    /// The byte range this request covers: executables are read (and
    /// written) whole, as the paper models exec.
    pub fn range(&self) -> (u64, u64) {
        match self.kind {
            FileType::Executable => (0, self.file_size.max(1)),
            _ => (self.offset, self.len.max(1)),
        }
    }
}

/// Bits of a block key that hold the block's index within its file.
const INDEX_BITS: u32 = 24;
/// Bits that hold the file id.
const FILE_BITS: u32 = 37;

/// The cache key of block `index` of `file` in sub-cache `subcache`:
/// `subcache << 61 | file << 24 | index`, so one `u64` names a block of one
/// sub-cache's block size and every sub-cache keeps its own blocks. `None`
/// if a part does not fit (8 sub-caches, 2^37 files, 2^24 blocks a file).
pub fn block_key(subcache: usize, file: u64, index: u64) -> Option<u64> {
    let fits = subcache < 8 && file >> FILE_BITS == 0 && index >> INDEX_BITS == 0;
    fits.then_some(((subcache as u64) << (FILE_BITS + INDEX_BITS)) | (file << INDEX_BITS) | index)
}

/// The sub-cache a block key belongs to.
pub fn key_subcache(key: u64) -> usize {
    (key >> (FILE_BITS + INDEX_BITS)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_their_subcache_and_refuse_overflow() {
        let k = block_key(5, 123_456, 77).unwrap();
        assert_eq!(key_subcache(k), 5);
        assert_ne!(block_key(1, 9, 0), block_key(2, 9, 0));
        assert_eq!(block_key(8, 1, 1), None);
        assert_eq!(block_key(0, 1 << 37, 1), None);
        assert_eq!(block_key(0, 1, 1 << 24), None);
    }

    #[test]
    fn executables_are_read_whole() {
        let r = FileRequest {
            client: 0,
            file: 1,
            kind: FileType::Executable,
            file_size: 90_000,
            offset: 4096,
            len: 8192,
            access: Access::Read,
        };
        assert_eq!(r.range(), (0, 90_000));
        assert_eq!(
            FileRequest {
                kind: FileType::Datafile,
                ..r
            }
            .range(),
            (4096, 8192)
        );
    }
}
