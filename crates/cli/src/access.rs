//! `coopcache cat` and `coopcache status`: a node's gateway as a user
//! reaches it.

use anyhow::{Result, bail};
use coopcache_console::tasks::runtime;
use coopcache_node::client::Client;
use std::io::Write;

#[derive(clap::Args)]
pub struct CatArgs {
    /// The file, relative to the origin.
    path: String,
    /// First byte to read.
    #[arg(long, default_value_t = 0)]
    offset: u64,
    /// Bytes to read [default: to the end of the file].
    #[arg(long)]
    length: Option<u64>,
    /// The node's gateway.
    #[arg(long, env = "COOPCACHE_HTTP", default_value = "127.0.0.1:7171")]
    node: String,
    /// File holding the gateway's token, if it has one (the node's
    /// --http-token-file).
    #[arg(long, env = "COOPCACHE_HTTP_TOKEN_FILE")]
    token_file: Option<std::path::PathBuf>,
}

#[derive(clap::Args)]
pub struct StatusArgs {
    /// The node's gateway.
    #[arg(long, env = "COOPCACHE_HTTP", default_value = "127.0.0.1:7171")]
    node: String,
    /// File holding the gateway's token, if it has one (the node's
    /// --http-token-file).
    #[arg(long, env = "COOPCACHE_HTTP_TOKEN_FILE")]
    token_file: Option<std::path::PathBuf>,
    /// JSON instead of a summary.
    #[arg(long)]
    json: bool,
    /// Every member of the cluster, one line each (its memory and its
    /// reads as it reports them), and the cluster's totals.
    #[arg(long)]
    cluster: bool,
}

pub fn cat(args: CatArgs) -> Result<()> {
    let client = client(&args.node, args.token_file.as_deref())?;
    let range = match (args.offset, args.length) {
        (_, Some(0)) => return Ok(()),
        (0, None) => None,
        (o, None) => Some(o..u64::MAX),
        (o, Some(l)) => Some(o..o.saturating_add(l)),
    };
    let data = runtime()?.block_on(client.read(&args.path, range))?;
    std::io::stdout().lock().write_all(&data)?;
    Ok(())
}

pub fn status(args: StatusArgs) -> Result<()> {
    let client = client(&args.node, args.token_file.as_deref())?;
    let s = runtime()?.block_on(client.status())?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(());
    }
    if args.cluster {
        crate::status_cluster::print(&s);
        return Ok(());
    }
    println!("node {} (id {}), algorithm {}", s.name, s.id, s.algorithm);
    println!(
        "memory: {:.1} MiB cached in {} blocks, budget {:.1} MiB",
        s.cached_bytes as f64 / 1048576.0,
        s.cached_blocks,
        s.budget_bytes as f64 / 1048576.0
    );
    if s.max_pinned_bytes > 0 {
        println!(
            "pinned: {:.1} MiB in {} blocks, of a {:.1} MiB share (`coopcache pin --list`)",
            s.pinned_bytes as f64 / 1048576.0,
            s.pinned_blocks,
            s.max_pinned_bytes as f64 / 1048576.0
        );
    }
    if s.disk_slots > 0 || s.disk_given_up > 0 {
        println!("{}", disk_line(&s));
    }
    println!("members ({}):", s.members.len());
    for m in &s.members {
        let rtt = m.rtt_us.map_or("-".to_string(), |r| format!("{r} us"));
        let memory = m.memory.map_or("memory not heard yet".to_string(), |mm| {
            let mib = |b: u64| b as f64 / 1048576.0;
            let idle = if mm.idle { "idle" } else { "busy" };
            format!(
                "{:.1} of {:.1} MiB cached, {:.1} MiB free, {idle}",
                mib(mm.cached_bytes),
                mib(mm.capacity_bytes),
                mib(mm.free_bytes)
            )
        });
        println!(
            "  {:>10}  {:<20} {:<22} {:<16} rtt {rtt}; {memory}",
            m.id,
            m.name,
            m.listen,
            crate::status_cluster::release(m)
        );
    }
    let reads: Vec<String> = s.reads.iter().map(|(l, n)| format!("{l} {n}")).collect();
    println!("reads: {}", reads.join(", "));
    println!(
        "origin: {} reads, {} bytes; integrity failures {}, timeouts {}, peer errors {}",
        s.origin_reads, s.origin_bytes, s.integrity_failures, s.timeouts, s.peer_errors
    );
    println!(
        "origin asked: {} versions, {} names and attributes, {} changes, {} writes ({} bytes), {} commits",
        s.origin_stats,
        s.origin_metadata,
        s.origin_changes,
        s.origin_writes,
        s.origin_written_bytes,
        s.origin_commits
    );
    if s.members.is_empty() {
        bail!("node reported no members");
    }
    Ok(())
}

/// The disk tier's line of `coopcache status`.
fn disk_line(s: &coopcache_node::driver::Status) -> String {
    let state = match (s.disk_slots, s.disk_given_up) {
        (0, _) => "given up after failing every call in a row: memory alone, opened again later (WARN in the log)".to_string(),
        (_, 0) => "in use".to_string(),
        (_, n) => format!("in use (given up {n} times, back {} times)", s.disk_reopened),
    };
    format!(
        "disk: {} blocks in {} slots, {state}; {} written, {} writes failed, {} skipped (disk behind), {} slots failed a read; {} served to peers",
        s.disk_blocks,
        s.disk_slots,
        s.disk_writes,
        s.disk_write_failures,
        s.disk_writes_skipped,
        s.disk_failures,
        s.disk_served
    )
}

/// A client of the gateway at `node`, with the token from `token_file`.
pub(crate) fn client(node: &str, token_file: Option<&std::path::Path>) -> Result<Client> {
    let client = Client::new(node);
    Ok(match token_file {
        Some(path) => {
            let token = std::fs::read_to_string(path).map_err(|e| {
                anyhow::anyhow!("cannot read the gateway token file {}: {e}", path.display())
            })?;
            client.with_token(&token)
        }
        None => client,
    })
}
