//! Streaming trace readers.
//!
//! Every reader yields [`Request`]s one at a time from a (transparently
//! decompressed) file, so memory does not grow with the trace. A malformed
//! line or truncated record ends the stream with a [`TraceError`] naming the
//! file, the line or record, and the expected form.

mod binary;
mod block_csv;
mod blocks;
mod compose;
mod csv_map;
mod decompress;
mod detect;
mod file_csv;
pub mod lcs;
mod lines;
mod twr;
mod vscsi;

pub use compose::{Compose, ComposeMode, IdSpace};
pub use csv_map::CsvSpec;
pub use decompress::{BytesRead, Compression};
pub use file_csv::{photo_sizes, read_file_requests};

use crate::error::{OptionError, TraceError};
use std::fmt;
use std::io::BufRead;
use std::path::Path;
use std::str::FromStr;

/// Whether a request reads, writes or deletes its block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Op {
    /// A read (the default where a trace does not say).
    #[default]
    Read,
    /// A write.
    Write,
    /// A delete (key-value traces): the object is dropped from the cache.
    /// The cooperative simulation, which has no deletes, treats it as a
    /// write (write-invalidate).
    Delete,
}

/// One block request from a trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// The block (or object) id.
    pub id: u64,
    /// The trace's timestamp, in its own unit; the request's position in
    /// the trace for formats without time.
    pub time: u64,
    /// Object size in bytes where the trace gives one (see
    /// [`TraceFormat::has_sizes`]), else 0.
    pub size: u32,
    /// The client (host, volume, source trace) that issued it.
    pub client: u32,
    /// Read or write.
    pub op: Op,
}

/// A stream of requests; it ends at the first error.
pub type Requests = Box<dyn Iterator<Item = Result<Request, TraceError>> + Send>;

/// The trace formats `--format` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// One integer id per line; lines of `*` are skipped (the LIRS traces).
    Lirs,
    /// ARC's `.lis`: lines `start count ...`, each of the `count` blocks
    /// from `start` one request, in order.
    Lis,
    /// Big-endian `u32` ids, no header (CloudPhysics, as w106).
    Be32,
    /// libCacheSim's `oracleGeneral`: 24-byte little-endian records
    /// `u32 time, u64 id, u32 size, i64 next access`.
    Oracle,
    /// Delimited text with a column map ([`CsvSpec`]).
    Csv,
    /// SNIA MSR Cambridge: `time,host,disk,Read|Write,offset,size,latency`;
    /// host and disk make the client; byte ranges become block requests.
    Msr,
    /// Tencent block storage: `time,offset,size,is_write,volume` with offset
    /// and size in 512-byte sectors; the volume is the client.
    Tencent,
    /// libCacheSim's `lcs`: an 8 KiB header, then records of versions 1 to
    /// 8 (see [`lcs`]); ops and the tenant (as client) from version 2.
    Lcs,
    /// libCacheSim's plain text: one numeric id per line.
    Txt,
    /// VMware vscsi block traces, versions 1 and 2, as libCacheSim reads
    /// them: the block number is the object, the length its size.
    Vscsi,
    /// Twitter's cache cluster traces (csv, OSDI'20): the key is the
    /// object, key size plus value size its size.
    Twr,
}

impl TraceFormat {
    /// Every format, in the order help texts list them.
    pub const ALL: [TraceFormat; 11] = [
        TraceFormat::Lirs,
        TraceFormat::Lis,
        TraceFormat::Be32,
        TraceFormat::Oracle,
        TraceFormat::Csv,
        TraceFormat::Msr,
        TraceFormat::Tencent,
        TraceFormat::Lcs,
        TraceFormat::Txt,
        TraceFormat::Vscsi,
        TraceFormat::Twr,
    ];

    /// Whether requests read in this format carry their objects' sizes:
    /// `oracle`, `lcs`, `vscsi` and `twr` always, `csv` with a `size`
    /// column. The block formats (`msr`, `tencent`) split byte ranges into
    /// blocks instead.
    pub fn has_sizes(self, opts: &ReadOptions) -> bool {
        match self {
            TraceFormat::Oracle | TraceFormat::Lcs | TraceFormat::Vscsi | TraceFormat::Twr => true,
            TraceFormat::Csv => opts.csv.as_ref().is_some_and(CsvSpec::has_size),
            _ => false,
        }
    }

