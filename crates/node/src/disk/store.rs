//! Slots in one preallocated file per directory: the format is in the
//! module doc of `disk`.

use bytes::Bytes;
use coopcache_core::protocol::BlockId;
use rustix::fs::{FallocateFlags, FlockOperation};
use rustix::io::Errno;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The store's file in each directory.
pub const FILE_NAME: &str = "coopcache-blocks";
/// The superblock's room at the start of each file: one page, so slots
/// stay page-aligned.
const SUPERBLOCK_BYTES: u64 = 4096;
const SUPERBLOCK_MAGIC: &[u8; 16] = b"COOPCACHE-DISK\0\x01";
/// Magic, version, block size, slot size, slots: what the superblock's
/// checksum covers.
const SUPERBLOCK_FIELDS: usize = 16 + 4 + 4 + 8 + 4;
const FORMAT_VERSION: u32 = 1;
/// Slots are whole pages: a write of one never touches a neighbour's page.
const SLOT_ALIGN: u64 = 4096;
const HEADER_MAGIC: &[u8; 6] = b"CCBLK\x01";
/// Magic, block file, index, route, data length, data hash.
const HEADER_FIELDS: usize = 6 + 8 + 4 + 4 + 4 + 32;
/// 16 bytes of checksum are plenty to tell a torn header from a whole one.
const HEADER_CHECKSUM: usize = 16;
const HEADER_BYTES: usize = HEADER_FIELDS + HEADER_CHECKSUM;
/// How often a long scan at open says how far it got.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// A block found in a slot when the store was opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recovered {
    /// The slot it is in.
    pub slot: u32,
    /// The block its header names.
    pub block: BlockId,
    /// The BLAKE3 hash of its data, from its header: the data read back
    /// is only the block's if it hashes to this.
    pub hash: [u8; 32],
    /// Its length in bytes.
    pub len: u32,
}

/// What went wrong opening, reading or writing the disk tier's store.
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    /// `open` was given no directory.
    #[error("the disk tier needs at least one directory")]
    NoDirs,
    /// `open` was given a block size of 0.
    #[error("the disk tier's block size must be at least 1 byte")]
    ZeroBlockSize,
    /// Each directory's share of the size cannot hold one slot.
    #[error(
        "disk size of {size} bytes is too small for one block: each of the {dirs} \
         directories needs at least {needed} bytes (a {SUPERBLOCK_BYTES}-byte superblock \
         and one {slot_bytes}-byte slot for blocks of {block_size} bytes); give a larger \
         --disk-size"
    )]
    TooSmall {
        /// The size asked for, in all.
        size: u64,
        /// The number of directories it is split over.
        dirs: usize,
        /// The bytes one directory needs for one slot.
        needed: u64,
        /// The bytes one slot takes.
        slot_bytes: u64,
        /// The block size asked for.
        block_size: u32,
    },
    /// The store's file, opened again ([`DiskStore::reopen`]), is not the
    /// one the node made.
    #[error("{} is not the disk tier's store any more ({why}): not made again while the node runs; restart it to start a new one", path.display())]
    NotTheStore {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The store's file could not be opened or created.
    #[error("cannot open or create {} (expected a writable directory, or one that can be created)", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The store's file is locked by another open store.
    #[error(
        "{} is in use: another node has this directory as its disk tier, or the \
         directory was given twice",
        path.display()
    )]
    InUse {
        /// The file.
        path: PathBuf,
        /// What `flock` said.
        #[source]
        source: io::Error,
    },
    /// The file system has no room for the store's file.
    #[error(
        "no room in {} for the disk tier's {bytes} bytes: give a smaller --disk-size",
        dir.display()
    )]
    NoSpace {
        /// The directory.
        dir: PathBuf,
        /// The length of its file.
        bytes: u64,
        /// What `fallocate` said.
        #[source]
        source: io::Error,
    },
    /// Reading or writing the store's file failed.
    #[error("{what} {}", path.display())]
    Io {
        /// What was being done, e.g. "reading slot 3 of".
        what: String,
        /// The file.
        path: PathBuf,
        /// Why it failed.
        #[source]
        source: io::Error,
    },
    /// A slot number not below [`DiskStore::slots`].
    #[error("slot {slot} does not exist: the disk tier has {slots} slots")]
    SlotOutOfRange {
        /// The slot asked for.
        slot: u32,
        /// The number of slots.
        slots: u32,
    },
    /// Data longer than the block size.
    #[error("{len} bytes of data do not fit a slot for blocks of at most {block_size} bytes")]
    TooLong {
        /// The data's length.
        len: usize,
        /// The block size.
        block_size: u32,
    },
}

