//! Reporting intervals (`coopcache sim --report-interval`): every N trace
//! requests, or every span of trace time.
//!
//! An [`Interval`] is what the user wrote; a [`Cut`] is where the replay's
//! chunks are cut, once the trace's clock is known. Trace time is the
//! trace's own timestamps, never the wall clock: a day of trace replays in
//! seconds, and intervals of an hour are hours of the trace.

use crate::error::OptionError;
use crate::trace::{ReadOptions, TraceFormat};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// How often to report, as `--report-interval` gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interval {
    /// Every this many trace requests (reads, writes and deletes; at least 1).
    Requests(u64),
    /// Every span of trace time (above zero), from the first request's
    /// timestamp.
    Time(Duration),
}

const FORM: &str = "a number of trace requests, at least 1 (`1000000`), or a span of trace time \
     with a unit: ms, s, min, h or d (`30s`, `10min`, `1h`, `1.5h`)";

impl FromStr for Interval {
    type Err = OptionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || OptionError {
            what: "--report-interval",
            value: s.to_string(),
            expected: FORM.to_string(),
        };
        let text = s.trim().replace('_', "");
        if let Ok(n) = text.parse::<u64>() {
            return if n > 0 {
                Ok(Interval::Requests(n))
            } else {
                Err(bad())
            };
        }
        let split = text
            .find(|c: char| c.is_ascii_alphabetic())
            .ok_or_else(bad)?;
        let (number, unit) = text.split_at(split);
        let seconds_per_unit = match unit {
            "ms" => 1e-3,
            "s" | "sec" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            _ => return Err(bad()),
        };
        let value: f64 = number.trim().parse().map_err(|_| bad())?;
        Duration::try_from_secs_f64(value * seconds_per_unit)
            .ok()
            .filter(|d| !d.is_zero())
            .map(Interval::Time)
            .ok_or_else(bad)
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Interval::Requests(n) => write!(f, "{n}"),
            Interval::Time(d) => {
                // The largest unit that divides it: `1h`, not `3600s`.
                let ms = d.as_millis();
                let (per, unit) = [(86_400_000, "d"), (3_600_000, "h"), (60_000, "min")]
                    .into_iter()
                    .find(|&(per, _)| ms.is_multiple_of(per) && d.subsec_nanos() % 1_000_000 == 0)
                    .unwrap_or((1_000, "s"));
                if per == 1_000 {
                    write!(f, "{}s", d.as_secs_f64())
                } else {
                    write!(f, "{}{unit}", ms / per)
                }
            }
        }
    }
}

/// Where a replay's chunks are cut so that every interval ends on a chunk's
/// end (see `for_each_chunk_cut`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// After every this many requests (at least 1).
    Requests(u64),
    /// Before the first request at or past each multiple of `every` ticks
    /// of the trace's clock after the first request's time.
    Time {
        /// The interval in ticks (at least 1).
        every: u64,
        /// Ticks of the trace's clock per second, to report ends in
        /// seconds.
        per_second: u64,
    },
}

impl Interval {
    /// Where to cut a trace of `format` read with `opts`: a span of time
    /// needs a format whose requests carry timestamps in a known unit (see
    /// [`TraceFormat::ticks_per_second`]) and a span of at least one tick.
    pub fn cut(self, format: TraceFormat, opts: &ReadOptions) -> Result<Cut, OptionError> {
        let span = match self {
            Interval::Requests(n) => return Ok(Cut::Requests(n.max(1))),
            Interval::Time(span) => span,
        };
        let refuse = |expected: String| OptionError {
            what: "--report-interval",
            value: self.to_string(),
            expected,
        };
        let per_second = format.ticks_per_second(opts).map_err(refuse)?;
        let every = span.as_nanos() * u128::from(per_second) / 1_000_000_000;
        match u64::try_from(every) {
            Ok(every) if every > 0 => Ok(Cut::Time { every, per_second }),
            _ => Err(refuse(format!(
                "a span of at least one tick of the {format} trace's clock (1/{per_second} s)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_spans_with_units_parse() {
        let parse = |s: &str| s.parse::<Interval>();
        assert_eq!(parse("1_000").unwrap(), Interval::Requests(1000));
        assert_eq!(
            parse("1h").unwrap(),
            Interval::Time(Duration::from_secs(3600))
        );
        assert_eq!(
            parse("10min").unwrap(),
            Interval::Time(Duration::from_secs(600))
        );
        assert_eq!(
            parse("1.5s").unwrap(),
            Interval::Time(Duration::from_millis(1500))
        );
        assert_eq!(parse("90min").unwrap().to_string(), "90min");
        assert_eq!(parse("2h").unwrap().to_string(), "2h");
        assert_eq!(parse("1.5s").unwrap().to_string(), "1.5s");
        for bad in ["0", "0s", "-1h", "1 fortnight", "h", "", "1e400h"] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(err.contains("at least 1") && err.contains("10min"), "{err}");
        }
    }

    #[test]
    fn a_span_becomes_ticks_of_the_format_clock() {
        let opts = ReadOptions::default();
        let hour = Interval::Time(Duration::from_secs(3600));
        assert_eq!(
            hour.cut(TraceFormat::Msr, &opts).unwrap(),
            Cut::Time {
                every: 36_000_000_000,
                per_second: 10_000_000
            }
        );
        assert_eq!(
            hour.cut(TraceFormat::Tencent, &opts).unwrap(),
            Cut::Time {
                every: 3600,
                per_second: 1
            }
        );
        let err = hour.cut(TraceFormat::Lirs, &opts).unwrap_err().to_string();
        assert!(err.contains("lirs") && err.contains("timestamps"), "{err}");
        let err = Interval::Time(Duration::from_millis(10))
            .cut(TraceFormat::Twr, &opts)
            .unwrap_err()
            .to_string();
        assert!(err.contains("one tick"), "{err}");
    }
}
