//! Opening a trace as the CLI does (`--format`, `--csv`, `--block-size`),
//! and `read_trace`: its requests as columns.

use crate::error::{Error, value};
use coopcache_sim::trace::{self, CsvSpec, Op, ReadOptions, Requests, TraceFormat};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::path::{Path, PathBuf};

/// A trace to open: its path, format and reading options.
pub(crate) struct TraceInput {
    /// The file.
    pub path: PathBuf,
    /// Its format, given or told by its name.
    pub format: TraceFormat,
    /// The csv column map and the block size.
    pub opts: ReadOptions,
}

impl TraceInput {
    /// Resolves `format` (or the file name's) and parses `csv`, as
    /// `coopcache sim --format F --csv SPEC` does; `block_size` splits the
    /// block formats' byte ranges.
    pub(crate) fn new(
        path: PathBuf,
        format: Option<&str>,
        csv: Option<&str>,
        block_size: Option<u64>,
    ) -> Result<TraceInput, Error> {
        let given = format
            .map(str::parse::<TraceFormat>)
            .transpose()
            .map_err(value)?;
        let format = TraceFormat::resolve(given, &path).map_err(value)?;
        let csv = csv.map(str::parse::<CsvSpec>).transpose().map_err(value)?;
        match (format, &csv) {
            (TraceFormat::Csv, None) => {
                return Err(value(
                    "format='csv' needs csv=SPEC to say which column holds the id, e.g. csv='id=1' (what `coopcache sim --csv` takes)",
                ));
            }
            (f, Some(_)) if f != TraceFormat::Csv => {
                return Err(value(format!(
                    "csv= maps the columns of format='csv'; this trace is read as {f}"
                )));
            }
            _ => {}
        }
        if block_size == Some(0) {
            return Err(value("block_size 0: expected a positive size in bytes"));
        }
        let mut opts = ReadOptions {
            csv,
            ..ReadOptions::default()
        };
        if let Some(b) = block_size {
            opts.block_size = b;
        }
        Ok(TraceInput { path, format, opts })
    }

    /// Opens the trace's requests.
    pub(crate) fn open(&self) -> Result<Requests, Error> {
        Ok(trace::open(&self.path, self.format, &self.opts)?.requests)
    }

    /// Whether its requests carry object sizes.
    pub(crate) fn sized(&self) -> bool {
        self.format.has_sizes(&self.opts)
    }

    /// Its name in the rows: the file name.
    pub(crate) fn label(&self) -> String {
        coopcache_sim::local::trace_label(std::slice::from_ref(&self.path))
    }

    /// The path, for messages.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// A trace's requests as little-endian columns.
#[derive(Default)]
struct Columns {
    time: Vec<u8>,
    id: Vec<u8>,
    size: Vec<u8>,
    client: Vec<u8>,
    op: Vec<u8>,
}

impl Columns {
    fn push(&mut self, r: &trace::Request) {
        self.time.extend_from_slice(&r.time.to_le_bytes());
        self.id.extend_from_slice(&r.id.to_le_bytes());
        self.size.extend_from_slice(&r.size.to_le_bytes());
        self.client.extend_from_slice(&r.client.to_le_bytes());
        self.op.push(match r.op {
            Op::Read => 0,
            Op::Write => 1,
            Op::Delete => 2,
        });
    }
}

fn read_columns(input: &TraceInput, limit: Option<u64>) -> Result<Columns, Error> {
    let mut columns = Columns::default();
    let limit = usize::try_from(limit.unwrap_or(u64::MAX)).unwrap_or(usize::MAX);
    for r in input.open()?.take(limit) {
        columns.push(&r?);
    }
    Ok(columns)
}

/// Reads the trace (at most `limit` requests) into a dict of columns as
/// little-endian bytes: `time`, `id` (u64), `size` (u32, None without
/// sizes), `client` (u32), `op` (u8: 0 read, 1 write, 2 delete), with
/// `format` and `sized`. Bytes, not lists, so that millions of requests
/// reach numpy without a Python object each.
#[pyfunction]
#[pyo3(signature = (path, format=None, csv=None, block_size=None, limit=None))]
pub(crate) fn read_trace<'py>(
    py: Python<'py>,
    path: PathBuf,
    format: Option<&str>,
    csv: Option<&str>,
    block_size: Option<u64>,
    limit: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let input = TraceInput::new(path, format, csv, block_size)?;
    let columns = py.allow_threads(|| read_columns(&input, limit))?;
    let out = PyDict::new(py);
    out.set_item("format", input.format.name())?;
    out.set_item("sized", input.sized())?;
    out.set_item("time", PyBytes::new(py, &columns.time))?;
    out.set_item("id", PyBytes::new(py, &columns.id))?;
    if input.sized() {
        out.set_item("size", PyBytes::new(py, &columns.size))?;
    } else {
        out.set_item("size", py.None())?;
    }
    out.set_item("client", PyBytes::new(py, &columns.client))?;
    out.set_item("op", PyBytes::new(py, &columns.op))?;
    Ok(out)
}
