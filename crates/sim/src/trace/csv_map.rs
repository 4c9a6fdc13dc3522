//! Delimited text traces with a user-given column map.

use super::blocks::{MAX_CLIENT, excerpt, parse_u64};
use super::{Op, Request, TraceError};
use crate::error::OptionError;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::str::FromStr;

/// How to read a `csv` trace: which 1-based column holds each field, the
/// separator, whether the first line is a header, and how ids are written.
///
/// Written as `key=value` pairs separated by commas, e.g.
/// `id=2,time=1,size=3,op=4,client=5,header=yes,sep=comma,ids=hash`:
///
/// | key | value | default |
/// | --- | --- | --- |
/// | `id` | column of the object or block id | 1 |
/// | `time`, `size`, `op`, `client` | optional columns | absent |
/// | `header` | `yes` or `no`: skip the first line | `no` |
/// | `sep` | `comma`, `tab`, `space`, `semicolon` or one character | `comma` |
/// | `ids` | `int` (unsigned integers) or `hash` (any text, hashed to 64 bits) | `int` |
/// | `time_unit` | `s`, `ms`, `us` or `ns`: the unit of the time column | none |
///
/// Without `time_unit`, times are unsigned integers in the trace's unknown
/// unit, or decimal seconds, which become nanoseconds: enough to merge
/// traces by time, not to cut intervals of trace time. With it, times
/// (integers or decimals) are in that unit and become nanoseconds. Ops read `r`, `read`, `get` or `0` as reads,
/// `w`, `write`, `set`, `put` or `1` as writes and `d`, `del`, `delete` or
/// `remove` as deletes. Client labels of any form
/// are numbered in order of first appearance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvSpec {
    id: usize,
    time: Option<usize>,
    size: Option<usize>,
    op: Option<usize>,
    client: Option<usize>,
    header: bool,
    sep: u8,
    hash_ids: bool,
    /// Nanoseconds per unit of the time column, where `time_unit` says.
    time_unit: Option<u64>,
}

impl Default for CsvSpec {
    fn default() -> Self {
        CsvSpec {
            id: 0,
            time: None,
            size: None,
            op: None,
            client: None,
            header: false,
            sep: b',',
            hash_ids: false,
            time_unit: None,
        }
    }
}

const SPEC_FORM: &str = "comma-separated key=value pairs: id, time, size, op, client = 1-based column; \
     header = yes|no; sep = comma|tab|space|semicolon|<char>; ids = int|hash; time_unit = s|ms|us|ns";

impl CsvSpec {
    /// Whether a column holds each object's size.
    pub fn has_size(&self) -> bool {
        self.size.is_some()
    }

    /// Ticks of the time column per second (it holds nanoseconds once a
    /// `time_unit` is given), or why intervals of trace time cannot be cut.
    pub(crate) fn ticks_per_second(&self) -> Result<u64, String> {
        match (self.time, self.time_unit) {
            (None, _) => Err(
                "a number of requests: this csv trace has no timestamps (add time=N to --csv, with time_unit=s, ms, us or ns)".into(),
            ),
            (Some(_), None) => Err(
                "a number of requests: the csv time column's unit is unknown (add time_unit=s, ms, us or ns to --csv)".into(),
            ),
            (Some(_), Some(_)) => Ok(1_000_000_000),
        }
    }
}

impl FromStr for CsvSpec {
    type Err = OptionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut spec = CsvSpec::default();
        for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || OptionError {
                what: "csv column map entry",
                value: pair.to_string(),
                expected: SPEC_FORM.to_string(),
            };
            let (key, value) = pair.split_once('=').ok_or_else(bad)?;
            let column = || {
                value
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|&c| c >= 1)
                    .map(|c| c - 1)
                    .ok_or_else(bad)
            };
            match key.trim() {
                "id" => spec.id = column()?,
                "time" => spec.time = Some(column()?),
                "size" => spec.size = Some(column()?),
                "op" => spec.op = Some(column()?),
                "client" => spec.client = Some(column()?),
                "header" => {
                    spec.header = match value.trim() {
                        "yes" | "true" => true,
                        "no" | "false" => false,
                        _ => return Err(bad()),
                    }
                }
                "sep" => {
                    spec.sep = match value {
                        "comma" => b',',
                        "tab" => b'\t',
                        "space" => b' ',
                        "semicolon" => b';',
                        v if v.len() == 1 => v.as_bytes()[0],
                        _ => return Err(bad()),
                    }
                }
                "ids" => {
                    spec.hash_ids = match value.trim() {
                        "int" => false,
                        "hash" => true,
                        _ => return Err(bad()),
                    }
                }
                "time_unit" => {
                    spec.time_unit = Some(match value.trim() {
                        "s" => 1_000_000_000,
                        "ms" => 1_000_000,
                        "us" => 1_000,
                        "ns" => 1,
                        _ => return Err(bad()),
                    })
                }
                _ => return Err(bad()),
            }
        }
        Ok(spec)
    }
}

