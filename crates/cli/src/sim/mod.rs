//! `coopcache sim`: traces replayed through local policies (`replay`),
//! cooperative caching (`coop`), size classes (`classes`) and the
//! close-to-open history check (`consistency`); `sim sweep`, `sim mrc`
//! (with `curve`) `sim faults` and `sim live` are its subcommands.

mod classes;
mod consistency;
mod coop;
mod curve;
mod faults;
mod live;
mod mrc;
mod output;
mod plot;
mod policies;
mod replay;
mod sweep;

use clap::Subcommand;

/// `coopcache sim`: a replay, or one of its subcommands.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SimCommand {
    #[command(subcommand)]
    sub: Option<SimSub>,
    #[command(flatten)]
    args: replay::SimArgs,
}

#[derive(Subcommand)]
enum SimSub {
    /// The paper's sensitivity studies (Figures 8-13): CSV files and PNG charts.
    Sweep(Box<sweep::SweepArgs>),
    /// Miss-ratio curves: local policies on a block or object trace (with --format; LRU
    /// exact from one stack-distance pass or sampled with SHARDS), or attribute caches'
    /// read miss ratio and disk accesses (the attribute-cache paper's Figures 9 and 12-14).
    Mrc(Box<mrc::MrcArgs>),
    /// The live protocol on a virtual clock under seeded faults (drops, partitions,
    /// crashes, lying members), its invariants checked after every step.
    Faults(faults::FaultsArgs),
    /// Reads replayed through the live protocol (the daemon's own code) and the
    /// simulator's model side by side, compared read by read, at any cluster size.
    Live(live::LiveArgs),
}

/// Runs `coopcache sim`.
pub fn run(cmd: SimCommand) -> anyhow::Result<()> {
    match cmd {
        SimCommand {
            sub: Some(SimSub::Sweep(args)),
            ..
        } => sweep::run(*args),
        SimCommand {
            sub: Some(SimSub::Mrc(args)),
            ..
        } => mrc::run(*args),
        SimCommand {
            sub: Some(SimSub::Faults(args)),
            ..
        } => faults::run(args),
        SimCommand {
            sub: Some(SimSub::Live(args)),
            ..
        } => live::run(args),
        SimCommand { args, .. } => replay::run(args),
    }
}
