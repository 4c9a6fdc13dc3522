//! The disk tier's block store: blocks a node keeps on its own disks,
//! behind its memory, in fixed-size slots of preallocated files.
//!
//! The core owns the tier's index and policy (which block goes in which
//! slot, when a slot is overwritten); [`DiskStore`] only carries bytes to
//! and from slots, with blocking std file I/O (the daemon calls it from
//! `tokio::task::spawn_blocking`). It never answers a read with bytes of
//! another block than the one asked for; bytes of the right block that a
//! crash or a racing write left half-written are caught by the caller,
//! which re-hashes the data (BLAKE3) against the hash the store returns
//! from the slot's header.
//!
//! # Format
//!
//! Each directory holds one file, `coopcache-blocks`; slot `s` of `n`
//! directories lives in directory `s % n` at local index `s / n`, so
//! consecutive slots (and the blocks the core puts in them) spread over
//! every disk. Each directory takes `size / n` bytes, superblock included
//! (the tier never uses more than `--disk-size`), and every file has the
//! same number of slots, so each slot number names a slot that exists.
//!
//! - **Superblock** (the file's first 4096 bytes): magic
//!   `COOPCACHE-DISK\0\x01`, format version (u32), block size (u32), slot
//!   size (u64), slots in this file (u32), all little-endian, then the
//!   BLAKE3 hash of those fields. A file whose superblock is missing,
//!   corrupt or records another layout is emptied and rewritten with a
//!   warning, never an error: its blocks are only a cache, and a slot
//!   found at another layout's offset would be meaningless.
//! - **Slots** (from byte 4096, each the header plus one block, rounded up
//!   to 4096 bytes so a slot never shares a page with its neighbour): a
//!   74-byte header (magic `CCBLK\x01`; the block's file u64, index u32
//!   and route u32; the data's length u32 and BLAKE3 hash; then the first
//!   16 bytes of the BLAKE3 hash of those fields), the data right after.
//!
//! Each file is preallocated to its full length when opened, so a full
//! disk is found at startup, not in the middle of a write. A write is
//! one `pwrite` of header and data together, with no fsync: a crash may
//! lose blocks or tear a write, and either the header's checksum (a torn
//! header reads as an empty slot) or the caller's hash of the data (an
//! intact header over torn data) catches it, as it catches a read racing
//! a write to the same slot. Opening scans every slot's header and hands
//! the blocks it finds back to the core, so a restarted node still has
//! its disk tier. Each file is locked (`flock`) while open: two nodes on
//! one directory, or a directory listed twice, would overwrite each
//! other's slots.

mod store;

pub use store::{DiskError, DiskStore, FILE_NAME, Recovered};
