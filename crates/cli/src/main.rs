//! The `coopcache` command.

mod coop;
mod output;
mod plot;
mod progress;
mod sim;
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
    /// Replay a block trace through local caches and report hits and misses.
    Sim(sim::SimArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim(args) => sim::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
