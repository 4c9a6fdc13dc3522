//! VMware's vscsi block traces, as libCacheSim reads them
//! (`traceReader/customizedReader/vscsi.h`): little-endian C structs with
//! natural alignment, no header, in one of two versions:
//!
//! | version | bytes | fields (offset) |
//! | --- | --- | --- |
//! | 1 | 32 | `u32 sn (0), u32 len (4), u32 nSG (8), u16 cmd (12), u16 ver (14), u64 lbn (16), u64 ts (24)` |
//! | 2 | 40 | `u16 cmd (0), u16 ver (2), u32 sn (4), u32 len (8), u32 nSG (12), u64 lbn (16), u64 ts (24), u64 rt (32)` |
//!
//! The version is `ver >> 8` of the first two records, tried as version 2
//! first, as libCacheSim does. A request is object `lbn` of `len` bytes
//! at `ts / 1_000_000` (microseconds to seconds). The SCSI command makes
//! the op as in libCacheSim's current reader (its Python wheel 0.3.5):
//! READ(6/10/12/16) reads, WRITE(10/12/16) writes; WRITE(6) is a write
//! here, where libCacheSim marks it invalid; any other command (libCacheSim:
//! invalid, replayed as a plain request) is a read.

use super::binary::{VarRecords, fill, le_u16, le_u32, le_u64};
use super::{Op, Request, TraceError};
use std::io::{BufRead, Read};
use std::path::PathBuf;

/// Records of each version libCacheSim looks at to tell the version.
const TESTED: usize = 2;

const HEADER_FORM: &str = "vscsi records: version 1 (32 bytes, `ver >> 8` = 1 at byte 14) or version 2 (40 bytes, `ver >> 8` = 2 at byte 2)";
const V1_FORM: &str = "32-byte vscsi version 1 records";
const V2_FORM: &str = "40-byte vscsi version 2 records";

/// A vscsi version: its record size and where `ver` sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

impl Version {
    fn len(self) -> usize {
        match self {
            Version::V1 => 32,
            Version::V2 => 40,
        }
    }

    fn ver_at(self) -> usize {
        match self {
            Version::V1 => 14,
            Version::V2 => 2,
        }
    }

    fn number(self) -> u16 {
        match self {
            Version::V1 => 1,
            Version::V2 => 2,
        }
    }

    /// Whether the whole records at the start of `head` (up to
    /// [`TESTED`], at least one) all say this version.
    fn fits(self, head: &[u8]) -> bool {
        let n = (head.len() / self.len()).min(TESTED);
        n > 0 && (0..n).all(|i| le_u16(head, i * self.len() + self.ver_at()) >> 8 == self.number())
    }

    fn parse(self, b: &[u8]) -> Request {
        let (cmd_at, len_at, lbn_at, ts_at) = match self {
            Version::V1 => (12, 4, 16, 24),
            Version::V2 => (0, 8, 16, 24),
        };
        Request {
            id: le_u64(b, lbn_at),
            time: le_u64(b, ts_at) / 1_000_000,
            size: le_u32(b, len_at),
            op: op_of(le_u16(b, cmd_at)),
            ..Request::default()
        }
    }
}

/// The op of a SCSI command: WRITE(6), WRITE(10), WRITE(12), WRITE(16)
/// write; everything else is a reference, as a read.
fn op_of(cmd: u16) -> Op {
    match cmd {
        0x0a | 0x2a | 0xaa | 0x8a => Op::Write,
        _ => Op::Read,
    }
}

/// Reads a vscsi trace of either version.
pub(super) fn vscsi(
    mut input: Box<dyn BufRead + Send>,
    path: PathBuf,
) -> Box<dyn Iterator<Item = Result<Request, TraceError>> + Send> {
    let mut head = vec![0u8; Version::V2.len() * TESTED];
    let got = match fill(&mut input, &mut head) {
        Ok(got) => got,
        Err(source) => return Box::new(std::iter::once(Err(TraceError::Io { path, source }))),
    };
    head.truncate(got);
    if got == 0 {
        return Box::new(std::iter::empty());
    }
    let version = [Version::V2, Version::V1]
        .into_iter()
        .find(|v| v.fits(&head));
    let Some(version) = version else {
        return Box::new(std::iter::once(Err(TraceError::Header {
            path,
            problem: format!("the first {got} bytes are not vscsi records of either version"),
            expected: HEADER_FORM,
        })));
    };
    // The bytes read to tell the version are the first records.
    let whole: Box<dyn BufRead + Send> = Box::new(std::io::Cursor::new(head).chain(input));
    let form = match version {
        Version::V1 => V1_FORM,
        Version::V2 => V2_FORM,
    };
    let mut records = VarRecords::new(whole, path, version.len(), form);
    Box::new(std::iter::from_fn(move || {
        Some(records.next_record()?.map(|b| version.parse(b)))
    }))
}