/// Fixed-size slots striped over one file per directory (see the module
/// doc for the format). Every method takes `&self` and does positioned
/// I/O, so one store is shared (in an `Arc`) by any number of blocking
/// tasks without a lock.
#[derive(Debug)]
pub struct DiskStore {
    files: Vec<SlotFile>,
    block_size: u32,
    slot_bytes: u64,
    slots: u32,
}

/// One directory's file.
#[derive(Debug)]
struct SlotFile {
    path: PathBuf,
    file: File,
}

impl DiskStore {
    /// Opens (or creates) the store in `dirs` (each an existing directory;
    /// several disks allowed), `size` bytes in all, for blocks of at most
    /// `block_size` bytes.
    ///
    /// Returns the store and every block found in its slots (from an
    /// earlier run of the node with the same dirs and block size), by
    /// slot. A file written for another layout is emptied, with a warning.
    pub fn open(
        dirs: &[PathBuf],
        size: u64,
        block_size: u32,
    ) -> Result<(DiskStore, Vec<Recovered>), DiskError> {
        Self::open_or_reopen(dirs, size, block_size, true)
    }

    /// Opens the store [`DiskStore::open`] made in `dirs` again (after its
    /// disk failed), with what its slots hold; never makes one. A disk
    /// unmounted leaves its mount point behind, empty, on the disk above
    /// it: a store made there would fill that disk. So a file that is not
    /// there, or not written for this layout, is
    /// [`DiskError::NotTheStore`].
    pub fn reopen(
        dirs: &[PathBuf],
        size: u64,
        block_size: u32,
    ) -> Result<(DiskStore, Vec<Recovered>), DiskError> {
        Self::open_or_reopen(dirs, size, block_size, false)
    }

    fn open_or_reopen(
        dirs: &[PathBuf],
        size: u64,
        block_size: u32,
        make: bool,
    ) -> Result<(DiskStore, Vec<Recovered>), DiskError> {
        if dirs.is_empty() {
            return Err(DiskError::NoDirs);
        }
        if block_size == 0 {
            return Err(DiskError::ZeroBlockSize);
        }
        let slot_bytes = (HEADER_BYTES as u64 + u64::from(block_size)).next_multiple_of(SLOT_ALIGN);
        let n = dirs.len() as u64;
        let fit = (size / n).saturating_sub(SUPERBLOCK_BYTES) / slot_bytes;
        // Slot numbers are u32: past 4 billion slots the rest goes unused.
        let per_file = u32::try_from(fit.min(u64::from(u32::MAX) / n)).unwrap_or(0);
        if per_file == 0 {
            return Err(DiskError::TooSmall {
                size,
                dirs: dirs.len(),
                needed: SUPERBLOCK_BYTES + slot_bytes,
                slot_bytes,
                block_size,
            });
        }
        if u64::from(per_file) < fit {
            tracing::warn!(
                size,
                block_size,
                "the disk tier uses only its first {} slots",
                u32::MAX
            );
        }
        let layout = Layout {
            block_size,
            slot_bytes,
            slots: per_file,
        };
        // per_file * n <= u32::MAX, so n fits too.
        let n = n as u32;
        let mut progress = Progress::new(u64::from(per_file) * u64::from(n));
        let mut files = Vec::with_capacity(dirs.len());
        let mut found = Vec::new();
        for (i, dir) in (0..n).zip(dirs) {
            let (file, kept) = SlotFile::open(dir, layout, make)?;
            if kept {
                file.scan(
                    layout,
                    |local, header| {
                        found.push(Recovered {
                            slot: local * n + i,
                            block: header.block,
                            hash: header.hash,
                            len: header.len,
                        })
                    },
                    &mut progress,
                )?;
            }
            files.push(file);
        }
        found.sort_unstable_by_key(|r| r.slot);
        if !found.is_empty() {
            tracing::info!(
                blocks = found.len(),
                "disk tier: blocks found from an earlier run"
            );
        }
        let store = DiskStore {
            files,
            block_size,
            slot_bytes,
            slots: per_file * n,
        };
        Ok((store, found))
    }

