//! `coopcache sim --algorithms ...`: the cooperative caching study.

use crate::sim::replay::{SimArgs, open_traces};
use anyhow::{Context, Result, bail};
use clap::Args;
use coopcache_console::progress::Progress;
use coopcache_console::table;
use coopcache_core::coop::{AlgorithmKind, ClusterConfig, Level};
use coopcache_sim::attr::{Scheme, block_requests};
use coopcache_sim::coop::report::{Comparison, MIN_CLIENT_READS, client_speedups};
use coopcache_sim::coop::rows::{CoopRow, shown};
use coopcache_sim::coop::setup::{self, ClusterOptions};
use coopcache_sim::coop::{AttributeNodes, CoopResult, CoopSpec, CostProfile, Hardware, simulate};
use coopcache_sim::local::trace_label;
use coopcache_sim::size::CacheSize;
use coopcache_sim::trace::Requests;
use coopcache_sim::workload::Workload;
use std::path::{Path, PathBuf};

/// Options of the cooperative study (`--algorithms`).
#[derive(Args, Clone, Debug)]
#[command(next_help_heading = "Cooperative caching (with --algorithms)")]
pub struct CoopArgs {
    /// Algorithms to compare, comma-separated: base, direct, greedy, central, nchance, hash, wlru, best.
    #[arg(long, value_delimiter = ',')]
    pub(crate) algorithms: Option<Vec<AlgorithmKind>>,

    /// Close-to-open consistency to compare on a trace with writes, comma-separated: nfs
    /// (every open asks the origin), c2cfs (C2Cfs shared mode: the file's manager and the
    /// origin's version), c2cfs-exclusive (the manager alone); reports where reads are served
    /// and the origin's and managers' work.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "SCHEMES",
        conflicts_with = "algorithms"
    )]
    pub(crate) consistency: Option<Vec<coopcache_sim::c2cfs::Scheme>>,

    /// A synthetic multi-client workload instead of a trace: sprite-like, leff, zipf, web.
    #[arg(long)]
    pub(crate) workload: Option<Workload>,

    /// Workload parameters as key=value pairs, e.g. `requests=200000,seed=7` (see docs/reproduction.md).
    #[arg(long, value_name = "KEY=VALUE,...")]
    workload_params: Option<String>,

    /// Nodes (clients). Workloads: overrides theirs. Traces: default one per client in the trace.
    #[arg(long)]
    clients: Option<u32>,

    /// Cache per node (default 16MiB; 200MiB for the web workload, the paper's nodes).
    #[arg(long)]
    client_cache: Option<CacheSize>,

    /// The manager's own cache (default 128MiB; 200MiB for the web workload's
    /// storage node; 0 for a manager that keeps no blocks, as in the daemon).
    #[arg(long)]
    manager_cache: Option<CacheSize>,

    /// N-Chance: how many times an unreferenced singlet is passed on [default: 2].
    #[arg(long)]
    chances: Option<u8>,

    /// N-Chance: evict forwarded blocks before a node's own (Netcache's
    /// foreign blocks), as the daemon does; the paper evicts by recency alone.
    #[arg(long)]
    foreign_first: bool,

    /// Centrally Coordinated and Hash-Distributed: fraction of each node's cache managed globally [default: 0.8].
    #[arg(long)]
    central_fraction: Option<f64>,

    /// Direct Client Cooperation: each node's private remote cache (default: as large as its own).
    #[arg(long)]
    direct_remote: Option<CacheSize>,

    /// Access times: atm-1994 (the paper's), ethernet-1994, dc-2026-nvme, dc-2026-s3 [default: atm-1994].
    #[arg(long)]
    profile: Option<CostProfile>,

    /// Scale the profile's network block fetch (transfer and two hops) to this many microseconds.
    #[arg(long, value_name = "US")]
    network_us: Option<f64>,

    /// Requests excluded from every figure at the start (default: 4/7 of a workload, as the
    /// paper's 400k of 700k; none for a trace).
    #[arg(long)]
    warmup: Option<u64>,

    /// Seed of the workload and of every random choice of the algorithms [default: 1].
    #[arg(long)]
    seed: Option<u64>,

    /// Cooperative runs: write PNG charts in the manner of the paper's Figures 4-7 into this
    /// directory. Local policies: draw one chart, FILE.png: the miss ratio over time with
    /// --report-interval, else against cache size (several --cache-size values).
    #[arg(long, value_name = "DIR|FILE.png")]
    pub(crate) plot: Option<PathBuf>,

    /// Size-class policy files (TOML), comma-separated: run N-Chance under each and compare
    /// cluster throughput (see docs/class-policies.md).
    #[arg(long, value_delimiter = ',', value_name = "FILE")]
    pub(crate) class_policy: Vec<PathBuf>,

    /// An attribute cache as each node's local cache: `unix`, `variable` (Table 1 at the node's
    /// size) or a notation like `64K/128 ID, x/4K Temporal, 2M/128K Sequential` (with --workload fs).
    #[arg(long, value_name = "NOTATION")]
    pub(crate) cache_config: Option<Scheme>,

    /// Disks and links for throughput with --class-policy: webstone-1999, dc-2026 [default: webstone-1999].
    #[arg(long)]
    hardware: Option<Hardware>,
}

