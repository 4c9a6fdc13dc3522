//! `coopcache sim sweep`: the paper's sensitivity studies (Figures 8-13),
//! each a CSV file and a PNG chart.

use crate::sim::coop::CoopArgs;
use crate::sim::replay::SimArgs;
use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use coopcache_console::plot::{Series, Style, xy};
use coopcache_core::coop::{AlgorithmKind, ClusterConfig, Level};
use coopcache_sim::coop::{CoopResult, CoopSpec, CostProfile, simulate_slice};
use coopcache_sim::trace::Request;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// Options of `coopcache sim sweep`.
#[derive(Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub(crate) sim: SimArgs,

    /// Directory for the CSV files and PNG charts.
    #[arg(long, default_value = "sweep")]
    out: PathBuf,

    /// Which sweeps to run, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    only: Vec<SweepKind>,
}

/// The sensitivity studies of the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SweepKind {
    /// Figure 8: Direct Client Cooperation against the size of the private remote cache.
    DirectRemote,
    /// Figure 9: Centrally Coordinated Caching against the fraction managed globally.
    CentralFraction,
    /// Figure 10: N-Chance against its recirculation count n.
    Chances,
    /// Figure 11: every algorithm against the client cache size.
    ClientCache,
    /// Figure 12: every algorithm against the manager's cache size.
    ManagerCache,
    /// Figure 13: every algorithm against the network's block fetch time.
    Network,
}

impl SweepKind {
    const ALL: [SweepKind; 6] = [
        SweepKind::DirectRemote,
        SweepKind::CentralFraction,
        SweepKind::Chances,
        SweepKind::ClientCache,
        SweepKind::ManagerCache,
        SweepKind::Network,
    ];

    fn name(self) -> &'static str {
        match self {
            SweepKind::DirectRemote => "fig8-direct-remote",
            SweepKind::CentralFraction => "fig9-central-fraction",
            SweepKind::Chances => "fig10-chances",
            SweepKind::ClientCache => "fig11-client-cache",
            SweepKind::ManagerCache => "fig12-manager-cache",
            SweepKind::Network => "fig13-network",
        }
    }
}

/// The algorithms compared across cache sizes and networks (the paper's
/// Figures 11-13).
const COMPARED: [AlgorithmKind; 6] = [
    AlgorithmKind::Base,
    AlgorithmKind::Direct,
    AlgorithmKind::Greedy,
    AlgorithmKind::Central,
    AlgorithmKind::NChance,
    AlgorithmKind::Best,
];

/// One simulation of a sweep: its x value and what it runs.
struct Point {
    sweep: SweepKind,
    x: f64,
    spec: CoopSpec,
}

/// The points of one sweep around `base` (the configuration the other
/// options give).
fn points(sweep: SweepKind, base: &CoopSpec, block_size: u64) -> Result<Vec<Point>> {
    let mib = |m: f64| ((m * 1024.0 * 1024.0) / block_size as f64).round().max(1.0) as usize;
    let with = |algorithm, x: f64, config: ClusterConfig, profile: CostProfile| Point {
        sweep,
        x,
        spec: CoopSpec {
            algorithm,
            config,
            profile,
            ..base.clone()
        },
    };
    let c = &base.config;
    let mut out = Vec::new();
    match sweep {
        SweepKind::DirectRemote => {
            out.push(with(AlgorithmKind::Base, 0.0, c.clone(), base.profile));
            for m in [4.0, 8.0, 16.0, 32.0, 64.0, 128.0] {
                let config = ClusterConfig {
                    direct_remote: mib(m),
                    ..c.clone()
                };
                out.push(with(AlgorithmKind::Direct, m, config, base.profile));
            }
        }
        SweepKind::CentralFraction => {
            out.push(with(AlgorithmKind::Base, 0.0, c.clone(), base.profile));
            for pct in (1..=9).map(|k| f64::from(k) * 10.0) {
                let config = ClusterConfig {
                    central_fraction: pct / 100.0,
                    ..c.clone()
                };
                out.push(with(AlgorithmKind::Central, pct, config, base.profile));
            }
        }
        SweepKind::Chances => {
            out.push(with(AlgorithmKind::Base, -1.0, c.clone(), base.profile));
            for n in 0..=5u8 {
                let config = ClusterConfig {
                    chances: n,
                    ..c.clone()
                };
                out.push(with(
                    AlgorithmKind::NChance,
                    f64::from(n),
                    config,
                    base.profile,
                ));
            }
        }
        SweepKind::ClientCache => {
            for m in [4.0, 8.0, 16.0, 32.0, 64.0] {
                let config = ClusterConfig {
                    node_capacity: mib(m),
                    direct_remote: mib(m),
                    ..c.clone()
                };
                out.extend(
                    COMPARED
                        .iter()
                        .map(|&a| with(a, m, config.clone(), base.profile)),
                );
            }
        }
        SweepKind::ManagerCache => {
            for m in [16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0] {
                let config = ClusterConfig {
                    manager_capacity: mib(m),
                    ..c.clone()
                };
                out.extend(
                    COMPARED
                        .iter()
                        .map(|&a| with(a, m, config.clone(), base.profile)),
                );
            }
        }
        SweepKind::Network => {
            for us in [
                100.0, 200.0, 400.0, 800.0, 1_600.0, 3_200.0, 6_400.0, 12_800.0,
            ] {
                let profile = base.profile.with_network_us(us);
                out.extend(COMPARED.iter().map(|&a| with(a, us, c.clone(), profile)));
            }
        }
    }
    Ok(out)
}