    /// Number of slots (at least 1).
    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// Bytes one slot takes on disk (header + block size, rounded up to
    /// 4096).
    pub fn slot_bytes(&self) -> u64 {
        self.slot_bytes
    }

    /// Writes `data` (at most the block size) of `block`, whose BLAKE3 hash
    /// is `hash`, into `slot`, in place of whatever it held.
    pub fn write(
        &self,
        slot: u32,
        block: BlockId,
        hash: &[u8; 32],
        data: &[u8],
    ) -> Result<(), DiskError> {
        let (file, offset) = self.locate(slot)?;
        let len = u32::try_from(data.len())
            .ok()
            .filter(|&len| len <= self.block_size)
            .ok_or(DiskError::TooLong {
                len: data.len(),
                block_size: self.block_size,
            })?;
        // One buffer, one pwrite: a torn write is then at worst a torn
        // header (its checksum fails) or torn data (the hash fails).
        let mut buf = Vec::with_capacity(HEADER_BYTES + data.len());
        Header {
            block,
            len,
            hash: *hash,
        }
        .encode(&mut buf);
        buf.extend_from_slice(data);
        file.file
            .write_all_at(&buf, offset)
            .map_err(|source| file.io(format!("writing slot {slot} of"), source))
    }

    /// Reads `slot`: its data and the hash its header records, if the
    /// header is intact and names `block`; `None` if the slot holds another
    /// block, nothing, or a torn or corrupt header.
    ///
    /// The data is only `block`'s if it hashes to the hash returned (a
    /// write torn by a crash or racing this read leaves a whole header
    /// over torn data): the caller checks.
    pub fn read(&self, slot: u32, block: BlockId) -> Result<Option<(Bytes, [u8; 32])>, DiskError> {
        let (file, offset) = self.locate(slot)?;
        let mut buf = vec![0; HEADER_BYTES + self.block_size as usize];
        file.file
            .read_exact_at(&mut buf, offset)
            .map_err(|source| file.io(format!("reading slot {slot} of"), source))?;
        let Parsed::Holds(header) = Header::parse(&buf[..HEADER_BYTES], self.block_size) else {
            return Ok(None);
        };
        if header.block != block {
            return Ok(None);
        }
        let data = HEADER_BYTES..HEADER_BYTES + header.len as usize;
        // A slice keeps the whole buffer alive: worth it for a full block,
        // not for a short one (a file's last) that a cache may keep long.
        let data = if data.len() >= buf.len() / 2 {
            Bytes::from(buf).slice(data)
        } else {
            Bytes::copy_from_slice(&buf[data])
        };
        Ok(Some((data, header.hash)))
    }

    /// The file and byte offset of `slot`.
    fn locate(&self, slot: u32) -> Result<(&SlotFile, u64), DiskError> {
        if slot >= self.slots {
            return Err(DiskError::SlotOutOfRange {
                slot,
                slots: self.slots,
            });
        }
        // At most u32::MAX files (open checks), and `slots` is a multiple
        // of their number, so `slot / n` is a slot each file has.
        let n = self.files.len() as u32;
        let file = &self.files[(slot % n) as usize];
        Ok((file, slot_offset(slot / n, self.slot_bytes)))
    }
}

/// Where local slot `local` of a file starts.
fn slot_offset(local: u32, slot_bytes: u64) -> u64 {
    SUPERBLOCK_BYTES + u64::from(local) * slot_bytes
}

