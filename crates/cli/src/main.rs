//! The `coopcache` command.

mod classes;
mod coop;
mod mrc;
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
    Sim(SimCommand),
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim(SimCommand {
            sub: Some(SimSub::Sweep(args)),
            ..
        }) => sweep::run(*args),
        Command::Sim(SimCommand {
            sub: Some(SimSub::Mrc(args)),
            ..
        }) => mrc::run(args),
        Command::Sim(SimCommand { args, .. }) => sim::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
