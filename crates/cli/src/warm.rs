//! `coopcache warm PATH...`: reads files through a node before a job
//! needs them, with a progress bar of files and bytes a second; `pin`,
//! `unpin` and `evict` keep them there or drop them (`coopcache_node::pins`).

use anyhow::{Result, bail};
use coopcache_console::output::human_size;
use coopcache_console::progress::Bar;
use coopcache_console::tasks::runtime;
use coopcache_node::warm::{Goal, WarmProgress};
use std::time::Instant;

#[derive(clap::Args)]
pub struct WarmArgs {
    /// Files or directories (walked whole), relative to the origin; `/`
    /// for all of it.
    #[arg(required = true)]
    paths: Vec<String>,
    #[command(flatten)]
    gateway: Gateway,
}

#[derive(clap::Args)]
pub struct PinArgs {
    /// Files or directories (walked whole), relative to the origin.
    #[arg(required_unless_present = "list")]
    paths: Vec<String>,
    /// Lists the files the node holds pinned instead.
    #[arg(long, conflicts_with = "paths")]
    list: bool,
    #[command(flatten)]
    gateway: Gateway,
}

/// The node a command talks to.
#[derive(clap::Args)]
struct Gateway {
    /// The node's gateway.
    #[arg(long, env = "COOPCACHE_HTTP", default_value = "127.0.0.1:7171")]
    node: String,
    /// File holding the gateway's token, if it has one (the node's
    /// --http-token-file).
    #[arg(long, env = "COOPCACHE_HTTP_TOKEN_FILE")]
    token_file: Option<std::path::PathBuf>,
}

impl Gateway {
    fn client(&self) -> Result<coopcache_node::client::Client> {
        crate::access::client(&self.node, self.token_file.as_deref())
    }
}

pub fn warm(args: WarmArgs) -> Result<()> {
    run(Goal::Warm, &args.paths, &args.gateway)
}

pub fn evict(args: WarmArgs) -> Result<()> {
    run(Goal::Evict, &args.paths, &args.gateway)
}

pub fn pin(args: PinArgs) -> Result<()> {
    if !args.list {
        return run(Goal::Pin, &args.paths, &args.gateway);
    }
    let client = args.gateway.client()?;
    let pins = runtime()?.block_on(client.pins())?;
    let total: u64 = pins.iter().map(|f| f.bytes).sum();
    for f in &pins {
        println!("{:>10}  {}", human_size(f.bytes), f.path);
    }
    println!("{} files pinned, {}", pins.len(), human_size(total));
    Ok(())
}

pub fn unpin(args: WarmArgs) -> Result<()> {
    let client = args.gateway.client()?;
    let rt = runtime()?;
    for path in &args.paths {
        let done = rt.block_on(client.unpin(path))?;
        if done.files == 0 {
            bail!("{path}: nothing pinned there (`coopcache pin --list` shows what is)");
        }
        println!(
            "unpinned {path}: {} files, {}",
            done.files,
            human_size(done.bytes)
        );
    }
    Ok(())
}

/// Does `goal` to each of `paths`, a progress bar each.
fn run(goal: Goal, paths: &[String], gateway: &Gateway) -> Result<()> {
    let client = gateway.client()?;
    let rt = runtime()?;
    let (verb, done_word) = (goal.verb(), goal.done());
    let mut failed = 0;
    for path in paths {
        let started = Instant::now();
        let bar = Bar::new(0, "listing");
        let done = rt.block_on(client.run(goal, path, |p| {
            bar.show(p.files + p.failed, p.listed_files, rates(p, started))
        }))?;
        drop(bar);
        if let Some(e) = &done.error {
            bail!(
                "{verb} {path}: {e} ({} files {done_word} before)",
                done.files
            );
        }
        // A warm-up reads each file on its manager: say how many were
        // read elsewhere, so a user sees the cluster filled, not this node.
        let elsewhere = match done.elsewhere {
            0 => String::new(),
            n => format!(" ({n} read on their managers, other members)"),
        };
        println!(
            "{done_word} {path}: {} files{elsewhere}, {}",
            done.files,
            rates(&done, started)
        );
        if let Some(first) = &done.first_error {
            eprintln!("{path}: {} files failed; the first: {first}", done.failed);
            failed += done.failed;
        }
    }
    if failed > 0 {
        bail!("{failed} files failed");
    }
    Ok(())
}

/// Bytes read and the rates so far.
fn rates(p: &WarmProgress, started: Instant) -> String {
    let secs = started.elapsed().as_secs_f64().max(1e-3);
    let mib = p.bytes as f64 / 1048576.0;
    format!(
        "{mib:.1} MiB in {secs:.1} s ({:.1} MiB/s, {:.0} files/s)",
        mib / secs,
        p.files as f64 / secs
    )
}
