//! Line-oriented text formats: LIRS (one id per line), libCacheSim's
//! plain text (`txt`) and ARC's `.lis`.

use super::blocks::{Run, excerpt, parse_u64};
use super::{Request, TraceError};
use std::io::BufRead;
use std::path::PathBuf;

/// Reads lines, keeping the line number for error messages.
pub(super) struct Lines {
    input: Box<dyn BufRead + Send>,
    buf: Vec<u8>,
    line: u64,
    path: PathBuf,
    failed: bool,
}

impl Lines {
    pub(super) fn new(input: Box<dyn BufRead + Send>, path: PathBuf) -> Self {
        Lines {
            input,
            buf: Vec::with_capacity(256),
            line: 0,
            path,
            failed: false,
        }
    }

    /// Advances to the next line; `Ok(false)` at the end. The line, without
    /// surrounding whitespace, is then [`Lines::current`].
    fn advance(&mut self) -> Result<bool, TraceError> {
        self.buf.clear();
        match self.input.read_until(b'\n', &mut self.buf) {
            Ok(0) => Ok(false),
            Ok(_) => {
                self.line += 1;
                Ok(true)
            }
            Err(source) => Err(TraceError::Io {
                path: self.path.clone(),
                source,
            }),
        }
    }

    pub(super) fn current(&self) -> &[u8] {
        self.buf.trim_ascii()
    }

    pub(super) fn error(&self, problem: String, expected: &'static str) -> TraceError {
        TraceError::Line {
            path: self.path.clone(),
            line: self.line,
            problem,
            expected,
        }
    }

    /// Next non-blank line passed through `parse`; stops for good after the
    /// first error.
    pub(super) fn next_with<T>(
        &mut self,
        mut parse: impl FnMut(&Self) -> Result<Option<T>, TraceError>,
    ) -> Option<Result<T, TraceError>> {
        if self.failed {
            return None;
        }
        loop {
            match self.advance() {
                Ok(false) => return None,
                Ok(true) => {}
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
            if self.current().is_empty() {
                continue;
            }
            match parse(self) {
                Ok(Some(item)) => return Some(Ok(item)),
                Ok(None) => continue,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

const LIRS_FORM: &str = "one unsigned integer block id per line, or `*`";

/// The LIRS format: one id per line, `*` lines skipped.
pub(super) fn lirs(
    input: Box<dyn BufRead + Send>,
    path: PathBuf,
) -> impl Iterator<Item = Result<Request, TraceError>> {
    let mut lines = Lines::new(input, path);
    let mut seq = 0u64;
    std::iter::from_fn(move || {
        lines
            .next_with(|l| {
                let text = l.current();
                if text == b"*" {
                    return Ok(None);
                }
                let id = parse_u64(text).ok_or_else(|| {
                    l.error(format!("{} is not a block id", excerpt(text)), LIRS_FORM)
                })?;
                Ok(Some(id))
            })
            .map(|r| {
                r.map(|id| {
                    seq += 1;
                    Request {
                        id,
                        time: seq - 1,
                        ..Request::default()
                    }
                })
            })
    })
}

const TXT_FORM: &str = "one unsigned integer object id per line (decimal, or hexadecimal after 0x); for text ids use --format csv --csv id=1,ids=hash";

/// libCacheSim's plain text format (`txt.c`): one numeric id per line,
/// blank lines skipped. Unlike LIRS, `*` is not a marker; and ids may be
/// hexadecimal (`0x1f`), as libCacheSim's `strtoull` reads them.
pub(super) fn txt(
    input: Box<dyn BufRead + Send>,
    path: PathBuf,
) -> impl Iterator<Item = Result<Request, TraceError>> {
    let mut lines = Lines::new(input, path);
    let mut seq = 0u64;
    std::iter::from_fn(move || {
        let id = lines.next_with(|l| {
            let text = l.current();
            let hex = text
                .strip_prefix(b"0x")
                .or_else(|| text.strip_prefix(b"0X"));
            let id = match hex {
                Some(digits) => std::str::from_utf8(digits)
                    .ok()
                    .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_hexdigit()))
                    .and_then(|d| u64::from_str_radix(d, 16).ok()),
                None => parse_u64(text),
            };
            id.map(Some)
                .ok_or_else(|| l.error(format!("{} is not an object id", excerpt(text)), TXT_FORM))
        })?;
        seq += 1;
        Some(id.map(|id| Request {
            id,
            time: seq - 1,
            ..Request::default()
        }))
    })
}

const LIS_FORM: &str =
    "`start count` with unsigned integers, count at least 1, extra columns ignored";

/// ARC's `.lis` format: each line's run of blocks, one request per block.
pub(super) fn lis(
    input: Box<dyn BufRead + Send>,
    path: PathBuf,
) -> impl Iterator<Item = Result<Request, TraceError>> {
    let mut lines = Lines::new(input, path);
    let mut run = Run::default();
    let mut seq = 0u64;
    std::iter::from_fn(move || {
        loop {
            if let Some(mut request) = run.next() {
                request.time = seq;
                seq += 1;
                return Some(Ok(request));
            }
            let next = lines.next_with(|l| parse_lis_line(l).map(Some))?;
            match next {
                Ok(r) => run = r,
                Err(e) => return Some(Err(e)),
            }
        }
    })
}

fn parse_lis_line(l: &Lines) -> Result<Run, TraceError> {
    let text = l.current();
    let mut fields = text
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty());
    let bad = |what: &str| l.error(format!("{what} in {}", excerpt(text)), LIS_FORM);
    let start = fields
        .next()
        .and_then(parse_u64)
        .ok_or_else(|| bad("no start block"))?;
    let count = fields
        .next()
        .and_then(parse_u64)
        .ok_or_else(|| bad("no block count"))?;
    if count == 0 {
        return Err(bad("a count of 0"));
    }
    let end = start
        .checked_add(count)
        .ok_or_else(|| bad("a run past the largest block id"))?;
    Ok(Run {
        template: Request::default(),
        base: 0,
        next: start,
        end,
    })
}
