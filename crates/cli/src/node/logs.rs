//! A node's logs: the level (`--log-level`) and the subscriber.

use anyhow::{Result, anyhow};

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
    // `s3s` logs every refused S3 request (a wrong signature, a missing
    // key) as an ERROR: a client's mistake, not the daemon's. The S3
    // endpoint logs its own failures (`coopcache_node::s3`); `s3s`'s own
    // lines show from `--log-level debug` on.
    let default = match level {
        LogLevel::Debug | LogLevel::Trace => level.name().to_owned(),
        _ => format!("{},s3s=off", level.name()),
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_levels_parse_in_any_case_and_bad_ones_are_named() {
        assert_eq!("debug".parse(), Ok(LogLevel::Debug));
        assert_eq!("WARN".parse(), Ok(LogLevel::Warn));
        let e = "loud".parse::<LogLevel>().unwrap_err();
        assert!(e.contains("loud") && e.contains("trace"), "{e}");
    }
}
