//! Running a command's async work: a runtime, and a temporary directory
//! removed however the command ends.

use anyhow::Result;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

/// A tokio runtime for a command.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Runs `body` on a fresh runtime with a temporary directory named after
/// `prefix`, which is removed when the command ends, fails or is
/// interrupted (Ctrl-C or SIGTERM: then an error, so the command exits
/// non-zero).
pub fn in_tempdir<T, F, Fut>(prefix: &str, body: F) -> Result<T>
where
    F: FnOnce(PathBuf) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    in_tempdir_on(runtime()?, prefix, body)
}

/// [`in_tempdir`] on the runtime `rt`.
pub fn in_tempdir_on<T, F, Fut>(rt: tokio::runtime::Runtime, prefix: &str, body: F) -> Result<T>
where
    F: FnOnce(PathBuf) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let tmp = tempfile::Builder::new().prefix(prefix).tempdir()?;
    let dir = tmp.path().to_path_buf();
    let outcome = rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = body(dir) => r.map(Ok),
            _ = tokio::signal::ctrl_c() => Ok(Err("interrupted (Ctrl-C)")),
            _ = term.recv() => Ok(Err("terminated (SIGTERM)")),
        }
    });
    // Nodes and servers still running (on error or a signal) are aborted
    // with the runtime, before their files go.
    rt.shutdown_timeout(Duration::from_secs(1));
    drop(tmp);
    match outcome? {
        Ok(t) => Ok(t),
        Err(why) => {
            anyhow::bail!("{why}: everything started was stopped and temporary files removed")
        }
    }
}