    /// Ticks of this format's clock per second, for intervals of trace
    /// time; or, for a format without timestamps (where a request's time is
    /// its position) or of unknown unit, what to give instead. MSR counts
    /// 100 ns ticks (Windows file time); Tencent, Twitter, oracleGeneral and
    /// lcs count seconds, as libCacheSim reads them; vscsi's microseconds are
    /// read as seconds, as libCacheSim does; csv times are nanoseconds once
    /// its `time_unit` is given.
    pub fn ticks_per_second(self, opts: &ReadOptions) -> Result<u64, String> {
        match self {
            TraceFormat::Msr => Ok(10_000_000),
            TraceFormat::Tencent
            | TraceFormat::Twr
            | TraceFormat::Oracle
            | TraceFormat::Lcs
            | TraceFormat::Vscsi => Ok(1),
            TraceFormat::Csv => opts.csv.clone().unwrap_or_default().ticks_per_second(),
            TraceFormat::Lirs | TraceFormat::Lis | TraceFormat::Be32 | TraceFormat::Txt => {
                Err(format!(
                    "a number of requests: {self} traces have no timestamps, so intervals of trace time cannot be cut (e.g. --report-interval 100000)"
                ))
            }
        }
    }

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Lirs => "lirs",
            TraceFormat::Lis => "lis",
            TraceFormat::Be32 => "be32",
            TraceFormat::Oracle => "oracle",
            TraceFormat::Csv => "csv",
            TraceFormat::Msr => "msr",
            TraceFormat::Tencent => "tencent",
            TraceFormat::Lcs => "lcs",
            TraceFormat::Txt => "txt",
            TraceFormat::Vscsi => "vscsi",
            TraceFormat::Twr => "twr",
        }
    }
}

impl TraceFormat {
    /// Every format's name, comma-separated, for messages.
    pub fn names() -> String {
        TraceFormat::ALL.map(TraceFormat::name).join(", ")
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TraceFormat {
    type Err = OptionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TraceFormat::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| OptionError {
                what: "trace format",
                value: s.to_string(),
                expected: format!("one of {}", TraceFormat::names()),
            })
    }
}

/// How to read a trace beyond its format.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// Block size in bytes for formats that address bytes (`msr`,
    /// `tencent`): a request covering bytes `[o, o + n)` becomes one request
    /// per block it touches. Default 8 KiB, the papers' block.
    pub block_size: u64,
    /// The column map of the `csv` format.
    pub csv: Option<CsvSpec>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            block_size: 8 * 1024,
            csv: None,
        }
    }
}

/// An opened trace: its requests and how far through the file it is.
pub struct TraceStream {
    /// The requests, in trace order.
    pub requests: Requests,
    /// Bytes of the file read so far.
    pub progress: BytesRead,
    /// Size of the file on disk.
    pub file_len: u64,
}

/// Opens `path` as a trace of `format`.
pub fn open(
    path: &Path,
    format: TraceFormat,
    opts: &ReadOptions,
) -> Result<TraceStream, TraceError> {
    let opened = decompress::open(path)?;
    Ok(TraceStream {
        requests: read(opened.reader, path, format, opts),
        progress: opened.progress,
        file_len: opened.file_len,
    })
}

/// Reads already decompressed trace bytes from `input` as `format`; `path`
/// names the input in errors.
pub fn read(
    input: Box<dyn BufRead + Send>,
    path: &Path,
    format: TraceFormat,
    opts: &ReadOptions,
) -> Requests {
    let path = path.to_path_buf();
    let empty = TraceError::Empty {
        path: path.clone(),
        expected: format!("a {format} trace"),
    };
    let requests: Requests = match format {
        TraceFormat::Lirs => Box::new(lines::lirs(input, path)),
        TraceFormat::Lis => Box::new(lines::lis(input, path)),
        TraceFormat::Be32 => Box::new(binary::be32(input, path)),
        TraceFormat::Oracle => Box::new(binary::oracle(input, path)),
        TraceFormat::Csv => {
            let spec = opts.csv.clone().unwrap_or_default();
            Box::new(csv_map::reader(input, path, spec))
        }
        TraceFormat::Msr => Box::new(block_csv::msr(input, path, opts.block_size)),
        TraceFormat::Tencent => Box::new(block_csv::tencent(input, path, opts.block_size)),
        TraceFormat::Lcs => lcs::lcs(input, path),
        TraceFormat::Txt => Box::new(lines::txt(input, path)),
        TraceFormat::Vscsi => vscsi::vscsi(input, path),
        TraceFormat::Twr => Box::new(twr::twr(input, path)),
    };
    Box::new(NotEmpty {
        requests,
        empty: Some(empty),
    })
}

/// A trace that must hold at least one request: one that ends before its
/// first ends with [`TraceError::Empty`] instead (an empty `.be32` file,
/// or a text trace of comments only, is not a trace of nothing).
struct NotEmpty {
    requests: Requests,
    /// The error for an empty trace, until a request or an error is seen.
    empty: Option<TraceError>,
}

impl Iterator for NotEmpty {
    type Item = Result<Request, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.requests.next() {
            None => self.empty.take().map(Err),
            some => {
                self.empty = None;
                some
            }
        }
    }
}