/// What the study runs on: a workload or a trace, with its node count.
pub(crate) struct Input {
    pub(crate) label: String,
    pub(crate) requests: Requests,
    pub(crate) nodes: u32,
    pub(crate) warmup: u64,
    pub(crate) progress: Option<Progress>,
    /// Bytes per block of the requests.
    pub(crate) block_size: u64,
    /// Whether the input is the web workload (its sizes are WebStone's).
    pub(crate) web: bool,
    /// The nodes' attribute cache, if asked for.
    pub(crate) attribute: Option<AttributeNodes>,
}

impl CoopArgs {
    /// Opens the workload or trace the study runs on.
    pub(crate) fn input(&self, sim: &SimArgs) -> Result<Input> {
        match (&self.workload, sim.traces.is_empty()) {
            (Some(_), false) => bail!("give either a TRACE or --workload, not both"),
            (None, true) => bail!(
                "give a multi-client TRACE (with --format) or --workload sprite-like|leff|zipf"
            ),
            (Some(w), true) => {
                let attribute = self.attribute_nodes(w, sim)?;
                let workload = setup::configure_workload(
                    w,
                    self.options().seed(),
                    self.clients,
                    self.workload_params.as_deref(),
                )?;
                Ok(Input {
                    label: workload.name().to_string(),
                    nodes: workload.clients(),
                    warmup: self.warmup.unwrap_or_else(|| workload.default_warmup()),
                    requests: match (&workload, &attribute) {
                        (Workload::Fs(fs), Some(a)) => {
                            let resolved = a.config.resolve(self.node_bytes(&workload, sim))?;
                            Box::new(block_requests(fs.generate(), resolved).map(Ok))
                        }
                        _ => workload.requests_iter(),
                    },
                    progress: None,
                    block_size: workload.block_size().unwrap_or(sim.block_size()),
                    web: matches!(workload, Workload::Web(_)),
                    attribute,
                })
            }
            (None, false) => {
                if self.cache_config.is_some() {
                    bail!(
                        "--cache-config needs file requests with types and sizes: use --workload fs (`coopcache sim mrc` reads file-request traces)"
                    );
                }
                let nodes = match self.clients {
                    Some(n) => n,
                    None => count_clients(sim)?,
                };
                let (requests, progress) = open_traces(sim)?;
                Ok(Input {
                    label: trace_label(&sim.traces),
                    requests,
                    nodes,
                    warmup: self.warmup.unwrap_or(0),
                    progress: Some(progress),
                    block_size: sim.block_size(),
                    web: false,
                    attribute: None,
                })
            }
        }
    }

    /// The cluster options given, for the library's set-up.
    fn options(&self) -> ClusterOptions {
        ClusterOptions {
            client_cache: self.client_cache,
            manager_cache: self.manager_cache,
            chances: self.chances,
            foreign_first: self.foreign_first,
            central_fraction: self.central_fraction,
            direct_remote: self.direct_remote,
            profile: self.profile,
            network_us: self.network_us,
            seed: self.seed,
        }
    }

