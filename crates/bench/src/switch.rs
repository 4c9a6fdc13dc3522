//! `coopcache bench switch`: Netcache's busy/idle switch. A busy node
//! (its origin private by default) parks its evictions on an idle host
//! until the host's memory is full of them; then the host starts a
//! workload of its own, a file as large as its memory read twice, while
//! the busy node keeps reading. The host's own blocks take its memory back
//! from the foreign ones first, it says it is busy and is parked on no
//! more, and once its reads stop it lends again. The foreign and own
//! bytes the host holds are sampled over time and plotted.

use super::common::{in_tempdir, report_rows, rng, write_origin_file, wrong_bytes};
use super::netcache::{prime, wait_for_idle};
use crate::loopback::{LoopbackSpec, shutdown, start_cluster};
use anyhow::{Result, bail};
use coopcache_console::args::{ReportArgs, Seed};
use coopcache_console::args::{parse_duration, parse_size};
use coopcache_console::plot::{Series, Style, xy};
use coopcache_core::coop::AlgorithmKind;
use coopcache_node::NodeHandle;
use rand::Rng;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const BUSY_FILE: &str = "busy.bin";
const HOST_FILE: &str = "host.bin";

#[derive(clap::Args)]
pub struct SwitchArgs {
    /// Block cache of each node; the busy node's file is 1.6x this, the
    /// host's own file 0.9x.
    #[arg(long, default_value = "16MiB", value_parser = parse_size)]
    cache: u64,
    /// Cache block size.
    #[arg(long, default_value = "8KiB", value_parser = parse_size)]
    block_size: u64,
    /// Emulated latency of every origin request.
    #[arg(long, default_value = "2ms", value_parser = parse_duration)]
    origin_delay: Duration,
    /// How long a node's own reads must have stopped before it lends its
    /// memory.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    idle_after: Duration,
    /// The busy node's origin is shared rather than private (its parked
    /// blocks then rest on the host in the clear).
    #[arg(long)]
    shared: bool,
    /// How often the host's memory is sampled.
    #[arg(long, default_value = "100ms", value_parser = parse_duration)]
    sample_every: Duration,
    /// How long to go on sampling once the host's reads stop (it lends
    /// again after --idle-after).
    #[arg(long, default_value = "4s", value_parser = parse_duration)]
    after: Duration,
    /// Block reads the busy node keeps in flight throughout.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    #[command(flatten)]
    pub(crate) seed: Seed,
    #[command(flatten)]
    report: ReportArgs,
}

/// The host's memory at one moment.
#[derive(Clone, Copy, serde::Serialize)]
struct Point {
    /// Seconds since the busy node started.
    t: f64,
    /// Blocks the host keeps for the busy node, and of its own.
    foreign: u64,
    own: u64,
}

#[derive(serde::Serialize)]
struct Row {
    bench: &'static str,
    private: bool,
    cache: u64,
    block_size: u64,
    /// Blocks the host's memory holds.
    host_blocks: u64,
    /// When the host started reading, and stopped, seconds from the start.
    switch_s: f64,
    host_done_s: f64,
    /// Foreign blocks the host held when it started reading, and when it
    /// stopped (its own took the room they needed from these first).
    foreign_at_switch: u64,
    foreign_at_done: u64,
    /// Own blocks the host held when it stopped reading (all it read, up
    /// to its memory, if none of its own gave way to a foreign block).
    own_at_done: u64,
    /// The fewest foreign blocks it held from the switch until it lent
    /// again, and how long after its reads stopped it lent again (foreign
    /// blocks rising past that least: idle after `--idle-after`, heard on
    /// the next ping).
    foreign_least: u64,
    lends_again_after_s: Option<f64>,
    /// Of the host's second pass over its own file, the blocks read from
    /// its own memory (all of them: it got its memory back).
    second_pass_local: u64,
    second_pass_blocks: u64,
    /// Foreign blocks the host held at the end (lending again).
    foreign_at_end: u64,
    wrong_bytes: u64,
    series: Vec<Point>,
}

pub(crate) fn run(args: SwitchArgs) -> Result<()> {
    if args.block_size == 0 || args.cache < 32 * args.block_size || args.concurrency == 0 {
        bail!("--cache must hold at least 32 blocks, and --concurrency be at least 1");
    }
    if args.sample_every.is_zero() {
        bail!("--sample-every must be more than 0");
    }
    let row = in_tempdir("coopcache-bench-switch-", |dir| bench(&args, dir))?;
    report_rows(
        args.report.json,
        std::slice::from_ref(&row),
        print_table,
        args.report.plot.as_deref(),
        plot,
        |r| r.wrong_bytes,
    )
}