/// Per-file state while reading a `csv` trace.
struct CsvReader {
    records: csv::Reader<Box<dyn BufRead + Send>>,
    record: csv::ByteRecord,
    spec: CsvSpec,
    clients: HashMap<Vec<u8>, u32>,
    path: PathBuf,
    seq: u64,
    failed: bool,
}

impl CsvReader {
    fn error(&self, problem: String) -> TraceError {
        TraceError::Line {
            path: self.path.clone(),
            line: self.record.position().map_or(0, |p| p.line()),
            problem,
            expected: "the columns of --csv (see `coopcache sim --help`)",
        }
    }

    fn field(&self, column: usize, name: &str) -> Result<&[u8], TraceError> {
        self.record
            .get(column)
            .map(<[u8]>::trim_ascii)
            .ok_or_else(|| {
                self.error(format!(
                    "no column {} ({name}); the line has {}",
                    column + 1,
                    self.record.len()
                ))
            })
    }

    fn parse(&mut self) -> Result<Request, TraceError> {
        let id_text = self.field(self.spec.id, "id")?;
        let id = if self.spec.hash_ids {
            stable_hash(id_text)
        } else {
            parse_u64(id_text).ok_or_else(|| {
                self.error(format!(
                    "id {} is not an unsigned integer (use ids=hash for text ids)",
                    excerpt(id_text)
                ))
            })?
        };
        let mut request = Request {
            id,
            time: self.seq,
            ..Request::default()
        };
        if let Some(c) = self.spec.time {
            let text = self.field(c, "time")?;
            request.time = parse_time(text, self.spec.time_unit).ok_or_else(|| {
                self.error(format!(
                    "time {} is not a non-negative number",
                    excerpt(text)
                ))
            })?;
        }
        if let Some(c) = self.spec.size {
            let text = self.field(c, "size")?;
            request.size = parse_u64(text)
                .and_then(|s| u32::try_from(s).ok())
                .ok_or_else(|| {
                    self.error(format!(
                        "size {} is not an integer below 4 GiB",
                        excerpt(text)
                    ))
                })?;
        }
        if let Some(c) = self.spec.op {
            let text = self.field(c, "op")?;
            request.op = parse_op(text).ok_or_else(|| {
                self.error(format!(
                    "op {} is not a read (r, read, get, 0), a write (w, write, set, put, 1) or a delete (d, del, delete, remove)",
                    excerpt(text)
                ))
            })?;
        }
        if let Some(c) = self.spec.client {
            let label = self.field(c, "client")?.to_vec();
            let next = self.clients.len();
            if next as u64 > u64::from(MAX_CLIENT) && !self.clients.contains_key(&label) {
                return Err(self.error(format!("more than {MAX_CLIENT} distinct clients")));
            }
            request.client = *self.clients.entry(label).or_insert(next as u32);
        }
        Ok(request)
    }
}

impl Iterator for CsvReader {
    type Item = Result<Request, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = match self.records.read_byte_record(&mut self.record) {
            Ok(false) => return None,
            Ok(true) => self.parse(),
            Err(e) => Err(csv_error(&self.path, e)),
        };
        self.seq += 1;
        self.failed = item.is_err();
        Some(item)
    }
}

/// Reads a `csv` trace with the column map `spec`.
pub(super) fn reader(
    input: Box<dyn BufRead + Send>,
    path: PathBuf,
    spec: CsvSpec,
) -> impl Iterator<Item = Result<Request, TraceError>> {
    CsvReader {
        records: csv_reader(input, spec.sep, spec.header),
        record: csv::ByteRecord::new(),
        spec,
        clients: HashMap::new(),
        path,
        seq: 0,
        failed: false,
    }
}

/// A CSV reader that tolerates ragged lines (checked field by field).
pub(super) fn csv_reader(
    input: Box<dyn BufRead + Send>,
    sep: u8,
    header: bool,
) -> csv::Reader<Box<dyn BufRead + Send>> {
    csv::ReaderBuilder::new()
        .delimiter(sep)
        .has_headers(header)
        .flexible(true)
        .from_reader(input)
}

/// Converts the `csv` crate's error into ours, keeping the line number.
pub(super) fn csv_error(path: &std::path::Path, e: csv::Error) -> TraceError {
    let line = e.position().map_or(0, |p| p.line());
    match e.into_kind() {
        csv::ErrorKind::Io(source) => TraceError::Io {
            path: path.to_path_buf(),
            source,
        },
        other => TraceError::Line {
            path: path.to_path_buf(),
            line,
            problem: format!("{other:?}"),
            expected: "delimited text",
        },
    }
}

