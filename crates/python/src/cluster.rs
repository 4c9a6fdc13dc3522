//! `simulate_cluster`: the cooperative study, what `coopcache sim
//! --workload W --algorithms A,B --json` (or a multi-client trace instead
//! of a workload) prints.

use crate::error::{Error, json, value};
use crate::input::TraceInput;
use coopcache_sim::coop::rows::rows;
use coopcache_sim::coop::setup::{self, ClusterOptions};
use coopcache_sim::coop::{CoopError, simulate};
use coopcache_sim::trace::Requests;
use coopcache_sim::workload::Workload;
use pyo3::prelude::*;

/// What the study runs on.
pub(crate) enum Source {
    /// A generated workload and its `key=value,...` settings.
    Workload(String, Option<String>),
    /// A multi-client trace.
    Trace(TraceInput),
}

/// The study's settings besides its source, as the CLI's flags of the
/// same names take them.
pub(crate) struct Study {
    pub algorithms: Vec<String>,
    pub policy: String,
    pub clients: Option<u32>,
    pub warmup: Option<u64>,
    pub block_size: Option<u64>,
    pub options: ClusterOptions,
}

/// The opened source: its name, requests, nodes, warm-up, block size and
/// whether it is the web workload (whose default caches are larger).
struct Opened {
    label: String,
    requests: Requests,
    nodes: u32,
    warmup: u64,
    block_size: u64,
    web: bool,
}

/// The papers' block: 8 KiB.
const DEFAULT_BLOCK_SIZE: u64 = 8 << 10;

fn open(source: &Source, study: &Study) -> Result<Opened, Error> {
    match source {
        Source::Workload(name, params) => {
            let w: Workload = name.parse().map_err(value)?;
            let w = setup::configure_workload(
                &w,
                study.options.seed(),
                study.clients,
                params.as_deref(),
            )
            .map_err(value)?;
            Ok(Opened {
                label: w.name().to_string(),
                requests: w.requests_iter(),
                nodes: w.clients(),
                warmup: study.warmup.unwrap_or_else(|| w.default_warmup()),
                block_size: w
                    .block_size()
                    .unwrap_or(study.block_size.unwrap_or(DEFAULT_BLOCK_SIZE)),
                web: matches!(w, Workload::Web(_)),
            })
        }
        Source::Trace(input) => {
            let nodes = match study.clients {
                Some(n) => n,
                None => setup::count_clients(input.open()?)?,
            };
            Ok(Opened {
                label: input.label(),
                requests: input.open()?,
                nodes,
                warmup: study.warmup.unwrap_or(0),
                block_size: input.opts.block_size,
                web: false,
            })
        }
    }
}

fn run(source: &Source, study: &Study) -> Result<String, Error> {
    let wanted = study
        .algorithms
        .iter()
        .map(|a| a.parse().map_err(value))
        .collect::<Result<Vec<_>, _>>()?;
    if wanted.is_empty() {
        return Err(value(
            "algorithms is empty: give at least one of base, direct, greedy, central, nchance, hash, wlru, best",
        ));
    }
    let policy = study.policy.parse().map_err(value)?;
    let opened = open(source, study)?;
    let config = study
        .options
        .config(opened.nodes, opened.block_size, opened.web, policy)
        .map_err(value)?;
    let specs = setup::specs(
        &wanted,
        &config,
        study.options.profile(),
        opened.warmup,
        None,
    );
    let results = simulate(opened.requests, &specs, |_| {}).map_err(|e| match e {
        CoopError::Trace(t) => Error::from(t),
        other => value(other),
    })?;
    let rows =
        rows(&opened.label, &wanted, &results).ok_or_else(|| value("Base was not simulated"))?;
    json(&rows)
}

fn cache_size(text: Option<&str>) -> Result<Option<coopcache_sim::size::CacheSize>, Error> {
    text.map(|t| t.parse().map_err(value)).transpose()
}

/// The cooperative study: a JSON array with one row per algorithm, as
/// `coopcache sim --algorithms ... --json` prints them. Give a
/// `workload` (sprite-like, leff, zipf, web, fs) or a trace `path`.
#[pyfunction]
#[pyo3(signature = (
    algorithms, workload=None, path=None, workload_params=None, format=None, csv=None,
    block_size=None, policy="lru", clients=None, client_cache=None, manager_cache=None,
    chances=None, foreign_first=false, central_fraction=None, direct_remote=None,
    profile=None, network_us=None, warmup=None, seed=None
))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments, one per CLI flag.
pub(crate) fn simulate_cluster(
    py: Python<'_>,
    algorithms: Vec<String>,
    workload: Option<String>,
    path: Option<std::path::PathBuf>,
    workload_params: Option<String>,
    format: Option<&str>,
    csv: Option<&str>,
    block_size: Option<u64>,
    policy: &str,
    clients: Option<u32>,
    client_cache: Option<&str>,
    manager_cache: Option<&str>,
    chances: Option<u8>,
    foreign_first: bool,
    central_fraction: Option<f64>,
    direct_remote: Option<&str>,
    profile: Option<&str>,
    network_us: Option<f64>,
    warmup: Option<u64>,
    seed: Option<u64>,
) -> PyResult<String> {
    let source = match (workload, path) {
        (Some(w), None) => Source::Workload(w, workload_params),
        (None, Some(p)) if workload_params.is_none() => {
            Source::Trace(TraceInput::new(p, format, csv, block_size)?)
        }
        (None, Some(_)) => {
            return Err(
                value("workload_params sets a generated workload: drop it with a trace").into(),
            );
        }
        _ => {
            return Err(value(
                "give either a multi-client trace or workload= (sprite-like, leff, zipf, web, fs), not both or neither",
            )
            .into());
        }
    };
    let study = Study {
        algorithms,
        policy: policy.to_string(),
        clients,
        warmup,
        block_size,
        options: ClusterOptions {
            client_cache: cache_size(client_cache)?,
            manager_cache: cache_size(manager_cache)?,
            chances,
            foreign_first,
            central_fraction,
            direct_remote: cache_size(direct_remote)?,
            profile: profile.map(|p| p.parse().map_err(value)).transpose()?,
            network_us,
            seed,
        },
    };
    Ok(py.allow_threads(|| run(&source, &study))?)
}
