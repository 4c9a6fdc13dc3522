//! Progress bars, on terminals only: over the bytes of trace files, and
//! over the steps of a phase.

use coopcache_sim::trace::BytesRead;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// Shows how far through its files a replay is, when both stdout and stderr
/// are terminals; does nothing when output is piped or redirected.
pub struct Progress {
    bar: Option<ProgressBar>,
    files: Vec<BytesRead>,
}

impl Progress {
    /// A progress display over files read through `files` (counter, size).
    pub fn new(files: Vec<(BytesRead, u64)>) -> Self {
        let interactive = std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
        let total: u64 = files.iter().map(|(_, len)| len).sum();
        let bar = interactive.then(|| {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {msg}",
                )
                .expect("the template is valid"),
            );
            bar
        });
        Progress {
            bar,
            files: files.into_iter().map(|(read, _)| read).collect(),
        }
    }

    /// Records that `requests` requests have been replayed.
    pub fn update(&self, requests: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(self.files.iter().map(BytesRead::get).sum());
            bar.set_message(format!("{requests} requests"));
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// A progress bar over a phase's steps, shown only when stdout and stderr
/// are both terminals (never in pipes, logs or tests).
pub struct Bar(Option<ProgressBar>);

impl Bar {
    /// A bar of `total` steps labelled `what`.
    pub fn new(total: u64, what: &str) -> Bar {
        let interactive = std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
        Bar(interactive.then(|| {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
                )
                .expect("the template is valid"),
            );
            bar.set_message(what.to_string());
            bar
        }))
    }

    /// `pos` of `len` steps done, with `msg` beside them (`len` may grow
    /// while a phase finds more to do).
    pub fn show(&self, pos: u64, len: u64, msg: String) {
        if let Some(bar) = &self.0 {
            bar.set_length(len);
            bar.set_position(pos);
            bar.set_message(msg);
        }
    }

    /// One more step done.
    pub fn inc(&self) {
        if let Some(bar) = &self.0 {
            bar.inc(1);
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