async fn bench(args: &SwitchArgs, dir: PathBuf) -> Result<Row> {
    let origin = dir.join("origin");
    let mut r = rng(args.seed.value, 1);
    let busy_data = Arc::new(write_origin_file(
        &origin,
        BUSY_FILE,
        args.cache * 8 / 5,
        &mut r,
    )?);
    let host_data = write_origin_file(&origin, HOST_FILE, args.cache * 9 / 10, &mut r)?;
    let mut spec = LoopbackSpec::new(&dir, 2, origin)?;
    spec.algorithm = AlgorithmKind::Direct;
    spec.block_size = u32::try_from(args.block_size)?;
    spec.origin_delay = args.origin_delay;
    spec.idle_after = Some(args.idle_after);
    if !args.shared {
        spec.private = vec![0];
    }
    let nodes = start_cluster(&spec, &[args.cache, args.cache]).await?;
    let result = run_switch(args, &nodes, busy_data, &host_data).await;
    shutdown(&nodes);
    let (series, marks, wrong) = result?;
    Ok(summarize(args, series, marks, wrong))
}

/// When the host started and stopped reading, seconds from the start, and
/// how many of its second pass came from its own memory.
struct Marks {
    switch_s: f64,
    host_done_s: f64,
    second_pass_local: u64,
    second_pass_blocks: u64,
}

async fn run_switch(
    args: &SwitchArgs,
    nodes: &[Arc<NodeHandle>],
    busy_data: Arc<Vec<u8>>,
    host_data: &[u8],
) -> Result<(Vec<Point>, Marks, u64)> {
    let (busy, host) = (nodes[0].clone(), nodes[1].clone());
    wait_for_idle(nodes, args.idle_after).await?;
    let start = Instant::now();
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = tokio::spawn(sample(
        host.clone(),
        start,
        args.sample_every,
        sampling.clone(),
    ));
    eprintln!("switch: the busy node fills the idle host ...");
    let mut wrong = 0;
    for _ in 0..2 {
        wrong += prime(&busy, BUSY_FILE, &busy_data, args.block_size, 8).await?;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    // The busy node keeps reading while the host works.
    let reading = Arc::new(AtomicBool::new(true));
    let background = tokio::spawn(busy_reads(
        busy.clone(),
        busy_data,
        args.block_size,
        args.concurrency,
        args.seed.value,
        reading.clone(),
    ));
    eprintln!("switch: the host starts its own workload ...");
    let switch_s = start.elapsed().as_secs_f64();
    wrong += prime(&host, HOST_FILE, host_data, args.block_size, 8).await?;
    let before = super::common::Counters::of(&host).await?;
    wrong += prime(&host, HOST_FILE, host_data, args.block_size, 8).await?;
    let second = super::common::Counters::of(&host).await?.since(&before);
    let host_done_s = start.elapsed().as_secs_f64();
    eprintln!(
        "switch: the host is done; sampling {:?} more ...",
        args.after
    );
    tokio::time::sleep(args.after).await;
    reading.store(false, Ordering::Relaxed);
    sampling.store(false, Ordering::Relaxed);
    wrong += background.await??;
    let series = sampler.await??;
    let blocks = host_data.len().div_ceil(args.block_size as usize) as u64;
    Ok((
        series,
        Marks {
            switch_s,
            host_done_s,
            second_pass_local: second.at("local"),
            second_pass_blocks: blocks,
        },
        wrong,
    ))
}

/// The host's foreign and own blocks every `every` until told to stop.
async fn sample(
    host: Arc<NodeHandle>,
    start: Instant,
    every: Duration,
    go_on: Arc<AtomicBool>,
) -> Result<Vec<Point>> {
    let mut points = Vec::new();
    let mut tick = tokio::time::interval(every);
    while go_on.load(Ordering::Relaxed) {
        tick.tick().await;
        let s = host.status().await?;
        points.push(Point {
            t: start.elapsed().as_secs_f64(),
            foreign: s.foreign_blocks,
            own: s.cached_blocks.saturating_sub(s.foreign_blocks),
        });
    }
    Ok(points)
}

/// Random blocks of the busy node's file, `concurrency` at a time, until
/// told to stop; the wrong bytes seen.
async fn busy_reads(
    busy: Arc<NodeHandle>,
    data: Arc<Vec<u8>>,
    block_size: u64,
    concurrency: usize,
    seed: u64,
    go_on: Arc<AtomicBool>,
) -> Result<u64> {
    let path: Arc<str> = Arc::from(BUSY_FILE);
    let version = busy.stat(&path).await?;
    let blocks = data.len().div_ceil(block_size as usize) as u32;
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let (busy, data, path, version) =
            (busy.clone(), data.clone(), path.clone(), version.clone());
        let go_on = go_on.clone();
        let mut r = rng(seed, 100 + worker as u64);
        tasks.push(tokio::spawn(async move {
            let mut wrong = 0;
            while go_on.load(Ordering::Relaxed) {
                let b = r.random_range(0..blocks);
                let (got, _) = busy.read_block(&path, &version, b).await?;
                let start = b as usize * block_size as usize;
                let end = (start + block_size as usize).min(data.len());
                wrong += wrong_bytes(&got, &data[start..end]);
            }
            anyhow::Ok(wrong)
        }));
    }
    let mut wrong = 0;
    for t in tasks {
        wrong += t.await??;
    }
    Ok(wrong)
}

