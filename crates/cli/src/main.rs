//! The `coopcache` command.

mod access;
mod bench;
mod classes;
mod cluster;
mod coop;
mod demo;
mod faults;
mod gateway_args;
mod live;
mod loopback;
mod mrc;
mod node;
mod output;
mod plot;
mod progress;
mod sim;
mod sweep;
mod table;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// coopcache: a cooperative cache for clusters, and its trace-driven simulator.
#[derive(Parser)]
#[command(version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate: local policies on a trace, or (with --algorithms) cooperative caching on a
    /// multi-client trace or workload; `sim sweep` for the sensitivity studies; `sim mrc`
    /// for attribute caches.
    Sim(Box<SimCommand>),
    /// Runs a cooperative cache node (the daemon).
    Node(Box<node::NodeArgs>),
    /// The cluster's CA and node certificates.
    #[command(subcommand)]
    Cluster(cluster::ClusterCmd),
    /// Writes a file (or a range of it) read through a node to stdout.
    Cat(access::CatArgs),
    /// A node's members, memory, reads per level and origin traffic.
    Status(access::StatusArgs),
    /// A 4-node cluster on loopback, read with and without cooperation.
    Demo(Box<demo::DemoArgs>),
    /// Live benchmarks on a loopback cluster: the papers' experiments
    /// (netcache, staggered, zipf-web), latency against memcached and
    /// Redis, algorithms against the simulator.
    #[command(subcommand)]
    Bench(bench::BenchCmd),
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
struct SimCommand {
    #[command(subcommand)]
    sub: Option<SimSub>,
    #[command(flatten)]
    args: sim::SimArgs,
}

#[derive(Subcommand)]
enum SimSub {
    /// The paper's sensitivity studies (Figures 8-13): CSV files and PNG charts.
    Sweep(Box<sweep::SweepArgs>),
    /// Attribute caches: read request miss ratio and disk accesses against total cache size
    /// for several configurations (the attribute-cache paper's Figures 9 and 12-14).
    Mrc(mrc::MrcArgs),
    /// The live protocol on a virtual clock under seeded faults (drops, partitions,
    /// crashes, lying members), its invariants checked after every step.
    Faults(faults::FaultsArgs),
}

fn run_sim(cmd: SimCommand) -> anyhow::Result<()> {
    match cmd {
        SimCommand {
            sub: Some(SimSub::Sweep(args)),
            ..
        } => sweep::run(*args),
        SimCommand {
            sub: Some(SimSub::Mrc(args)),
            ..
        } => mrc::run(args),
        SimCommand {
            sub: Some(SimSub::Faults(args)),
            ..
        } => faults::run(args),
        SimCommand { args, .. } => sim::run(args),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim(sim) => run_sim(*sim),
        Command::Node(args) => node::run(*args),
        Command::Cluster(cmd) => cluster::run(cmd),
        Command::Cat(args) => access::cat(args),
        Command::Status(args) => access::status(args),
        Command::Demo(args) => demo::run(*args),
        Command::Bench(cmd) => bench::run(cmd),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
