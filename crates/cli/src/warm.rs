//! `coopcache warm PATH...`: reads files through a node before a job
//! needs them, with a progress bar of files and bytes a second.

use anyhow::{Result, bail};
use coopcache_console::progress::Bar;
use coopcache_console::tasks::runtime;
use coopcache_node::warm::WarmProgress;
use std::time::Instant;

#[derive(clap::Args)]
pub struct WarmArgs {
    /// Files or directories (walked whole), relative to the origin; `/`
    /// for all of it.
    #[arg(required = true)]
    paths: Vec<String>,
    /// The node's gateway.
    #[arg(long, env = "COOPCACHE_HTTP", default_value = "127.0.0.1:7171")]
    node: String,
    /// File holding the gateway's token, if it has one (the node's
    /// --http-token-file).
    #[arg(long, env = "COOPCACHE_HTTP_TOKEN_FILE")]
    token_file: Option<std::path::PathBuf>,
}

pub fn warm(args: WarmArgs) -> Result<()> {
    let client = crate::access::client(&args.node, args.token_file.as_deref())?;
    let rt = runtime()?;
    let mut failed = 0;
    for path in &args.paths {
        let started = Instant::now();
        let bar = Bar::new(0, "listing");
        let done = rt.block_on(client.warm(path, |p| {
            bar.show(p.files + p.failed, p.listed_files, rates(p, started))
        }))?;
        drop(bar);
        if let Some(e) = &done.error {
            bail!("warming {path}: {e}");
        }
        println!(
            "warmed {path}: {} files, {}",
            done.files,
            rates(&done, started)
        );
        if let Some(first) = &done.first_error {
            eprintln!("{path}: {} files failed; the first: {first}", done.failed);
            failed += done.failed;
        }
    }
    if failed > 0 {
        bail!("{failed} files could not be read");
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
