//! `simulate` (what `coopcache sim TRACE --json` prints) and `mrc` (what
//! `coopcache sim mrc TRACE --format F --json` prints).

use crate::error::{Error, json, value};
use crate::input::TraceInput;
use coopcache_sim::local::{self, SimRow, Sizing};
use coopcache_sim::mrc::{CurveSpec, DEFAULT_SIZES, Shards, curves, parse_sizes};
use coopcache_sim::replay::replay_sized;
use coopcache_sim::size::CacheSize;
use pyo3::prelude::*;
use std::path::PathBuf;

/// Policy names as `--policy` takes them, parsed by the library.
fn parse_policies<P: std::str::FromStr>(names: &[String]) -> Result<Vec<P>, Error>
where
    P::Err: std::fmt::Display,
{
    if names.is_empty() {
        return Err(value("policies is empty: give e.g. ['lru', 'arc']"));
    }
    names
        .iter()
        .map(|n| n.parse::<P>().map_err(value))
        .collect()
}

fn run_simulate(
    input: &TraceInput,
    policies: &[String],
    sizes: &[String],
    block_size: Option<u64>,
) -> Result<String, Error> {
    let policies = parse_policies(policies)?;
    if sizes.is_empty() {
        return Err(value(
            "sizes is empty: give blocks (2750) or bytes with a unit ('16MiB')",
        ));
    }
    let sizes: Vec<CacheSize> = sizes
        .iter()
        .map(|s| s.parse().map_err(value))
        .collect::<Result<_, _>>()?;
    let sizing = Sizing::of(input.format, &input.opts, block_size).map_err(value)?;
    let specs =
        local::run_specs(&policies, &sizes, sizing, input.opts.block_size).map_err(value)?;
    let results =
        replay_sized(input.open()?, &specs, sizing.sized(), |_| {}).map_err(|e| match e {
            coopcache_sim::replay::ReplayError::Trace(t) => Error::from(t),
            other => value(other),
        })?;
    let label = input.label();
    let rows: Vec<SimRow> = results
        .iter()
        .map(|r| SimRow::new(&label, sizing, r))
        .collect();
    json(&rows)
}

/// Replays the trace through each policy at each size: a JSON array of
/// the rows `coopcache sim --json` prints, policy-major.
#[pyfunction]
#[pyo3(signature = (path, policies, sizes, format=None, csv=None, block_size=None))]
pub(crate) fn simulate(
    py: Python<'_>,
    path: PathBuf,
    policies: Vec<String>,
    sizes: Vec<String>,
    format: Option<&str>,
    csv: Option<&str>,
    block_size: Option<u64>,
) -> PyResult<String> {
    let input = TraceInput::new(path, format, csv, block_size)?;
    Ok(py.allow_threads(|| run_simulate(&input, &policies, &sizes, block_size))?)
}

fn run_mrc(
    input: &TraceInput,
    policies: &[String],
    sizes: &str,
    shards: Option<f64>,
) -> Result<String, Error> {
    let shards = shards
        .map(|r| {
            Shards::new(r).ok_or_else(|| {
                value(format!(
                    "shards {r}: expected a sampling rate above 0 and at most 1, e.g. 0.01"
                ))
            })
        })
        .transpose()?;
    let spec = CurveSpec {
        policies: parse_policies(policies)?,
        points: parse_sizes(sizes).map_err(value)?,
        sized: input.sized(),
        shards,
    };
    let open =
        || coopcache_sim::trace::open(input.path(), input.format, &input.opts).map(|s| s.requests);
    let computed = curves(open, &input.label(), &spec).map_err(|e| match e {
        coopcache_sim::mrc::CurveError::Trace(t) => Error::from(t),
        other => value(other),
    })?;
    json(&computed.rows)
}

/// Miss-ratio curves: LRU from one stack-distance pass (sampled with
/// `shards`), other policies replayed at each size; a JSON array of the
/// rows `coopcache sim mrc --format F --json` prints.
#[pyfunction]
#[pyo3(signature = (path, policies, sizes=None, format=None, csv=None, shards=None))]
pub(crate) fn mrc(
    py: Python<'_>,
    path: PathBuf,
    policies: Vec<String>,
    sizes: Option<&str>,
    format: Option<&str>,
    csv: Option<&str>,
    shards: Option<f64>,
) -> PyResult<String> {
    let input = TraceInput::new(path, format, csv, None)?;
    let sizes = sizes.unwrap_or(DEFAULT_SIZES);
    Ok(py.allow_threads(|| run_mrc(&input, &policies, sizes, shards))?)
}
