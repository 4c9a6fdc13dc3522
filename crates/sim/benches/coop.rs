//! Simulation throughput of the cooperative caching algorithms on the
//! sprite-like workload (42 clients, 700,000 block requests), the benchmark
//! of `docs/benchmarks.md`.
//!
//! The workload is generated into memory first (not timed); each algorithm
//! then replays it `--reps` times from a cold cluster, one run at a time on
//! one core, and the median is reported.
//!
//! ```sh
//! cargo bench -p coopcache-sim --bench coop -- [--reps 5] [--algorithms nchance,greedy]
//! ```

use coopcache_core::coop::{
    AlgorithmKind, Cluster, ClusterConfig, ClusterVisitor, ManagerMachine, NodeMachine,
};
use coopcache_sim::coop::{CostProfile, Simulation};
use coopcache_sim::trace::Request;
use coopcache_sim::workload::SpriteLike;
use std::time::{Duration, Instant};

struct Measured {
    elapsed: Duration,
    messages: u64,
    avg_read_us: f64,
}

struct Run<'a> {
    requests: &'a [Request],
    warmup: u64,
}

impl ClusterVisitor<u64> for Run<'_> {
    type Output = Measured;

    fn visit<N, M>(self, cluster: Cluster<N, M>) -> Measured
    where
        N: NodeMachine<u64, ()> + Send + 'static,
        M: ManagerMachine<u64, ()> + Send + 'static,
    {
        let mut sim = Simulation::new(cluster, CostProfile::ATM_1994, self.warmup);
        let start = Instant::now();
        for r in self.requests {
            sim.request(r)
                .expect("the workload's clients fit the cluster");
        }
        let elapsed = start.elapsed();
        let stats = sim.into_stats();
        Measured {
            elapsed,
            messages: stats.messages,
            avg_read_us: stats.avg_read_us(),
        }
    }
}

fn main() {
    let mut reps = 5usize;
    let mut algorithms = AlgorithmKind::ALL.to_vec();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--reps" => reps = args.next().and_then(|v| v.parse().ok()).expect("--reps N"),
            "--algorithms" => {
                algorithms = args
                    .next()
                    .expect("--algorithms LIST")
                    .split(',')
                    .map(|a| a.parse().expect("an algorithm name"))
                    .collect()
            }
            _ => {} // cargo bench passes --bench
        }
    }
    let workload = SpriteLike::default();
    let start = Instant::now();
    let requests: Vec<Request> = workload.generate().collect();
    println!(
        "sprite-like: {} requests from {} clients generated in {:.2} s (not included below)",
        requests.len(),
        workload.clients,
        start.elapsed().as_secs_f64()
    );
    println!(
        "median of {reps} runs per algorithm, one at a time, from a cold cluster (paper defaults)\n"
    );
    println!(
        "| algorithm | messages per request | avg read (ms) | median time (ms) | median Mreq/s | min-max Mreq/s |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let config = ClusterConfig::paper(workload.clients);
    let warmup = requests.len() as u64 * 4 / 7;
    for algorithm in algorithms {
        let runs: Vec<Measured> = (0..reps)
            .map(|_| {
                let run = Run {
                    requests: &requests,
                    warmup,
                };
                algorithm
                    .build(&config, run)
                    .expect("the paper's configuration is valid")
            })
            .collect();
        let mut times: Vec<Duration> = runs.iter().map(|m| m.elapsed).collect();
        times.sort();
        let rate = |d: Duration| requests.len() as f64 / d.as_secs_f64() / 1e6;
        let median = times[times.len() / 2];
        println!(
            "| {algorithm} | {:.2} | {:.2} | {:.1} | {:.2} | {:.2}-{:.2} |",
            runs[0].messages as f64 / requests.len() as f64,
            runs[0].avg_read_us / 1000.0,
            median.as_secs_f64() * 1e3,
            rate(median),
            rate(times[times.len() - 1]),
            rate(times[0]),
        );
    }
}
