//! `trace_stats`: what `coopcache trace stats --json` prints.

use crate::error::{Error, json, value};
use crate::input::TraceInput;
use coopcache_sim::stats::TraceStats;
use pyo3::prelude::*;
use serde::Serialize;
use std::path::PathBuf;

/// The JSON object: the trace, its format and its statistics.
#[derive(Serialize)]
struct Report {
    trace: String,
    format: String,
    #[serde(flatten)]
    stats: TraceStats,
}

fn run(input: &TraceInput) -> Result<String, Error> {
    let stats = TraceStats::of(input.open()?, input.sized(), |_| {})?;
    if stats.ops.requests == 0 {
        return Err(value(format!("{}: no requests", input.path().display())));
    }
    json(&Report {
        trace: input.label(),
        format: input.format.to_string(),
        stats,
    })
}

/// The trace's statistics in one pass, as one JSON object.
#[pyfunction]
#[pyo3(signature = (path, format=None, csv=None, block_size=None))]
pub(crate) fn trace_stats(
    py: Python<'_>,
    path: PathBuf,
    format: Option<&str>,
    csv: Option<&str>,
    block_size: Option<u64>,
) -> PyResult<String> {
    let input = TraceInput::new(path, format, csv, block_size)?;
    Ok(py.allow_threads(|| run(&input))?)
}
