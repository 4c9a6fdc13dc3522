//! `coopcache completions SHELL` and `coopcache man`: the CLI's own
//! definition rendered as shell completions and roff man pages, so that
//! neither can fall behind a flag.

use anyhow::{Context, Result};
use clap::Command;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

#[derive(clap::Args)]
pub struct ManArgs {
    /// Write one page per command and subcommand (coopcache.1,
    /// coopcache-node.1, ...) into this directory instead of printing the
    /// top-level page.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Prints `shell`'s completion script for `cmd` to stdout.
pub fn completions(args: CompletionsArgs, mut cmd: Command) -> Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "coopcache", &mut script);
    write_stdout(&script)
}

/// Prints `cmd`'s man page, or writes every page into `--out`.
pub fn man(args: ManArgs, cmd: Command) -> Result<()> {
    match args.out {
        Some(dir) => write_pages(&dir, cmd),
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut page)?;
            write_stdout(&page)
        }
    }
}

fn write_pages(dir: &Path, cmd: Command) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the man page directory {}", dir.display()))?;
    clap_mangen::generate_to(cmd, dir)
        .with_context(|| format!("writing man pages into {}", dir.display()))?;
    let mut pages: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("coopcache") && n.ends_with(".1"))
        .collect();
    pages.sort();
    eprintln!("{} man pages in {}", pages.len(), dir.display());
    Ok(())
}

/// Writes `bytes` to stdout; a reader that went away (`| head`) is not
/// an error worth a message.
fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}
