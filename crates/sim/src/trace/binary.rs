//! Fixed-size binary records: big-endian `u32` ids and libCacheSim's
//! `oracleGeneral`.

use super::{Request, TraceError};
use std::io::{BufRead, ErrorKind, Read};
use std::path::PathBuf;

/// Reads fixed-size records of `N` bytes, reporting a partial last record.
struct Records<const N: usize> {
    input: Box<dyn BufRead + Send>,
    path: PathBuf,
    record: u64,
    done: bool,
    expected: &'static str,
}

impl<const N: usize> Records<N> {
    fn new(input: Box<dyn BufRead + Send>, path: PathBuf, expected: &'static str) -> Self {
        Records {
            input,
            path,
            record: 0,
            done: false,
            expected,
        }
    }

    fn next_record(&mut self) -> Option<Result<[u8; N], TraceError>> {
        if self.done {
            return None;
        }
        let mut buf = [0u8; N];
        let mut got = 0;
        while got < N {
            match self.input.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(source) => {
                    self.done = true;
                    return Some(Err(TraceError::Io {
                        path: self.path.clone(),
                        source,
                    }));
                }
            }
        }
        self.record += 1;
        match got {
            0 => {
                self.done = true;
                None
            }
            n if n == N => Some(Ok(buf)),
            got => {
                self.done = true;
                Some(Err(TraceError::Truncated {
                    path: self.path.clone(),
                    record: self.record,
                    got,
                    size: N,
                    expected: self.expected,
                }))
            }
        }
    }
}

/// Big-endian `u32` ids, no header.
pub(super) fn be32(
    input: Box<dyn BufRead + Send>,
    path: PathBuf,
) -> impl Iterator<Item = Result<Request, TraceError>> {
    let mut records = Records::<4>::new(input, path, "4-byte big-endian u32 block ids");
    std::iter::from_fn(move || {
        let time = records.record;
        records.next_record().map(|r| {
            r.map(|b| Request {
                id: u64::from(u32::from_be_bytes(b)),
                time,
                ..Request::default()
            })
        })
    })
}

/// libCacheSim `oracleGeneral`: little-endian `u32 time, u64 id, u32 size,
/// i64 next access time` (the last is ignored).
pub(super) fn oracle(
    input: Box<dyn BufRead + Send>,
    path: PathBuf,
) -> impl Iterator<Item = Result<Request, TraceError>> {
    let mut records = Records::<24>::new(
        input,
        path,
        "24-byte little-endian records: u32 time, u64 id, u32 size, i64 next access",
    );
    std::iter::from_fn(move || {
        records.next_record().map(|r| {
            r.map(|b| {
                let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
                let mut id = [0u8; 8];
                id.copy_from_slice(&b[4..12]);
                Request {
                    id: u64::from_le_bytes(id),
                    time: u64::from(u32_at(0)),
                    size: u32_at(12),
                    ..Request::default()
                }
            })
        })
    })
}