/// Runs `coopcache sim sweep`.
pub fn run(args: SweepArgs) -> Result<()> {
    let sim = &args.sim;
    let coop: &CoopArgs = &sim.coop;
    if coop.algorithms.is_some() {
        bail!("a sweep chooses its own algorithms: drop --algorithms");
    }
    // `sim sweep` shares `sim`'s options; those it would ignore are
    // refused rather than silently dropped.
    let ignored = [
        (
            "--json",
            sim.json,
            "it writes CSV files and charts into --out",
        ),
        (
            "--cache-size",
            !sim.cache_size.is_empty(),
            "each sweep chooses its own sizes",
        ),
        ("--plot", coop.plot.is_some(), "its charts go into --out"),
        (
            "--class-policy",
            !coop.class_policy.is_empty(),
            "it compares algorithms, not class policies",
        ),
    ];
    if let Some((flag, _, why)) = ignored.iter().find(|(_, given, _)| *given) {
        bail!("`sim sweep` does not take {flag}: {why}");
    }
    crate::sim::replay::set_jobs(sim.jobs)?;
    let input = coop.input(sim)?;
    let label = input.label.clone();
    let config = coop.config(sim, &input)?;
    let base = CoopSpec {
        algorithm: AlgorithmKind::Base,
        config,
        profile: coop.profile(),
        warmup: input.warmup,
        hardware: None,
        attribute: input.attribute.clone(),
    };
    // Every point replays the whole trace: read it into memory once.
    let requests: Vec<Request> = input
        .requests
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading {label}"))?;
    let sweeps = if args.only.is_empty() {
        SweepKind::ALL.to_vec()
    } else {
        args.only.clone()
    };
    let mut all = Vec::new();
    for &s in &sweeps {
        all.extend(points(s, &base, input.block_size)?);
    }
    let bar = progress(all.len() as u64);
    let results: Vec<CoopResult> = all
        .par_iter()
        .map(|p| {
            let r = simulate_slice(&requests, &p.spec);
            bar.inc(1);
            r
        })
        .collect::<Result<_, _>>()
        .with_context(|| format!("simulating {label}"))?;
    bar.finish_and_clear();
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    for &s in &sweeps {
        let rows: Vec<(&Point, &CoopResult)> = all
            .iter()
            .zip(&results)
            .filter(|(p, _)| p.sweep == s)
            .collect();
        write_sweep(&args.out, s, &label, &rows)?;
    }
    println!(
        "wrote {} sweeps of {label} ({} simulations) to {}",
        sweeps.len(),
        all.len(),
        args.out.display()
    );
    Ok(())
}

fn progress(len: u64) -> ProgressBar {
    if std::io::stdout().is_terminal() && std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(len);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} simulations",
            )
            .expect("the template is valid"),
        );
        bar
    } else {
        ProgressBar::hidden()
    }
}