    /// A node's cache in bytes.
    fn node_bytes(&self, workload: &Workload, sim: &SimArgs) -> u64 {
        let block = workload.block_size().unwrap_or(sim.block_size());
        match self
            .options()
            .cache_sizes(matches!(workload, Workload::Web(_)))
            .0
        {
            CacheSize::Bytes(b) => b,
            CacheSize::Blocks(n) => n.saturating_mul(block),
        }
    }

    /// The nodes' attribute cache for `workload`, if `--cache-config` asks.
    fn attribute_nodes(
        &self,
        workload: &Workload,
        sim: &SimArgs,
    ) -> Result<Option<AttributeNodes>> {
        let Some(scheme) = &self.cache_config else {
            return Ok(None);
        };
        if !matches!(workload, Workload::Fs(_)) {
            bail!(
                "--cache-config needs file requests with types and sizes: use --workload fs, not {}",
                workload.name()
            );
        }
        let config = scheme.at(self.node_bytes(workload, sim));
        Ok(Some(AttributeNodes {
            config,
            block_bytes: workload.block_size().unwrap_or(sim.block_size()),
        }))
    }

    /// The cluster configuration for `input`.
    pub(crate) fn config(&self, sim: &SimArgs, input: &Input) -> Result<ClusterConfig> {
        let policy = crate::sim::policies::bare_policy(&sim.policy.0)?;
        Ok(self
            .options()
            .config(input.nodes, input.block_size, input.web, policy)?)
    }

    /// The cost profile, with the network scaled if asked.
    pub(crate) fn profile(&self) -> CostProfile {
        self.options().profile()
    }

    /// `--hardware`, or the WebStone-era machines.
    pub(crate) fn hardware(&self) -> Hardware {
        self.hardware.unwrap_or(Hardware::WEBSTONE_1999)
    }

    /// The cooperative options given, by flag: what a local-policy run
    /// refuses rather than ignores.
    pub(crate) fn given(&self) -> Vec<&'static str> {
        [
            ("--workload-params", self.workload_params.is_some()),
            ("--clients", self.clients.is_some()),
            ("--client-cache", self.client_cache.is_some()),
            ("--manager-cache", self.manager_cache.is_some()),
            ("--chances", self.chances.is_some()),
            ("--foreign-first", self.foreign_first),
            ("--central-fraction", self.central_fraction.is_some()),
            ("--direct-remote", self.direct_remote.is_some()),
            ("--profile", self.profile.is_some()),
            ("--network-us", self.network_us.is_some()),
            ("--warmup", self.warmup.is_some()),
            ("--seed", self.seed.is_some()),
            ("--cache-config", self.cache_config.is_some()),
            ("--hardware", self.hardware.is_some()),
        ]
        .into_iter()
        .filter_map(|(flag, given)| given.then_some(flag))
        .collect()
    }
}

/// Counts the clients of a trace with a first pass over it.
fn count_clients(sim: &SimArgs) -> Result<u32> {
    if sim.traces.len() > 1 {
        return Ok(sim.traces.len() as u32);
    }
    let (requests, _) = open_traces(sim)?;
    Ok(setup::count_clients(requests)?)
}

/// Simulates every spec over `requests`, showing `progress` if any.
pub(crate) fn simulate_input(
    requests: Requests,
    specs: &[CoopSpec],
    progress: Option<Progress>,
    label: &str,
) -> Result<Vec<CoopResult>> {
    let results = simulate(requests, specs, |n| {
        if let Some(p) = &progress {
            p.update(n);
        }
    })
    .with_context(|| format!("simulating {label}"));
    if let Some(p) = &progress {
        p.finish();
    }
    results
}