fn summarize(args: &SwitchArgs, series: Vec<Point>, m: Marks, wrong: u64) -> Row {
    let at_or_before = |t: f64| {
        series
            .iter()
            .take_while(|p| p.t <= t)
            .last()
            .map_or(0, |p| p.foreign)
    };
    let foreign_at_switch = at_or_before(m.switch_s);
    let done = series
        .iter()
        .take_while(|p| p.t <= m.host_done_s)
        .last()
        .copied();
    // The least from the switch on, before foreign blocks rise again.
    let after_switch: Vec<&Point> = series.iter().filter(|p| p.t >= m.switch_s).collect();
    let least_at = after_switch
        .iter()
        .enumerate()
        .min_by_key(|(_, p)| p.foreign)
        .map_or(0, |(i, _)| i);
    let foreign_least = after_switch.get(least_at).map_or(0, |p| p.foreign);
    let lends_again_after_s = after_switch[least_at..]
        .iter()
        .find(|p| p.t > m.host_done_s && p.foreign > foreign_least + 16)
        .map(|p| p.t - m.host_done_s);
    Row {
        bench: "switch",
        private: !args.shared,
        cache: args.cache,
        block_size: args.block_size,
        host_blocks: args.cache / args.block_size,
        switch_s: m.switch_s,
        host_done_s: m.host_done_s,
        foreign_at_switch,
        foreign_at_done: done.map_or(0, |p| p.foreign),
        own_at_done: done.map_or(0, |p| p.own),
        foreign_least,
        lends_again_after_s,
        second_pass_local: m.second_pass_local,
        second_pass_blocks: m.second_pass_blocks,
        foreign_at_end: series.last().map_or(0, |p| p.foreign),
        wrong_bytes: wrong,
        series,
    }
}

fn print_table(rows: &[Row]) {
    let header = [
        "origin",
        "host blocks",
        "switch s",
        "host done s",
        "foreign at switch",
        "foreign/own at done",
        "least foreign",
        "lends again after s",
        "2nd pass local",
        "foreign at end",
        "wrong bytes",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                if r.private { "private" } else { "shared" }.into(),
                r.host_blocks.to_string(),
                format!("{:.1}", r.switch_s),
                format!("{:.1}", r.host_done_s),
                r.foreign_at_switch.to_string(),
                format!("{}/{}", r.foreign_at_done, r.own_at_done),
                r.foreign_least.to_string(),
                r.lends_again_after_s
                    .map_or("never".into(), |t| format!("{t:.2}")),
                format!("{}/{}", r.second_pass_local, r.second_pass_blocks),
                r.foreign_at_end.to_string(),
                r.wrong_bytes.to_string(),
            ]
        })
        .collect();
    coopcache_console::table::print(&header, &cells, 0);
}

/// The host's foreign and own memory over time, with the switch marked.
fn plot(path: &Path, rows: &[Row]) -> Result<()> {
    let Some(r) = rows.first() else {
        return Ok(());
    };
    let mib = r.block_size as f64 / f64::from(1 << 20);
    let points = |f: &dyn Fn(&Point) -> u64| -> Vec<(f64, f64)> {
        r.series.iter().map(|p| (p.t, f(p) as f64 * mib)).collect()
    };
    let top = r.host_blocks as f64 * mib;
    let mark = |t: f64| vec![(t, 0.0), (t, top)];
    let series = [
        Series {
            name: "foreign (the busy node's blocks)",
            points: points(&|p| p.foreign),
        },
        Series {
            name: "own",
            points: points(&|p| p.own),
        },
        Series {
            name: "host starts reading",
            points: mark(r.switch_s),
        },
        Series {
            name: "host stops reading",
            points: mark(r.host_done_s),
        },
    ];
    xy(
        path,
        "Netcache busy/idle switch: the host's memory",
        ("seconds", "MiB"),
        &series,
        false,
        Style::Lines,
    )
}
