//! `coopcache sim live`: the cluster replay through the live protocol
//! (`coopcache_sim::live_replay`), read by read beside the simulator's
//! model, at any cluster size.

use anyhow::{Context, Result, bail};
use coopcache_console::table;
use coopcache_core::coop::{AlgorithmKind, Level};
use coopcache_sim::live_replay::{LiveReplay, LiveReplayConfig, live_replay, mixed_reads};
use std::time::Instant;

const AFTER_HELP: &str = "\
Examples:
  coopcache sim live                                 64 nodes, every live algorithm
  coopcache sim live --nodes 1000 --reads 50000
  coopcache sim live --algorithms nchance --nodes 16 --capacity 8
  coopcache sim live --algorithms direct --lenders 16   48 readers park at 16 idle nodes

Each read runs to quiescence through the nodes' own protocol (the code every
`coopcache node` runs, messages through one in-order queue), then through the
simulator's model of the algorithm; both must serve it from the same level and
leave every node caching as many blocks. Half of each node's reads fall in a
share of its own, half on blocks every node reads (low ids first). With
--lenders, the lenders read nothing, and every member first hears on its pings
who is idle. A difference,
wrong contents or any violation, timeout or integrity failure exits non-zero.";

/// Replays reads through the live protocol and the simulator's model side by
/// side, checking them read by read.
#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct LiveArgs {
    /// Live algorithms, comma-separated.
    #[arg(long, default_value = "base,greedy,nchance,hash,direct")]
    algorithms: String,
    /// Nodes in the cluster. Every node lists every member, so memory grows
    /// with the square: 0.5 GB at 1,000 nodes, 1 GB at 4,000.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    nodes: u32,
    /// Reads replayed per algorithm.
    #[arg(long, default_value_t = 20_000)]
    reads: usize,
    /// Distinct blocks read (default: 64 per node).
    #[arg(long)]
    blocks: Option<u64>,
    /// Blocks each node caches.
    #[arg(long, default_value_t = 16)]
    capacity: usize,
    /// The last N nodes read nothing and, idle, lend their memory (heard
    /// on the members' pings before the replay): Direct parks its
    /// evictions at them, N-Chance forwards its singlets to them.
    #[arg(long, default_value_t = 0)]
    lenders: u32,
    /// N-Chance's recirculation count.
    #[arg(long, default_value_t = 2)]
    chances: u8,
    /// Seed of the reads and of the algorithms' random choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// One JSON object per algorithm instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: LiveArgs) -> Result<()> {
    let kinds: Vec<AlgorithmKind> = args
        .algorithms
        .split(',')
        .map(|s| AlgorithmKind::parse_live(s.trim()))
        .collect::<Result<_, _>>()
        .context("--algorithms")?;
    if args.reads == 0 {
        bail!("--reads must be at least 1");
    }
    if args.capacity == 0 {
        bail!("--capacity must be at least 1 block");
    }
    let blocks = args.blocks.unwrap_or(64 * u64::from(args.nodes));
    if blocks == 0 {
        bail!("--blocks must be at least 1");
    }
    if args.lenders >= args.nodes {
        bail!(
            "--lenders {} leaves no node to read: expected fewer than --nodes ({})",
            args.lenders,
            args.nodes
        );
    }
    let readers = args.nodes - args.lenders;
    let reads = mixed_reads(readers, blocks, args.reads, args.seed);
    let mut rows = Vec::new();
    for kind in kinds {
        let cfg = LiveReplayConfig {
            algorithm: kind,
            nodes: args.nodes,
            capacity: args.capacity,
            chances: args.chances,
            seed: args.seed,
            classes: Default::default(),
            lenders: (readers..args.nodes).collect(),
        };
        eprintln!("{kind}: {} reads on {} nodes", args.reads, args.nodes);
        let started = Instant::now();
        let r = live_replay(&cfg, &reads).with_context(|| format!("{kind}"))?;
        let secs = started.elapsed().as_secs_f64();
        eprintln!("{kind}: done in {secs:.1} s");
        rows.push((kind, r, secs));
    }
    if args.json {
        let objects = rows
            .iter()
            .map(|(kind, r, secs)| json(*kind, &args, r, *secs));
        coopcache_console::output::print_json(objects)?;
    } else {
        print(&rows);
    }
    let broken: Vec<String> = rows
        .iter()
        .filter(|(_, r, _)| !r.holds())
        .map(|(kind, r, _)| match &r.first_difference {
            Some(d) => format!("{kind}: read {} differs: {}", d.read, d.what),
            None => format!(
                "{kind}: {} wrong contents, {} faults",
                r.wrong_contents, r.faults
            ),
        })
        .collect();
    match broken.is_empty() {
        true => Ok(()),
        false => bail!(
            "the live protocol and the model parted:\n  {}",
            broken.join("\n  ")
        ),
    }
}

fn print(rows: &[(AlgorithmKind, LiveReplay, f64)]) {
    let header = [
        "algorithm",
        "reads",
        "agreed",
        "local",
        "manager",
        "peer",
        "origin",
        "messages",
        "faults",
        "wrong",
        "s",
    ];
    let at = |r: &LiveReplay, l: Level| r.levels[l.index()].to_string();
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|(kind, r, secs)| {
            vec![
                kind.to_string(),
                r.reads.to_string(),
                r.agreed.to_string(),
                at(r, Level::Local),
                at(r, Level::ManagerMemory),
                at(r, Level::RemoteNode),
                at(r, Level::Origin),
                r.messages.to_string(),
                r.faults.to_string(),
                r.wrong_contents.to_string(),
                format!("{secs:.1}"),
            ]
        })
        .collect();
    table::print(&header, &body, 1);
}

fn json(kind: AlgorithmKind, args: &LiveArgs, r: &LiveReplay, secs: f64) -> serde_json::Value {
    serde_json::json!({
        "algorithm": kind.to_string(),
        "nodes": args.nodes,
        "lenders": args.lenders,
        "reads": r.reads,
        "agreed": r.agreed,
        "local": r.levels[Level::Local.index()],
        "manager": r.levels[Level::ManagerMemory.index()],
        "peer": r.levels[Level::RemoteNode.index()],
        "origin": r.levels[Level::Origin.index()],
        "messages": r.messages,
        "origin_reads": r.origin_reads,
        "faults": r.faults,
        "wrong_contents": r.wrong_contents,
        "first_difference": r.first_difference.as_ref().map(|d| format!("read {}: {}", d.read, d.what)),
        "seconds": secs,
    })
}
