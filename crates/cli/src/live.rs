//! Settings shared by the live commands: durations, sizes, logging.

use anyhow::{Result, anyhow};
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

/// Parses `10ms`, `2s`, `1.5s`, `500us`, `0`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("duration `{s}`: expected a number with a unit, like 10ms or 2s"))?;
    let secs = match unit.trim() {
        "" if n == 0.0 => 0.0,
        "us" | "µs" => n / 1e6,
        "ms" => n / 1e3,
        "s" => n,
        "m" | "min" => n * 60.0,
        u => {
            return Err(format!(
                "duration `{s}`: unknown unit `{u}` (expected us, ms, s or min)"
            ));
        }
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("duration `{s}`: expected a non-negative duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a size like `2GiB` for clap.
pub fn parse_size(s: &str) -> Result<u64, String> {
    coopcache_node::budget::parse_size(s)
}

/// How much a node logs: `--log-level`, `log_level` in its TOML file.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogLevel {
    Error,
    Warn,
    #[default]
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    /// The level's name, as `RUST_LOG` and `--log-level` spell it.
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }
}

impl std::str::FromStr for LogLevel {
    type Err = String;

    fn from_str(s: &str) -> Result<LogLevel, String> {
        <LogLevel as clap::ValueEnum>::from_str(s.trim(), true)
            .map_err(|_| format!("log level `{s}`: expected error, warn, info, debug or trace"))
    }
}

/// Structured logs to stderr: text by default, JSON lines with `json`;
/// the level from `RUST_LOG` if set (its full syntax, per-module levels
/// included, is worth more to whoever set it than one level), else `level`.
pub fn init_logs(json: bool, level: LogLevel) -> Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level.name()));
    // Colour only for a person at a terminal, not in files or journals.
    let b = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let r = if json {
        b.json().try_init()
    } else {
        b.try_init()
    };
    r.map_err(|e| anyhow!("logging: {e}"))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(
            parse_duration("5 parsecs")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_duration("ms").is_err());
    }

    #[test]
    fn log_levels_parse_in_any_case_and_bad_ones_are_named() {
        assert_eq!("debug".parse(), Ok(LogLevel::Debug));
        assert_eq!("WARN".parse(), Ok(LogLevel::Warn));
        let e = "loud".parse::<LogLevel>().unwrap_err();
        assert!(e.contains("loud") && e.contains("trace"), "{e}");
    }
}