/// Reads `r`, `read`, `get`, `0` as reads, `w`, `write`, `set`, `put`,
/// `1` as writes and `d`, `del`, `delete`, `remove` as deletes, in any case.
pub(super) fn parse_op(text: &[u8]) -> Option<Op> {
    let lower = text.to_ascii_lowercase();
    match lower.as_slice() {
        b"r" | b"read" | b"get" | b"0" => Some(Op::Read),
        b"w" | b"write" | b"set" | b"put" | b"1" => Some(Op::Write),
        b"d" | b"del" | b"delete" | b"remove" => Some(Op::Delete),
        _ => None,
    }
}

/// A time in nanoseconds: an integer or decimal number of units of `unit`
/// nanoseconds. Without a unit, an integer as it is, or decimal seconds.
fn parse_time(text: &[u8], unit: Option<u64>) -> Option<u64> {
    let Some(unit) = unit else {
        return match text.contains(&b'.') {
            false => parse_u64(text),
            true => parse_time(text, Some(1_000_000_000)),
        };
    };
    // Whole units and billionths of a unit.
    let (whole, billionths) = match text.iter().position(|&b| b == b'.') {
        None => (parse_u64(text)?, 0),
        Some(dot) => {
            let units = parse_u64(&text[..dot])?;
            let frac = &text[dot + 1..];
            let digits = &frac[..frac.len().min(9)];
            let mut nanos = if digits.is_empty() {
                0
            } else {
                parse_u64(digits)?
            };
            if !frac[digits.len()..].iter().all(u8::is_ascii_digit) {
                return None;
            }
            nanos *= 10u64.pow(9 - digits.len() as u32);
            (units, nanos)
        }
    };
    whole
        .checked_mul(unit)?
        .checked_add(billionths * unit / 1_000_000_000)
}

/// FNV-1a, 64 bits: stable across runs and machines, unlike a seeded hash.
pub(super) fn stable_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_parses_every_key() {
        let spec: CsvSpec = "id=2, time=1,size=3,op=4,client=5,header=yes,sep=tab,ids=hash"
            .parse()
            .unwrap();
        assert_eq!(spec.id, 1);
        assert_eq!(spec.time, Some(0));
        assert_eq!(spec.client, Some(4));
        assert!(spec.header && spec.hash_ids);
        assert_eq!(spec.sep, b'\t');
    }

    #[test]
    fn spec_errors_name_the_bad_entry() {
        for bad in ["id=0", "id=x", "colour=1", "header=maybe", "sep=ab", "id"] {
            let err = bad.parse::<CsvSpec>().unwrap_err();
            assert!(err.to_string().contains(&format!("`{bad}`")), "{err}");
        }
    }

    #[test]
    fn times_accept_integers_and_decimal_seconds() {
        assert_eq!(parse_time(b"42", None), Some(42));
        assert_eq!(parse_time(b"1.5", None), Some(1_500_000_000));
        assert_eq!(
            parse_time(b"1456095145.133076000", None),
            Some(1_456_095_145_133_076_000)
        );
        assert_eq!(parse_time(b"1.0000000001", None), Some(1_000_000_000));
        assert_eq!(parse_time(b"1.x", None), None);
        assert_eq!(parse_time(b"-1", None), None);
    }

    #[test]
    fn a_time_unit_makes_every_time_nanoseconds() {
        let ms = Some(1_000_000);
        assert_eq!(parse_time(b"42", ms), Some(42_000_000));
        assert_eq!(parse_time(b"1.5", ms), Some(1_500_000));
        assert_eq!(parse_time(b"3", Some(1_000_000_000)), Some(3_000_000_000));
        assert_eq!(parse_time(b"7", Some(1)), Some(7));
        let spec: CsvSpec = "id=2,time=1,time_unit=us".parse().unwrap();
        assert_eq!(spec.time_unit, Some(1_000));
        assert_eq!(spec.ticks_per_second(), Ok(1_000_000_000));
        let spec: CsvSpec = "id=2,time=1".parse().unwrap();
        assert!(spec.ticks_per_second().unwrap_err().contains("time_unit"));
        assert!("time_unit=fortnight".parse::<CsvSpec>().is_err());
    }

    #[test]
    fn ops_read_common_spellings() {
        assert_eq!(parse_op(b"Read"), Some(Op::Read));
        assert_eq!(parse_op(b"W"), Some(Op::Write));
        assert_eq!(parse_op(b"delete"), Some(Op::Delete));
        assert_eq!(parse_op(b"scan"), None);
    }
}
