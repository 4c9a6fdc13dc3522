//! `coopcache sim faults`: the live protocol under seeded faults, one seed
//! (a replay, with its trace of events) or many (a soak, with a summary).

use crate::progress::Bar;
use anyhow::{Context, Result, bail};
use coopcache_core::coop::AlgorithmKind;
use coopcache_sim::faults::{
    FaultKind, Mode, RunConfig, Summary, replay_command, run_seed, run_seeds,
};
use std::time::Instant;

const AFTER_HELP: &str = "\
Examples:
  coopcache sim faults                           1,000 seeds of 10,000 reads
  coopcache sim faults --seeds 100000 --ops 100000 --mode liveness
  coopcache sim faults --seed 42 --trace         replay one seed, event by event

Every seed draws an algorithm, a cluster of 3-6 nodes (up to 2 of them lying),
files, and fault rates; a violation prints its seed and the command that
replays it.";

/// Runs the live protocol (the daemon's own code) on a virtual clock under
/// seeded faults, checking its invariants after every step.
#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct FaultsArgs {
    /// Runs only this seed, and prints what it did (a replay).
    #[arg(long)]
    seed: Option<u64>,
    /// Seeds to run, from --first.
    #[arg(long, default_value_t = 1000)]
    seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    first: u64,
    /// Reads per seed before the faults stop.
    #[arg(long, default_value_t = 10_000)]
    ops: u64,
    /// `safety` (faults at full rate: right bytes, bounded tables, no
    /// panic) or `liveness` (faults limited: every read also finishes
    /// within a bound).
    #[arg(long, default_value = "safety")]
    mode: Mode,
    /// Runs every seed with this live algorithm instead of the one it draws.
    #[arg(long)]
    algorithm: Option<String>,
    /// With --seed: prints every event.
    #[arg(long, requires = "seed")]
    trace: bool,
}

pub fn run(args: FaultsArgs) -> Result<()> {
    let algorithm = args
        .algorithm
        .as_deref()
        .map(AlgorithmKind::parse_live)
        .transpose()
        .context("--algorithm")?;
    if args.ops == 0 {
        bail!("--ops must be at least 1");
    }
    let base = RunConfig {
        seed: args.seed.unwrap_or(args.first),
        ops: args.ops,
        mode: args.mode,
        algorithm,
        trace: args.trace,
    };
    if args.seed.is_some() {
        return replay(&base);
    }
    if args.seeds == 0 {
        bail!("--seeds must be at least 1");
    }
    let bar = Bar::new(args.seeds, "seeds");
    let started = Instant::now();
    let summary = run_seeds(args.first, args.seeds, &base, |_| bar.inc());
    drop(bar);
    report(&summary, &base, started.elapsed().as_secs_f64());
    match summary.failures.len() {
        0 => Ok(()),
        n => bail!("{n} of {} seeds broke an invariant", summary.seeds),
    }
}

fn replay(cfg: &RunConfig) -> Result<()> {
    let (outcome, trace) = run_seed(cfg);
    for line in trace.unwrap_or_default() {
        println!("{line}");
    }
    println!("seed {}: {}", outcome.seed, outcome.plan);
    println!("fingerprint {:016x}", outcome.fingerprint);
    let c = &outcome.counts;
    println!(
        "{} reads, {} steps, {} messages: {} right, {} failed, {} lost in crashes, {} wrong as the trust model allows",
        c.ops, c.steps, c.messages, c.reads_ok, c.reads_failed, c.reads_lost, c.wrong_tolerated
    );
    match outcome.failure {
        None => Ok(()),
        Some(f) => bail!("seed {} broke an invariant {f}", cfg.seed),
    }
}

fn report(s: &Summary, base: &RunConfig, secs: f64) {
    let c = &s.counts;
    println!(
        "{} seeds ({} mode), {} reads, {} steps, {} messages in {secs:.1} s ({:.0} reads/s)",
        s.seeds,
        base.mode,
        c.ops,
        c.steps,
        c.messages,
        c.ops as f64 / secs.max(1e-9)
    );
    println!(
        "reads: {} right, {} failed (origin errors), {} lost in crashes, {} wrong as the trust model allows",
        c.reads_ok, c.reads_failed, c.reads_lost, c.wrong_tolerated
    );
    let faults: Vec<String> = FaultKind::ALL
        .iter()
        .map(|k| format!("{} {}", k.name(), c.faults[*k as usize]))
        .collect();
    println!("faults: {}", faults.join(", "));
    println!("messages refused for their sender's role: {}", c.refused);
    if c.unified > 0 {
        println!(
            "blocks hosts kept once for several private owners: {}",
            c.unified
        );
    }
    println!("violations: {}", s.failures.len());
    for (seed, f) in s.failures.iter().take(20) {
        let cfg = RunConfig {
            seed: *seed,
            ..base.clone()
        };
        println!("  seed {seed}: {f}\n    replay: {}", replay_command(&cfg));
    }
}