/// Runs the study and prints (and plots) its figures.
pub fn run(sim: &SimArgs) -> Result<()> {
    let args = &sim.coop;
    let input = args.input(sim)?;
    let config = args.config(sim, &input)?;
    let wanted = args.algorithms.clone().unwrap_or_default();
    if wanted.is_empty() {
        bail!(
            "--algorithms needs at least one of base, direct, greedy, central, nchance, hash, wlru, best"
        );
    }
    let specs = setup::specs(
        &wanted,
        &config,
        args.profile(),
        input.warmup,
        input.attribute.as_ref(),
    );
    let results = simulate_input(input.requests, &specs, input.progress, &input.label)?;
    let (shown, base) = shown(&wanted, &results).context("Base was not simulated")?;
    if sim.json {
        print_json(&input.label, &shown, base)?;
    } else {
        print_tables(&input.label, &config, &shown);
    }
    if let Some(dir) = &args.plot {
        plot_study(dir, &input.label, &shown, base)?;
    }
    Ok(())
}

fn print_json(label: &str, shown: &[(&CoopResult, Comparison)], base: &CoopResult) -> Result<()> {
    coopcache_console::output::print_json(
        shown.iter().map(|(r, c)| CoopRow::new(label, r, c, base)),
    )
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn ms(us: f64) -> String {
    format!("{:.2}", us / 1000.0)
}

fn print_tables(label: &str, config: &ClusterConfig, shown: &[(&CoopResult, Comparison)]) {
    let Some((first, _)) = shown.first() else {
        return;
    };
    let s = &first.stats;
    println!(
        "{label}: {} x {} blocks, manager {} blocks, {} local caches, profile {}; {} reads and {} writes measured after {} warm-up requests\n",
        coopcache_console::output::count(config.nodes as u64, "node"),
        config.node_capacity,
        config.manager_capacity,
        config.policy,
        first.spec.profile.name,
        s.reads,
        s.writes,
        first.spec.warmup
    );
    println!("Average read time (ms) and where it goes (paper Figure 4)");
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|(r, c)| {
            let s = &r.stats;
            let per = |l: Level| ms(s.time_by_level_us[l.index()] / s.reads.max(1) as f64);
            vec![
                r.spec.algorithm.to_string(),
                ms(s.avg_read_us()),
                format!("{:.2}", c.speedup),
                per(Level::Local),
                per(Level::ManagerMemory),
                per(Level::RemoteNode),
                per(Level::Origin),
            ]
        })
        .collect();
    table::print(
        &[
            "algorithm",
            "avg read",
            "speedup",
            "local",
            "server mem",
            "remote node",
            "origin",
        ],
        &rows,
        1,
    );

    println!("\nWhere reads are served, as a fraction of all reads (paper Figure 5)");
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|(r, _)| {
            let s = &r.stats;
            vec![
                r.spec.algorithm.to_string(),
                pct(s.local_miss_rate()),
                pct(s.fraction(Level::ManagerMemory)),
                pct(s.fraction(Level::RemoteNode)),
                pct(s.fraction(Level::Origin)),
            ]
        })
        .collect();
    table::print(
        &[
            "algorithm",
            "local miss",
            "server mem",
            "remote node",
            "origin",
        ],
        &rows,
        1,
    );

    println!(
        "\nServer load, relative to Base (paper Figure 6; units: 1 per message, +2 per block sent, 2 per origin read)"
    );
    let base_total = shown
        .iter()
        .find(|(r, _)| r.spec.algorithm == AlgorithmKind::Base)
        .map(|(r, _)| r.stats.load.total())
        .unwrap_or_else(|| {
            let (r, c) = &shown[0];
            (r.stats.load.total() as f64 / c.load_vs_base.max(f64::MIN_POSITIVE)) as u64
        })
        .max(1) as f64;
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|(r, c)| {
            let l = &r.stats.load;
            vec![
                r.spec.algorithm.to_string(),
                pct(c.load_vs_base),
                pct(l.origin as f64 / base_total),
                pct(l.remote as f64 / base_total),
                pct(l.manager_memory as f64 / base_total),
                pct(l.other as f64 / base_total),
            ]
        })
        .collect();
    table::print(
        &[
            "algorithm",
            "total",
            "hit origin",
            "hit remote",
            "hit server mem",
            "other",
        ],
        &rows,
        1,
    );

    println!(
        "\nPer-client speedup against Base (paper Figure 7; clients with at least {MIN_CLIENT_READS} reads)"
    );
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|(r, c)| {
            vec![
                r.spec.algorithm.to_string(),
                c.worst_client_speedup
                    .map_or("-".into(), |w| format!("{w:.2}")),
                format!("{} of {}", c.clients_slowed_5pct, c.clients_compared),
                format!("{:.1}", r.directory_bytes_per_block),
                format!("{:.1}", r.requests_per_s() / 1e6),
            ]
        })
        .collect();
    table::print(
        &[
            "algorithm",
            "worst client",
            "slowed > 5%",
            "directory B/block",
            "Mreq/s",
        ],
        &rows,
        1,
    );
}

