//! Fixed-size binary records: big-endian `u32` ids and libCacheSim's
//! `oracleGeneral`.

use super::{Request, TraceError};
use std::io::{self, BufRead, ErrorKind, Read};
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
        let got = match fill(&mut self.input, &mut buf) {
            Ok(got) => got,
            Err(source) => {
                self.done = true;
                return Some(Err(TraceError::Io {
                    path: self.path.clone(),
                    source,
                }));
            }
        };
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

/// Reads into `buf` until it is full or the input ends; the bytes read
/// (short only at the end of the input).
pub(super) fn fill(input: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
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

/// Records of a size known only once a header is read (lcs versions,
/// vscsi versions); like [`Records`] otherwise.
pub(super) struct VarRecords {
    input: Box<dyn BufRead + Send>,
    path: PathBuf,
    buf: Vec<u8>,
    record: u64,
    done: bool,
    expected: &'static str,
}

impl VarRecords {
    /// Records of `size` bytes from `input`.
    pub(super) fn new(
        input: Box<dyn BufRead + Send>,
        path: PathBuf,
        size: usize,
        expected: &'static str,
    ) -> Self {
        VarRecords {
            input,
            path,
            buf: vec![0; size],
            record: 0,
            done: false,
            expected,
        }
    }

    /// 1-based number of the record last returned.
    pub(super) fn record(&self) -> u64 {
        self.record
    }

    /// The file, for errors about a record's values.
    pub(super) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The next whole record, `None` at the end or after an error.
    pub(super) fn next_record(&mut self) -> Option<Result<&[u8], TraceError>> {
        if self.done {
            return None;
        }
        let got = match fill(&mut self.input, &mut self.buf) {
            Ok(got) => got,
            Err(source) => {
                self.done = true;
                let path = self.path.clone();
                return Some(Err(TraceError::Io { path, source }));
            }
        };
        self.record += 1;
        if got == self.buf.len() {
            return Some(Ok(&self.buf));
        }
        self.done = true;
        (got > 0).then(|| {
            Err(TraceError::Truncated {
                path: self.path.clone(),
                record: self.record,
                got,
                size: self.buf.len(),
                expected: self.expected,
            })
        })
    }

    /// Stops the stream (after a record whose values are bad).
    pub(super) fn stop(&mut self) {
        self.done = true;
    }
}

/// Little-endian integers at byte offsets of a record (whose length the
/// caller has checked).
pub(super) fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// See [`le_u16`].
pub(super) fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// See [`le_u16`].
pub(super) fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}
