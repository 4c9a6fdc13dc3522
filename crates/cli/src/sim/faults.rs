//! `coopcache sim faults`: the live protocol under seeded faults, one seed
//! (a replay, with its trace of events) or many (a soak, with a summary).

use anyhow::{Context, Result, bail};
use coopcache_console::progress::Bar;
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
    /// Runs every seed with a cluster of this many nodes (at least 3)
    /// instead of the 3-6 it draws. Memory grows with its square, and
    /// seeds run one per core at once: 1.5 GB a seed at 512 nodes, 9.3 GB
    /// at 1,000 (docs/reliability.md).
    #[arg(long, value_parser = clap::value_parser!(u32).range(3..=4096))]
    nodes: Option<u32>,
    /// With --seed: prints every event.
    #[arg(long, requires = "seed")]
    trace: bool,
    /// One JSON object instead of the report (the counters, the faults by
    /// kind, each violation with its replay command).
    #[arg(long, conflicts_with = "trace")]
    json: bool,
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
        nodes: args.nodes,
        trace: args.trace,
    };
    if args.seed.is_some() {
        return replay(&base, args.json);
    }
    if args.seeds == 0 {
        bail!("--seeds must be at least 1");
    }
    let bar = Bar::new(args.seeds, "seeds");
    let started = Instant::now();
    let summary = run_seeds(args.first, args.seeds, &base, |_| bar.inc());
    drop(bar);
    let secs = started.elapsed().as_secs_f64();
    if args.json {
        coopcache_console::output::print_json([&summary_json(&summary, &base, secs)])?;
    } else {
        report(&summary, &base, secs);
    }
    match summary.failures.len() {
        0 => Ok(()),
        n => bail!("{n} of {} seeds broke an invariant", summary.seeds),
    }
}

fn replay(cfg: &RunConfig, json: bool) -> Result<()> {
    let (outcome, trace) = run_seed(cfg);
    if json {
        let mut v = counts_json(&outcome.counts);
        v["seed"] = outcome.seed.into();
        v["plan"] = outcome.plan.to_string().into();
        v["fingerprint"] = format!("{:016x}", outcome.fingerprint).into();
        v["failure"] = outcome.failure.as_ref().map(|f| f.to_string()).into();
        coopcache_console::output::print_json([&v])?;
        return match outcome.failure {
            None => Ok(()),
            Some(f) => bail!("seed {} broke an invariant {f}", cfg.seed),
        };
    }
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
    println!(
        "membership: {} changes of a node's live members, {} gossip updates about others screened",
        c.member_changes, c.screened
    );
    if c.opens_answered + c.opens_unanswered > 0 {
        println!(
            "exclusive opens: {} answered by their manager ({} with the first block), {} by none; {} writes committed",
            c.opens_answered, c.first_served, c.opens_unanswered, c.commits
        );
    }
    if c.listings_answered + c.listings_unanswered > 0 {
        println!(
            "exclusive listings: {} answered by the directory's manager, {} by none",
            c.listings_answered, c.listings_unanswered
        );
    }
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

/// The counters of one seed or of many, as JSON.
fn counts_json(c: &coopcache_sim::faults::Counts) -> serde_json::Value {
    let faults: serde_json::Map<String, serde_json::Value> = FaultKind::ALL
        .iter()
        .map(|k| (k.name().to_string(), c.faults[*k as usize].into()))
        .collect();
    serde_json::json!({
        "reads": c.ops,
        "steps": c.steps,
        "messages": c.messages,
        "reads_ok": c.reads_ok,
        "reads_failed": c.reads_failed,
        "reads_lost": c.reads_lost,
        "wrong_tolerated": c.wrong_tolerated,
        "faults": faults,
        "refused": c.refused,
        "unified": c.unified,
        "opens_answered": c.opens_answered,
        "opens_unanswered": c.opens_unanswered,
        "first_served": c.first_served,
        "commits": c.commits,
        "member_changes": c.member_changes,
        "screened": c.screened,
    })
}

/// A soak's summary as JSON: what `report` prints, and every violation.
fn summary_json(s: &Summary, base: &RunConfig, secs: f64) -> serde_json::Value {
    let mut v = counts_json(&s.counts);
    v["seeds"] = s.seeds.into();
    v["mode"] = base.mode.to_string().into();
    v["seconds"] = secs.into();
    v["violations"] = s
        .failures
        .iter()
        .map(|(seed, f)| {
            let cfg = RunConfig {
                seed: *seed,
                ..base.clone()
            };
            serde_json::json!({"seed": seed, "failure": f.to_string(), "replay": replay_command(&cfg)})
        })
        .collect();
    v
}
