//! `coopcache bench NAME`: live benchmarks on loopback, each comparing
//! within one run (absolute times on a shared machine drift).

mod algorithms;
mod algorithms_report;
mod baseline;
mod ceiling;
mod latency;
mod latency_report;
mod measure;
mod replay;

use anyhow::Result;
use clap::Subcommand;

/// The benchmarks.
#[derive(Subcommand)]
pub enum BenchCmd {
    /// Remote-memory hits for 8 KiB blocks between two nodes, next to the
    /// loopback TCP ceiling and memcached and Redis on the same machine.
    Latency(Box<latency::LatencyArgs>),
    /// A multi-client workload replayed through a live loopback cluster
    /// for each algorithm, next to the simulator's prediction.
    Algorithms(Box<algorithms::AlgorithmsArgs>),
}

/// Runs one benchmark.
pub fn run(cmd: BenchCmd) -> Result<()> {
    match cmd {
        BenchCmd::Latency(args) => latency::run(*args),
        BenchCmd::Algorithms(args) => algorithms::run(*args),
    }
}
