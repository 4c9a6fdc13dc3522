//! libCacheSim's `lcs` format (`traceReader/customizedReader/lcs.h`): an
//! 8 KiB header, then little-endian packed records whose layout the
//! header's version picks:
//!
//! | version | bytes | fields |
//! | --- | --- | --- |
//! | 1 | 24 | `u32 time, u64 id, u32 size, i64 next` (= oracleGeneral) |
//! | 2 | 28 | `u32 time, u64 id, u32 size, u32 op:8 tenant:24, i64 next` |
//! | 3 | 36 | `u32 time, u64 id, i64 size, u32 op:8 tenant:24, u32 ttl, i64 next` |
//! | 4-8 | 40-100 | version 3, then 1, 2, 4, 8 or 16 `i32` features |
//!
//! The header is `u64 start magic, u64 version`, 8000 bytes of trace
//! statistics (`n_req` at byte 24, `n_obj` at 32), 168 unused bytes and
//! `u64 end magic`; both magics are `0x123456789abcdef0`.

use super::binary::{VarRecords, fill, le_u32, le_u64};
use super::{Op, Request, TraceError};
use std::io::BufRead;
use std::path::PathBuf;

/// Bytes of the header.
pub const HEADER_LEN: usize = 8192;
/// The header's first and last eight bytes.
pub const MAGIC: u64 = 0x1234_5678_9abc_def0;
/// Byte offsets in the header.
const VERSION_AT: usize = 8;
const N_REQ_AT: usize = 24;
const N_OBJ_AT: usize = 32;
const END_MAGIC_AT: usize = HEADER_LEN - 8;

const HEADER_FORM: &str = "libCacheSim's lcs header: 8192 bytes, starting and ending with the magic 0x123456789abcdef0, version 1 to 8 at byte 8";
const RECORD_FORM: &str =
    "lcs records of the header's version (24 bytes for v1, 28 for v2, 36 for v3, 40-100 for v4-v8)";

/// The record size of lcs `version`, `None` for an unknown one.
pub fn record_len(version: u64) -> Option<usize> {
    const FEATURES: [usize; 5] = [1, 2, 4, 8, 16];
    match version {
        1 => Some(24),
        2 => Some(28),
        3 => Some(36),
        4..=8 => Some(36 + 4 * FEATURES[version as usize - 4]),
        _ => None,
    }
}

/// libCacheSim's request operations (`req_op_e` in `enum.h`) as reads,
/// writes and deletes; `None` for a value outside the enum (and its
/// `OP_INVALID`).
pub fn op_of(code: u8) -> Option<Op> {
    match code {
        // nop, get, gets, read: libCacheSim's simulator treats a nop as a
        // request like any other.
        0 | 1 | 2 | 12 => Some(Op::Read),
        // set, add, cas, replace, append, prepend, incr, decr, write, update
        3..=8 | 10 | 11 | 13 | 14 => Some(Op::Write),
        9 => Some(Op::Delete),
        _ => None,
    }
}

/// The code libCacheSim gives `op` (get, set, delete).
pub fn op_code(op: Op) -> u8 {
    match op {
        Op::Read => 1,
        Op::Write => 3,
        Op::Delete => 9,
    }
}

/// Checks the header; the version.
fn parse_header(head: &[u8], path: &std::path::Path) -> Result<u64, TraceError> {
    let bad = |problem: String| TraceError::Header {
        path: path.to_path_buf(),
        problem,
        expected: HEADER_FORM,
    };
    if head.len() < HEADER_LEN {
        return Err(bad(format!(
            "the file ends in the lcs header ({} of {HEADER_LEN} bytes)",
            head.len()
        )));
    }
    let magic = le_u64(head, 0);
    if magic != MAGIC {
        return Err(bad(format!("start magic is {magic:#x}")));
    }
    let end = le_u64(head, END_MAGIC_AT);
    if end != MAGIC {
        return Err(bad(format!("end magic is {end:#x}")));
    }
    let version = le_u64(head, VERSION_AT);
    if record_len(version).is_none() {
        return Err(bad(format!("version {version} is not one of 1 to 8")));
    }
    let (n_req, n_obj) = (le_u64(head, N_REQ_AT) as i64, le_u64(head, N_OBJ_AT) as i64);
    if n_req < 0 || n_obj < 0 {
        return Err(bad(format!(
            "the header counts {n_req} requests and {n_obj} objects"
        )));
    }
    Ok(version)
}

/// One record of `version` (of [`record_len`] bytes) as a request.
fn parse_record(b: &[u8], version: u64) -> Result<Request, String> {
    let mut r = Request {
        time: u64::from(le_u32(b, 0)),
        id: le_u64(b, 4),
        size: le_u32(b, 12),
        ..Request::default()
    };
    if version == 1 {
        return Ok(r);
    }
    let op_tenant_at = if version == 2 {
        16
    } else {
        let size = le_u64(b, 12) as i64;
        r.size = u32::try_from(size)
            .map_err(|_| format!("object size {size} is not between 0 and 4 GiB"))?;
        20
    };
    // GCC packs `op:8, tenant:24` from the low bits of the word.
    let word = le_u32(b, op_tenant_at);
    let code = (word & 0xff) as u8;
    r.op = op_of(code).ok_or_else(|| format!("op {code} is not a libCacheSim operation"))?;
    r.client = word >> 8;
    Ok(r)
}

/// Reads an lcs trace of any version.
pub(super) fn lcs(
    mut input: Box<dyn BufRead + Send>,
    path: PathBuf,
) -> Box<dyn Iterator<Item = Result<Request, TraceError>> + Send> {
    let mut head = vec![0u8; HEADER_LEN];
    let header = fill(&mut input, &mut head)
        .map_err(|source| TraceError::Io {
            path: path.clone(),
            source,
        })
        .and_then(|got| parse_header(&head[..got], &path));
    let version = match header {
        Ok(version) => version,
        Err(e) => return Box::new(std::iter::once(Err(e))),
    };
    let len = record_len(version).expect("checked by parse_header");
    let mut records = VarRecords::new(input, path, len, RECORD_FORM);
    Box::new(std::iter::from_fn(move || {
        let parsed = match records.next_record()? {
            Ok(b) => parse_record(b, version),
            Err(e) => return Some(Err(e)),
        };
        Some(parsed.map_err(|problem| {
            records.stop();
            TraceError::OutOfRange {
                path: records.path().to_path_buf(),
                record: records.record(),
                problem,
            }
        }))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_sizes_follow_libcachesim() {
        let sizes: Vec<_> = (0..=9).map(record_len).collect();
        assert_eq!(
            sizes,
            [
                None,
                Some(24),
                Some(28),
                Some(36),
                Some(40),
                Some(44),
                Some(52),
                Some(68),
                Some(100),
                None
            ]
        );
    }

    #[test]
    fn ops_round_trip_through_their_codes() {
        for op in [Op::Read, Op::Write, Op::Delete] {
            assert_eq!(op_of(op_code(op)), Some(op));
        }
        assert_eq!(op_of(255), None);
        assert_eq!(op_of(15), None);
    }
}
