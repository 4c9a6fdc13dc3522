//! The `coopcache` command.

mod access;
mod cluster;
mod completions;
mod demo;
#[cfg(test)]
mod doc_commands;
mod node;
mod sim;
mod status_cluster;
mod trace;
mod warm;

/// jemalloc rather than glibc's malloc, with a background thread that
/// returns freed pages to the kernel within 100 ms: glibc kept 243 MiB
/// resident after a burst of gateway connections on a 64 MiB node and
/// never gave it back; mimalloc held 190 MiB under plain reads (freed
/// pages stay with the blocking-pool thread that allocated them).
/// `coopcache bench rss`; figures in docs/benchmarks.md.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read once when it initialises (`_RJEM_MALLOC_CONF`
/// in the environment still overrides them). One arena: blocks are
/// allocated on the blocking pool's threads (origin reads) and freed on
/// the runtime's, and with jemalloc's default 4 arenas per CPU each kept
/// its own freed pages: a 64 MiB node under 16 readers for 10 minutes sat
/// at 80-110 MiB; with one arena, 64-66 MiB at the same request rate.
/// Dirty pages go back to the kernel within 100 ms (at 1 s: 95 MiB peaks;
/// at 0, purging on every free, 12% fewer requests served). Measured with
/// `coopcache bench rss`; docs/benchmarks.md.
// SAFETY: jemalloc reads this symbol as a `const char *` to a NUL-terminated
// string; a `&[u8; N]` is a thin pointer to such bytes, static and never
// written, and nothing else in the program defines the symbol.
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static MALLOC_CONF: &[u8; 69] =
    b"background_thread:true,narenas:1,dirty_decay_ms:100,muzzy_decay_ms:0\0";

/// Bytes of live allocations as jemalloc counts them (its `stats.allocated`,
/// refreshed by advancing its epoch); `None` if jemalloc will not say.
fn heap_allocated() -> Option<u64> {
    tikv_jemalloc_ctl::epoch::advance().ok()?;
    tikv_jemalloc_ctl::stats::allocated::read()
        .ok()
        .map(|b| b as u64)
}

use clap::{CommandFactory, Parser, Subcommand};
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
    Sim(Box<sim::SimCommand>),
    /// Trace analysis and conversion: `trace stats` describes a trace (sizes, reuse,
    /// popularity), `trace convert` writes it as libCacheSim's oracleGeneral or lcs.
    #[command(subcommand)]
    Trace(trace::TraceCmd),
    /// Runs a cooperative cache node (the daemon).
    Node(Box<node::NodeArgs>),
    /// Runs a node and mounts its origin on DIR through FUSE, file bytes
    /// read through the cooperative cache, writes written through to the
    /// origin at close (directories and S3; HTTP is mounted read-only);
    /// Ctrl-C or SIGTERM unmounts. Same options as `node`.
    Mount(Box<node::MountArgs>),
    /// The cluster's CA and node certificates.
    #[command(subcommand)]
    Cluster(cluster::ClusterCmd),
    /// Writes a file (or a range of it) read through a node to stdout.
    Cat(access::CatArgs),
    /// A node's members, memory, reads per level and origin traffic.
    Status(access::StatusArgs),
    /// Reads files or directories through a node into the cluster's
    /// memory before a job needs them, with a progress bar.
    Warm(warm::WarmArgs),
    /// Pins files or directories on a node: read through the cache and
    /// kept there, never evicted, within its --max-pinned share; --list
    /// shows what is pinned.
    Pin(warm::PinArgs),
    /// Unpins files or directories (`/` for all): their blocks are
    /// cached like any other again.
    Unpin(warm::WarmArgs),
    /// Drops files or directories from the cluster's memory, cached or
    /// pinned, on every node (the next read of them goes to the origin).
    Evict(warm::WarmArgs),
    /// A 4-node cluster on loopback, read with and without cooperation.
    Demo(Box<demo::DemoArgs>),
    /// Live benchmarks on a loopback cluster: the papers' experiments
    /// (netcache, staggered, zipf-web), latency against memcached and
    /// Redis, algorithms against the simulator.
    #[command(subcommand)]
    Bench(coopcache_bench::BenchCmd),
    /// Prints a shell completion script: bash, zsh, fish, elvish or
    /// powershell (e.g. `coopcache completions bash > /etc/bash_completion.d/coopcache`).
    Completions(completions::CompletionsArgs),
    /// Prints the man page (roff), or with --out DIR writes one page per
    /// subcommand (e.g. `coopcache man --out /usr/local/share/man/man1`).
    Man(completions::ManArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Command::Sim(_) | Command::Trace(_) | Command::Cat(_)
    ) {
        // Commands whose output is piped into `head` and the like die
        // quietly when the reader goes away, as Unix tools do, rather than
        // panic on the failed write. Only these: a daemon must outlive a
        // closed pipe (its logs), and gets EPIPE as an error instead.
        sigpipe::reset();
    }
    let result = match cli.command {
        Command::Sim(cmd) => sim::run(*cmd),
        Command::Trace(cmd) => trace::run(cmd),
        Command::Node(args) => node::run(*args),
        Command::Mount(args) => node::run(args.into_node()),
        Command::Cluster(cmd) => cluster::run(cmd),
        Command::Cat(args) => access::cat(args),
        Command::Status(args) => access::status(args),
        Command::Warm(args) => warm::warm(args),
        Command::Pin(args) => warm::pin(args),
        Command::Unpin(args) => warm::unpin(args),
        Command::Evict(args) => warm::evict(args),
        Command::Demo(args) => demo::run(*args),
        Command::Bench(cmd) => {
            coopcache_bench::set_heap_meter(heap_allocated);
            coopcache_bench::run(cmd)
        }
        Command::Completions(args) => completions::completions(args, Cli::command()),
        Command::Man(args) => completions::man(args, Cli::command()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", said_once(&err));
            ExitCode::FAILURE
        }
    }
}

/// An error and its causes, each said once: many errors already carry
/// their cause's text (`/x: No such file or directory`), and anyhow's
/// `{:#}` would append it again.
fn said_once(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    /// An error that says its source's text and also returns it, as a
    /// thiserror `#[error("{path}: {source}")]` does.
    #[derive(Debug)]
    struct PathError(std::io::Error);

    impl std::fmt::Display for PathError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "/x: {}", self.0)
        }
    }

    impl std::error::Error for PathError {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn causes_already_said_are_not_repeated() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let text = io.to_string();
        let err = anyhow::Error::new(PathError(io)).context("reading the trace");
        assert_eq!(
            format!("{err:#}"),
            format!("reading the trace: /x: {text}: {text}")
        );
        assert_eq!(
            super::said_once(&err),
            format!("reading the trace: /x: {text}")
        );
        let chained = anyhow::anyhow!("inner").context("outer");
        assert_eq!(super::said_once(&chained), "outer: inner");
    }
}