impl SlotFile {
    /// Opens, locks and preallocates `dir`'s file; it is emptied unless its
    /// superblock records `layout`. Returns it and whether its slots were
    /// kept. Unless `make`, a file missing or not of `layout` is an error
    /// ([`DiskStore::reopen`]).
    fn open(dir: &Path, layout: Layout, make: bool) -> Result<(SlotFile, bool), DiskError> {
        let path = dir.join(FILE_NAME);
        if make {
            // Created as a cache directory would be (`--disk /var/cache/x`
            // on a fresh machine); a parent that cannot hold it fails below.
            let _ = std::fs::create_dir_all(dir);
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(make)
            .truncate(false)
            .open(&path)
            .map_err(|source| match source.kind() {
                std::io::ErrorKind::NotFound if !make => DiskError::NotTheStore {
                    path: path.clone(),
                    why: "it is gone".into(),
                },
                _ => DiskError::Open {
                    path: path.clone(),
                    source,
                },
            })?;
        if let Err(errno) = rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
            return Err(DiskError::InUse {
                path,
                source: errno.into(),
            });
        }
        let file = SlotFile { path, file };
        let len = slot_offset(layout.slots, layout.slot_bytes);
        let stale = file.stale(layout)?;
        if let (Some(why), false) = (&stale, make) {
            let why = if why.is_empty() { "it is empty" } else { why };
            return Err(DiskError::NotTheStore {
                path: file.path,
                why: why.into(),
            });
        }
        if let Some(why) = &stale {
            if !why.is_empty() {
                tracing::warn!(
                    path = %file.path.display(),
                    "disk tier: {why}; its blocks are discarded"
                );
            }
            // Empty first, so no slot of the old layout survives into the new.
            file.file
                .set_len(0)
                .map_err(|source| file.io("emptying".into(), source))?;
        }
        file.preallocate(dir, len)?;
        if stale.is_some() {
            file.file
                .write_all_at(&layout.encode(), 0)
                .and_then(|()| file.file.sync_all())
                .map_err(|source| file.io("writing the superblock of".into(), source))?;
        }
        Ok((file, stale.is_none()))
    }

    /// Why the file's slots cannot be kept under `layout` ("" for a new,
    /// empty file), or `None` if they can.
    fn stale(&self, layout: Layout) -> Result<Option<String>, DiskError> {
        let len = self
            .file
            .metadata()
            .map_err(|source| self.io("reading the length of".into(), source))?
            .len();
        if len == 0 {
            return Ok(Some(String::new()));
        }
        if len < SUPERBLOCK_BYTES {
            return Ok(Some("the file is shorter than its superblock".into()));
        }
        let mut superblock = [0; SUPERBLOCK_FIELDS + 32];
        self.file
            .read_exact_at(&mut superblock, 0)
            .map_err(|source| self.io("reading the superblock of".into(), source))?;
        Ok(match Layout::decode(&superblock) {
            Err(why) => Some(why),
            Ok(found) if found != layout => Some(format!(
                "written for blocks of {} bytes in {} slots of {} bytes, now {} in {} of {}",
                found.block_size,
                found.slots,
                found.slot_bytes,
                layout.block_size,
                layout.slots,
                layout.slot_bytes
            )),
            Ok(_) => None,
        })
    }

    /// Makes the file `len` bytes long, with its blocks allocated where the
    /// file system can, so that a full disk shows now, not at a write.
    fn preallocate(&self, dir: &Path, len: u64) -> Result<(), DiskError> {
        let no_space = |source| DiskError::NoSpace {
            dir: dir.to_path_buf(),
            bytes: len,
            source,
        };
        loop {
            match rustix::fs::fallocate(&self.file, FallocateFlags::empty(), 0, len) {
                Ok(()) => return Ok(()),
                Err(Errno::INTR) => continue,
                Err(Errno::NOSPC) => return Err(no_space(Errno::NOSPC.into())),
                Err(Errno::OPNOTSUPP) => break,
                Err(errno) => {
                    return Err(self.io(format!("preallocating {len} bytes for"), errno.into()));
                }
            }
        }
        tracing::warn!(
            path = %self.path.display(),
            "disk tier: the file system cannot preallocate; the file is sparse, \
             and a full disk will fail writes"
        );
        self.file.set_len(len).map_err(|source| {
            if source.raw_os_error() == Some(Errno::NOSPC.raw_os_error()) {
                no_space(source)
            } else {
                self.io(format!("extending to {len} bytes"), source)
            }
        })
    }

