//! Block-device CSV traces that address bytes: SNIA MSR Cambridge and
//! Tencent block storage. Each I/O becomes one request per block it touches.

use super::blocks::{MAX_CLIENT, Run, block_id, block_span, excerpt, parse_u64};
use super::csv_map::{csv_error, csv_reader, parse_op};
use super::{Op, Request, TraceError};
use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;

/// One I/O as a block trace line describes it.
struct Io<'a> {
    time: u64,
    /// Who issued it: host and disk, or volume and nothing.
    device: [&'a [u8]; 2],
    op: Op,
    offset: u64,
    len: u64,
}

/// A line parser: the I/O, or what is wrong with the line.
type ParseLine = fn(&csv::ByteRecord) -> Result<Io<'_>, String>;

struct BlockCsv {
    records: csv::Reader<Box<dyn BufRead + Send>>,
    record: csv::ByteRecord,
    parse: ParseLine,
    expected: &'static str,
    devices: HashMap<Vec<u8>, u32>,
    /// Scratch space for a device's name.
    device: Vec<u8>,
    run: Run,
    block_size: u64,
    path: PathBuf,
    failed: bool,
}

impl BlockCsv {
    fn line(&self) -> u64 {
        self.record.position().map_or(0, |p| p.line())
    }

    /// The run of block requests of the current line.
    fn expand(&mut self) -> Result<Run, TraceError> {
        let line = self.line();
        let io = (self.parse)(&self.record).map_err(|problem| TraceError::Line {
            path: self.path.clone(),
            line,
            problem,
            expected: self.expected,
        })?;
        let out_of_range = |problem: String| TraceError::OutOfRange {
            path: self.path.clone(),
            record: line,
            problem,
        };
        // The parts are joined with a NUL so "hm"+"0" and "h"+"m0" differ.
        self.device.clear();
        self.device.extend_from_slice(io.device[0]);
        self.device.push(0);
        self.device.extend_from_slice(io.device[1]);
        let next_client = self.devices.len() as u32;
        let client = match self.devices.get(&self.device) {
            Some(&c) => c,
            None if next_client <= MAX_CLIENT => {
                self.devices.insert(self.device.clone(), next_client);
                next_client
            }
            None => return Err(out_of_range(format!("more than {MAX_CLIENT} devices"))),
        };
        let (first, end) = block_span(io.offset, io.len, self.block_size)
            .filter(|&(first, end)| end == first || block_id(client, end - 1).is_some())
            .ok_or_else(|| {
                out_of_range(format!(
                    "bytes {}+{} lie beyond the 2^40-block id space",
                    io.offset, io.len
                ))
            })?;
        Ok(Run {
            template: Request {
                time: io.time,
                client,
                op: io.op,
                ..Request::default()
            },
            base: block_id(client, 0).unwrap_or(0),
            next: first,
            end,
        })
    }
}

impl Iterator for BlockCsv {
    type Item = Result<Request, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(request) = self.run.next() {
                return Some(Ok(request));
            }
            if self.failed {
                return None;
            }
            let result = match self.records.read_byte_record(&mut self.record) {
                Ok(false) => return None,
                Ok(true) => self.expand(),
                Err(e) => Err(csv_error(&self.path, e)),
            };
            match result {
                Ok(run) => self.run = run,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

fn field<'a>(record: &'a csv::ByteRecord, i: usize, name: &str) -> Result<&'a [u8], String> {
    record.get(i).map(<[u8]>::trim_ascii).ok_or_else(|| {
        format!(
            "no {name} (column {}); the line has {} columns",
            i + 1,
            record.len()
        )
    })
}

fn number(record: &csv::ByteRecord, i: usize, name: &str) -> Result<u64, String> {
    let text = field(record, i, name)?;
    parse_u64(text).ok_or_else(|| format!("{name} {} is not an unsigned integer", excerpt(text)))
}

const MSR_FORM: &str =
    "`timestamp,host,disk,Read|Write,offset,size,latency` with integer timestamp, offset and size";

fn parse_msr(record: &csv::ByteRecord) -> Result<Io<'_>, String> {
    let op_text = field(record, 3, "type")?;
    Ok(Io {
        time: number(record, 0, "timestamp")?,
        device: [field(record, 1, "host")?, field(record, 2, "disk")?],
        op: parse_op(op_text)
            .ok_or_else(|| format!("type {} is neither Read nor Write", excerpt(op_text)))?,
        offset: number(record, 4, "offset")?,
        len: number(record, 5, "size")?,
    })
}

/// SNIA MSR Cambridge: host and disk make the client.
pub(super) fn msr(
    input: Box<dyn BufRead + Send>,
    path: PathBuf,
    block_size: u64,
) -> impl Iterator<Item = Result<Request, TraceError>> {
    block_csv(input, path, block_size, parse_msr, MSR_FORM)
}

const TENCENT_FORM: &str = "`timestamp,offset,size,is_write,volume` with integers, offset and size in 512-byte sectors, is_write 0 or 1";
const SECTOR: u64 = 512;

fn parse_tencent(record: &csv::ByteRecord) -> Result<Io<'_>, String> {
    let sectors = |i, name| {
        number(record, i, name)?
            .checked_mul(SECTOR)
            .ok_or_else(|| format!("{name} overflows 64-bit bytes"))
    };
    let op = match number(record, 3, "is_write")? {
        0 => Op::Read,
        1 => Op::Write,
        other => return Err(format!("is_write {other} is neither 0 nor 1")),
    };
    Ok(Io {
        time: number(record, 0, "timestamp")?,
        device: [field(record, 4, "volume")?, b""],
        op,
        offset: sectors(1, "offset")?,
        len: sectors(2, "size")?,
    })
}

/// Tencent block storage: the volume is the client.
pub(super) fn tencent(
    input: Box<dyn BufRead + Send>,
    path: PathBuf,
    block_size: u64,
) -> impl Iterator<Item = Result<Request, TraceError>> {
    block_csv(input, path, block_size, parse_tencent, TENCENT_FORM)
}

fn block_csv(
    input: Box<dyn BufRead + Send>,
    path: PathBuf,
    block_size: u64,
    parse: ParseLine,
    expected: &'static str,
) -> impl Iterator<Item = Result<Request, TraceError>> {
    BlockCsv {
        records: csv_reader(input, b',', false),
        record: csv::ByteRecord::new(),
        parse,
        expected,
        devices: HashMap::new(),
        device: Vec::new(),
        run: Run::default(),
        block_size,
        path,
        failed: false,
    }
}
