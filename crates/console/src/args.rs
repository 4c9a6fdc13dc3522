//! Arguments shared by the commands: the parsers of durations and sizes,
//! and the `--json`/`--plot` and `--seed` groups the benchmarks and the
//! demo flatten in.

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

/// How a benchmark or the demo reports: `--json` and `--plot`, the same
/// in every command that takes them.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ReportArgs {
    /// Where to draw the plots (PNG): a file, or a directory for the
    /// commands that draw several charts; none unless given.
    #[arg(long, value_name = "PATH")]
    pub plot: Option<PathBuf>,
    /// JSON instead of tables: one object per line.
    #[arg(long)]
    pub json: bool,
}

/// `--seed`: every random choice of a run (file bytes, sizes, the order
/// of reads) drawn from it, so the same seed gives the same run.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct Seed {
    /// Seed of the run's files and draws: the same seed, the same run.
    #[arg(long = "seed", value_name = "N", default_value_t = 1)]
    pub value: u64,
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
}