/// Read time per read spent at the origin, and elsewhere, in ms.
fn split_ms(r: &CoopResult) -> (f64, f64, f64) {
    let s = &r.stats;
    let reads = s.reads.max(1) as f64;
    let total = s.time_us() / reads / 1000.0;
    let disk = s.time_by_level_us[Level::Origin.index()] / reads / 1000.0;
    (total, disk, total - disk)
}

fn write_sweep(
    dir: &Path,
    sweep: SweepKind,
    label: &str,
    rows: &[(&Point, &CoopResult)],
) -> Result<()> {
    let base_at = |x: f64| {
        rows.iter()
            .find(|(p, _)| {
                p.spec.algorithm == AlgorithmKind::Base && (p.x == x || !is_comparison(sweep))
            })
            .map(|(_, r)| r.stats.avg_read_us())
    };
    let mut csv = String::from(
        "sweep,x,algorithm,avg_read_us,origin_us,other_us,speedup_vs_base,local_miss_rate,origin_rate\n",
    );
    for (p, r) in rows {
        let (total, disk, other) = split_ms(r);
        let speedup = base_at(p.x).map_or(f64::NAN, |b| b / r.stats.avg_read_us());
        let _ = writeln!(
            csv,
            "{},{},{},{:.1},{:.1},{:.1},{:.4},{:.4},{:.4}",
            sweep.name(),
            p.x,
            p.spec.algorithm,
            total * 1000.0,
            disk * 1000.0,
            other * 1000.0,
            speedup,
            r.stats.local_miss_rate(),
            r.stats.fraction(Level::Origin)
        );
    }
    let csv_path = dir.join(format!("{}.csv", sweep.name()));
    std::fs::write(&csv_path, csv).with_context(|| format!("writing {}", csv_path.display()))?;

    let png = dir.join(format!("{}.png", sweep.name()));
    let of = |a: AlgorithmKind| rows.iter().filter(move |(p, _)| p.spec.algorithm == a);
    match sweep {
        SweepKind::DirectRemote => {
            let points = of(AlgorithmKind::Direct)
                .filter_map(|(p, r)| Some((p.x, base_at(p.x)? / r.stats.avg_read_us())))
                .collect();
            xy(
                &png,
                &format!("Direct Client Cooperation, {label}"),
                ("remote cache per client (MiB)", "speedup against Base"),
                &[Series {
                    name: "direct",
                    points,
                }],
                true,
                Style::Lines,
            )
        }
        SweepKind::CentralFraction | SweepKind::Chances => {
            let (algorithm, title, x_label) = if sweep == SweepKind::Chances {
                (
                    AlgorithmKind::NChance,
                    "N-Chance Forwarding",
                    "recirculation count n",
                )
            } else {
                (
                    AlgorithmKind::Central,
                    "Centrally Coordinated Caching",
                    "% of each client cache coordinated",
                )
            };
            let pick = |f: fn((f64, f64, f64)) -> f64| {
                of(algorithm).map(|(p, r)| (p.x, f(split_ms(r)))).collect()
            };
            xy(
                &png,
                &format!("{title}, {label}"),
                (x_label, "read time (ms)"),
                &[
                    Series {
                        name: "total",
                        points: pick(|t| t.0),
                    },
                    Series {
                        name: "disk",
                        points: pick(|t| t.1),
                    },
                    Series {
                        name: "other",
                        points: pick(|t| t.2),
                    },
                ],
                false,
                Style::Lines,
            )
        }
        SweepKind::ClientCache | SweepKind::ManagerCache | SweepKind::Network => {
            let series: Vec<Series> = COMPARED
                .iter()
                .map(|&a| Series {
                    name: a.name(),
                    points: of(a)
                        .map(|(p, r)| (p.x, r.stats.avg_read_us() / 1000.0))
                        .collect(),
                })
                .collect();
            let x_label = match sweep {
                SweepKind::ClientCache => "cache per client (MiB)",
                SweepKind::ManagerCache => "manager cache (MiB)",
                _ => "network block fetch, transfer and two hops (us)",
            };
            xy(
                &png,
                &format!("Average read time, {label}"),
                (x_label, "read time (ms)"),
                &series,
                true,
                Style::Lines,
            )
        }
    }
}

/// Whether a sweep compares algorithms at each x (Base is run at every x).
fn is_comparison(sweep: SweepKind) -> bool {
    matches!(
        sweep,
        SweepKind::ClientCache | SweepKind::ManagerCache | SweepKind::Network
    )
}