    /// Reads every slot's header, calling `found` with the local index and
    /// header of each that holds a block. Torn headers are counted, not
    /// errors: a crash in the middle of a write leaves them.
    fn scan(
        &self,
        layout: Layout,
        mut found: impl FnMut(u32, Header),
        progress: &mut Progress,
    ) -> Result<(), DiskError> {
        let mut header = [0; HEADER_BYTES];
        let mut torn = 0u64;
        for local in 0..layout.slots {
            self.file
                .read_exact_at(&mut header, slot_offset(local, layout.slot_bytes))
                .map_err(|source| self.io(format!("reading slot {local}'s header in"), source))?;
            match Header::parse(&header, layout.block_size) {
                Parsed::Empty => {}
                Parsed::Corrupt => torn += 1,
                Parsed::Holds(header) => found(local, header),
            }
            progress.tick();
        }
        if torn > 0 {
            tracing::info!(
                path = %self.path.display(),
                torn,
                "disk tier: slots with torn or corrupt headers taken as empty"
            );
        }
        Ok(())
    }

    fn io(&self, what: String, source: io::Error) -> DiskError {
        DiskError::Io {
            what,
            path: self.path.clone(),
            source,
        }
    }
}

/// What a file's superblock records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    block_size: u32,
    slot_bytes: u64,
    /// Slots in this file.
    slots: u32,
}

impl Layout {
    /// The superblock, padded to its page.
    fn encode(&self) -> Vec<u8> {
        let mut superblock = Vec::with_capacity(SUPERBLOCK_BYTES as usize);
        superblock.extend_from_slice(SUPERBLOCK_MAGIC);
        superblock.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        superblock.extend_from_slice(&self.block_size.to_le_bytes());
        superblock.extend_from_slice(&self.slot_bytes.to_le_bytes());
        superblock.extend_from_slice(&self.slots.to_le_bytes());
        let checksum = blake3::hash(&superblock);
        superblock.extend_from_slice(checksum.as_bytes());
        superblock.resize(SUPERBLOCK_BYTES as usize, 0);
        superblock
    }

    /// The layout a superblock's first bytes record, or why they record
    /// none.
    fn decode(superblock: &[u8; SUPERBLOCK_FIELDS + 32]) -> Result<Layout, String> {
        let (fields, checksum) = superblock.split_at(SUPERBLOCK_FIELDS);
        let mut fields = Fields(fields);
        if fields.take::<16>() != *SUPERBLOCK_MAGIC {
            return Err("the file has no coopcache superblock".into());
        }
        if blake3::hash(&superblock[..SUPERBLOCK_FIELDS]).as_bytes()[..] != *checksum {
            return Err("its superblock is corrupt".into());
        }
        let version = u32::from_le_bytes(fields.take());
        if version != FORMAT_VERSION {
            return Err(format!(
                "its format is version {version}, not {FORMAT_VERSION}"
            ));
        }
        Ok(Layout {
            block_size: u32::from_le_bytes(fields.take()),
            slot_bytes: u64::from_le_bytes(fields.take()),
            slots: u32::from_le_bytes(fields.take()),
        })
    }
}

/// A slot's header: which block its data is, how long, and its hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Header {
    block: BlockId,
    len: u32,
    hash: [u8; 32],
}

/// What a slot's header bytes say.
enum Parsed {
    /// All zeros: never written since the file was made.
    Empty,
    /// Torn or corrupt: the slot's contents are unknown.
    Corrupt,
    Holds(Header),
}

impl Header {
    fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(HEADER_MAGIC);
        out.extend_from_slice(&self.block.file.to_le_bytes());
        out.extend_from_slice(&self.block.index.to_le_bytes());
        out.extend_from_slice(&self.block.route.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.hash);
        let checksum = blake3::hash(&out[start..]);
        out.extend_from_slice(&checksum.as_bytes()[..HEADER_CHECKSUM]);
    }

    /// Parses a header (`HEADER_BYTES` long) of a slot for blocks of at
    /// most `block_size` bytes.
    fn parse(bytes: &[u8], block_size: u32) -> Parsed {
        if bytes.iter().all(|&b| b == 0) {
            return Parsed::Empty;
        }
        let (fields, checksum) = bytes.split_at(HEADER_FIELDS);
        if blake3::hash(fields).as_bytes()[..HEADER_CHECKSUM] != *checksum {
            return Parsed::Corrupt;
        }
        let mut fields = Fields(fields);
        if fields.take::<6>() != *HEADER_MAGIC {
            return Parsed::Corrupt;
        }
        let block = BlockId {
            file: u64::from_le_bytes(fields.take()),
            index: u32::from_le_bytes(fields.take()),
            route: u32::from_le_bytes(fields.take()),
        };
        let len = u32::from_le_bytes(fields.take());
        let hash = fields.take();
        // A checksummed length over the block size is another layout's or
        // a bug's: never read past the slot.
        if len > block_size {
            return Parsed::Corrupt;
        }
        Parsed::Holds(Header { block, len, hash })
    }
}