/// Writes the study's charts into `dir`: Figures 4 to 7 of the paper.
fn plot_study(
    dir: &Path,
    label: &str,
    shown: &[(&CoopResult, Comparison)],
    base: &CoopResult,
) -> Result<()> {
    use coopcache_console::plot::{Segment, Series, Style, stacked_bars, xy};
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let bars: Vec<String> = shown
        .iter()
        .map(|(r, _)| r.spec.algorithm.to_string())
        .collect();
    let per_read = |r: &CoopResult, l: Level| {
        r.stats.time_by_level_us[l.index()] / r.stats.reads.max(1) as f64 / 1000.0
    };
    let levels = [
        ("local", Level::Local),
        ("server memory", Level::ManagerMemory),
        ("remote node", Level::RemoteNode),
        ("origin", Level::Origin),
    ];
    let time: Vec<Segment> = levels
        .iter()
        .map(|&(name, l)| Segment {
            name,
            values: shown.iter().map(|(r, _)| per_read(r, l)).collect(),
        })
        .collect();
    stacked_bars(
        &dir.join("fig4-read-time.png"),
        &format!("Average read time, {label}"),
        "ms per read",
        &bars,
        &time,
    )?;
    let served: Vec<Segment> = levels[1..]
        .iter()
        .map(|&(name, l)| Segment {
            name,
            values: shown
                .iter()
                .map(|(r, _)| 100.0 * r.stats.fraction(l))
                .collect(),
        })
        .collect();
    stacked_bars(
        &dir.join("fig5-levels.png"),
        &format!("Local misses and where they are served, {label}"),
        "% of reads",
        &bars,
        &served,
    )?;
    let base_load = base.stats.load.total().max(1) as f64;
    let load = |name, f: fn(&CoopResult) -> u64| Segment {
        name,
        values: shown
            .iter()
            .map(|(r, _)| 100.0 * f(r) as f64 / base_load)
            .collect(),
    };
    stacked_bars(
        &dir.join("fig6-server-load.png"),
        &format!("Server load relative to Base, {label}"),
        "% of Base's load",
        &bars,
        &[
            load("hit origin", |r| r.stats.load.origin),
            load("hit remote node", |r| r.stats.load.remote),
            load("hit server memory", |r| r.stats.load.manager_memory),
            load("other", |r| r.stats.load.other),
        ],
    )?;
    let clients: Vec<Series> = shown
        .iter()
        .filter(|(r, _)| r.spec.algorithm != AlgorithmKind::Base)
        .map(|(r, _)| Series {
            name: r.spec.algorithm.name(),
            points: client_speedups(r, base)
                .into_iter()
                .filter_map(|(reads, s)| Some((reads as f64, s?)))
                .filter(|&(reads, _)| reads >= 1.0)
                .collect(),
        })
        .collect();
    xy(
        &dir.join("fig7-clients.png"),
        &format!("Per-client speedup against Base, {label}"),
        ("reads by the client (log)", "speedup (below 1: slowdown)"),
        &clients,
        true,
        Style::Points,
    )?;
    eprintln!(
        "wrote fig4-read-time.png, fig5-levels.png, fig6-server-load.png, fig7-clients.png in {}",
        dir.display()
    );
    Ok(())
}