/// Fixed-size fields taken in order from bytes whose length the caller
/// knows (the header or superblock buffers, never a length from a file).
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let (head, rest) = self.0.split_at(N);
        self.0 = rest;
        let mut field = [0; N];
        field.copy_from_slice(head);
        field
    }
}

/// Logs how far the scan at open got, every few seconds.
struct Progress {
    total: u64,
    done: u64,
    last: Instant,
}

impl Progress {
    fn new(total: u64) -> Progress {
        Progress {
            total,
            done: 0,
            last: crate::clock::now(),
        }
    }

    fn tick(&mut self) {
        self.done += 1;
        let now = crate::clock::now();
        if now.duration_since(self.last) >= PROGRESS_EVERY {
            self.last = now;
            tracing::info!(
                done = self.done,
                total = self.total,
                "disk tier: scanning slot headers"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK_SIZE: u32 = 1000;
    /// Header and 1000 bytes round up to one page.
    const SLOT_BYTES: u64 = 4096;

    fn block(index: u32) -> BlockId {
        BlockId::new(0x1234_5678_9abc_def0, index)
    }

    fn data(index: u32, len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u32 ^ index.wrapping_mul(31)) as u8)
            .collect()
    }

    fn hash(data: &[u8]) -> [u8; 32] {
        *blake3::hash(data).as_bytes()
    }

    /// The size for `slots` slots in each of `dirs` directories.
    fn size_for(dirs: u64, slots: u64) -> u64 {
        dirs * (SUPERBLOCK_BYTES + slots * SLOT_BYTES)
    }

    fn open(dirs: &[PathBuf], size: u64) -> (DiskStore, Vec<Recovered>) {
        DiskStore::open(dirs, size, BLOCK_SIZE).expect("open")
    }

    /// Writes block `index` (of `len` bytes) into `slot`, returning what a
    /// reopen should recover.
    fn put(store: &DiskStore, slot: u32, index: u32, len: usize) -> Recovered {
        let bytes = data(index, len);
        store
            .write(slot, block(index), &hash(&bytes), &bytes)
            .expect("write");
        Recovered {
            slot,
            block: block(index),
            hash: hash(&bytes),
            len: len as u32,
        }
    }

    fn flip_byte(path: &Path, at: u64) {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .expect("open");
        let mut byte = [0];
        file.read_exact_at(&mut byte, at).expect("read");
        file.write_all_at(&[byte[0] ^ 0x40], at).expect("write");
    }

    #[test]
    fn is_send_and_sync() {
        fn shared<T: Send + Sync>() {}
        shared::<DiskStore>();
    }

    #[test]
    fn write_then_read_round_trips() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, found) = open(&[dir.path().into()], size_for(1, 4));
        assert!(found.is_empty());
        assert_eq!(store.slots(), 4);
        assert_eq!(store.slot_bytes(), SLOT_BYTES);
        for (slot, len) in [(0, 1000), (2, 17), (3, 0)] {
            put(&store, slot, slot + 10, len);
            let (read, stored_hash) = store
                .read(slot, block(slot + 10))
                .expect("read")
                .expect("the block");
            assert_eq!(read, data(slot + 10, len));
            assert_eq!(stored_hash, hash(&read));
        }
        // Overwritten by a shorter block: only the new block's bytes.
        put(&store, 0, 20, 5);
        let (read, _) = store.read(0, block(20)).expect("read").expect("the block");
        assert_eq!(read, data(20, 5));
    }

    #[test]
    fn read_of_another_block_or_an_empty_slot_is_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _) = open(&[dir.path().into()], size_for(1, 2));
        put(&store, 0, 1, 100);
        assert_eq!(store.read(0, block(2)).expect("read"), None);
        let same_index_other_route = BlockId {
            route: block(1).route ^ 1,
            ..block(1)
        };
        assert_eq!(store.read(0, same_index_other_route).expect("read"), None);
        assert_eq!(store.read(1, block(1)).expect("read"), None);
    }

    #[test]
    fn reopen_recovers_what_was_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dirs = [dir.path().to_path_buf()];
        let written = {
            let (store, _) = open(&dirs, size_for(1, 5));
            let mut written = vec![
                put(&store, 4, 7, 1000),
                put(&store, 1, 3, 1),
                put(&store, 2, 9, 0),
            ];
            written.sort_by_key(|r| r.slot);
            written
        };
        let (store, found) = open(&dirs, size_for(1, 5));
        assert_eq!(found, written);
        let (read, _) = store.read(4, block(7)).expect("read").expect("the block");
        assert_eq!(read, data(7, 1000));
    }

    #[test]
    fn a_store_opened_again_while_running_is_never_made_anew() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mount = dir.path().join("mnt");
        let dirs = [mount.clone()];
        let size = size_for(1, 4);
        // Nothing there (a mount point left empty): not made.
        let err = DiskStore::reopen(&dirs, size, BLOCK_SIZE).unwrap_err();
        assert!(matches!(err, DiskError::NotTheStore { .. }), "{err}");
        assert!(err.to_string().contains("it is gone"), "{err}");
        assert!(!mount.exists(), "the directory was made");
        // The store made at start, with a block: opened again, block and all.
        let want = {
            let (store, _) = open(&dirs, size);
            put(&store, 2, 5, 100)
        };
        let (_, found) = DiskStore::reopen(&dirs, size, BLOCK_SIZE).expect("reopen");
        assert_eq!(found, vec![want]);
        // Another layout: not the store, and left as it is.
        let err = DiskStore::reopen(&dirs, size, 2 * BLOCK_SIZE).unwrap_err();
        assert!(matches!(err, DiskError::NotTheStore { .. }), "{err}");
        let (_, found) = DiskStore::reopen(&dirs, size, BLOCK_SIZE).expect("reopen");
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn reopen_with_another_block_size_starts_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dirs = [dir.path().to_path_buf()];
        let size = size_for(1, 4);
        {
            let (store, _) = open(&dirs, size);
            put(&store, 0, 1, 1000);
        }
        let (store, found) = DiskStore::open(&dirs, size, 2 * BLOCK_SIZE).expect("open");
        assert!(found.is_empty());
        assert_eq!(store.read(0, block(1)).expect("read"), None);
        drop(store);
        // Discarded for good: back at the old block size, still empty.
        let (store, found) = open(&dirs, size);
        assert!(found.is_empty());
        assert_eq!(store.read(0, block(1)).expect("read"), None);
    }

    #[test]
    fn reopen_over_a_corrupt_superblock_starts_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dirs = [dir.path().to_path_buf()];
        {
            let (store, _) = open(&dirs, size_for(1, 2));
            put(&store, 0, 1, 10);
        }
        flip_byte(&dir.path().join(FILE_NAME), 20);
        let (_, found) = open(&dirs, size_for(1, 2));
        assert!(found.is_empty());
    }

    #[test]
    fn flipped_header_byte_is_not_recovered_nor_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dirs = [dir.path().to_path_buf()];
        let path = dir.path().join(FILE_NAME);
        let size = size_for(1, 2);
        let slot = 1;
        let written = {
            let (store, _) = open(&dirs, size);
            put(&store, slot, 5, 300)
        };
        for at in 0..HEADER_BYTES as u64 {
            let offset = slot_offset(slot, SLOT_BYTES) + at;
            flip_byte(&path, offset);
            let (store, found) = open(&dirs, size);
            assert!(found.is_empty(), "byte {at} flipped: {found:?}");
            assert_eq!(store.read(slot, block(5)).expect("read"), None, "byte {at}");
            drop(store);
            flip_byte(&path, offset);
            assert_eq!(open(&dirs, size).1, [written], "byte {at} restored");
        }
    }

    #[test]
    fn flipped_data_byte_is_read_but_fails_the_callers_hash() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dirs = [dir.path().to_path_buf()];
        {
            let (store, _) = open(&dirs, size_for(1, 1));
            put(&store, 0, 5, 300);
        }
        flip_byte(
            &dir.path().join(FILE_NAME),
            slot_offset(0, SLOT_BYTES) + HEADER_BYTES as u64 + 299,
        );
        let (store, found) = open(&dirs, size_for(1, 1));
        assert_eq!(found.len(), 1);
        let (read, stored_hash) = store
            .read(0, block(5))
            .expect("read")
            .expect("the header is whole");
        assert_eq!(read.len(), 300);
        assert_ne!(hash(&read), stored_hash);
    }

    #[test]
    fn slots_are_striped_over_two_dirs() {
        let (a, b) = (
            tempfile::tempdir().expect("tempdir"),
            tempfile::tempdir().expect("tempdir"),
        );
        let dirs = [a.path().to_path_buf(), b.path().to_path_buf()];
        // Each dir gets half, room for 3 slots: a spare page is not a slot.
        let size = size_for(2, 3) + 2 * 4095;
        let written = {
            let (store, _) = open(&dirs, size);
            assert_eq!(store.slots(), 6);
            (0..6)
                .map(|slot| put(&store, slot, 100 + slot, 50))
                .collect::<Vec<_>>()
        };
        for (i, dir) in dirs.iter().enumerate() {
            let file = std::fs::read(dir.join(FILE_NAME)).expect("read the file");
            assert_eq!(file.len() as u64, slot_offset(3, SLOT_BYTES));
            for local in 0..3u32 {
                let start = slot_offset(local, SLOT_BYTES) as usize;
                let Parsed::Holds(header) =
                    Header::parse(&file[start..start + HEADER_BYTES], BLOCK_SIZE)
                else {
                    panic!("dir {i}, local slot {local}: no block");
                };
                assert_eq!(header.block, block(100 + local * 2 + i as u32));
            }
        }
        let (_, found) = open(&dirs, size);
        assert_eq!(found, written);
    }

    #[test]
    fn bad_slots_and_long_data_are_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _) = open(&[dir.path().into()], size_for(1, 2));
        let long = vec![0; BLOCK_SIZE as usize + 1];
        assert!(matches!(
            store.write(2, block(1), &hash(&[]), &[]),
            Err(DiskError::SlotOutOfRange { slot: 2, slots: 2 })
        ));
        assert!(matches!(
            store.read(u32::MAX, block(1)),
            Err(DiskError::SlotOutOfRange { .. })
        ));
        assert!(matches!(
            store.write(0, block(1), &hash(&long), &long),
            Err(DiskError::TooLong {
                len: 1001,
                block_size: BLOCK_SIZE
            })
        ));
    }

    #[test]
    fn size_too_small_for_one_slot_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = DiskStore::open(&[dir.path().into()], size_for(1, 1) - 1, BLOCK_SIZE)
            .expect_err("too small");
        assert!(
            matches!(err, DiskError::TooSmall { needed: 8192, .. }),
            "{err:?}"
        );
        let message = err.to_string();
        assert!(message.contains("too small for one block"), "{message}");
        assert!(message.contains("--disk-size"), "{message}");
    }

    #[test]
    fn a_dir_open_twice_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dirs = [dir.path().to_path_buf()];
        let (store, _) = open(&dirs, size_for(1, 1));
        let err = DiskStore::open(&dirs, size_for(1, 1), BLOCK_SIZE).expect_err("locked");
        assert!(matches!(err, DiskError::InUse { .. }), "{err:?}");
        let twice = [dir.path().to_path_buf(), dir.path().to_path_buf()];
        drop(store);
        let err = DiskStore::open(&twice, size_for(2, 1), BLOCK_SIZE).expect_err("twice");
        assert!(matches!(err, DiskError::InUse { .. }), "{err:?}");
    }

    #[test]
    fn a_missing_dir_is_created_and_one_that_cannot_be_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("a").join("b");
        let (store, _) =
            DiskStore::open(std::slice::from_ref(&missing), size_for(1, 1), BLOCK_SIZE)
                .expect("a missing directory is created");
        assert_eq!(store.slots(), 1);
        // Under a regular file, no directory can be made.
        let file = dir.path().join("file");
        std::fs::write(&file, b"x").expect("write");
        let impossible = file.join("nope");
        let err = DiskStore::open(
            std::slice::from_ref(&impossible),
            size_for(1, 1),
            BLOCK_SIZE,
        )
        .expect_err("a directory under a file");
        assert!(
            err.to_string().contains(&*impossible.to_string_lossy()),
            "{err}"
        );
    }
}
