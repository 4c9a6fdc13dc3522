//! Local policies' miss-ratio curves as `coopcache sim mrc --format`
//! computes them and the Python package's `mrc` returns them: cache sizes
//! as written (`1%..100%:50`, `1MiB..1GiB:20log`), LRU from one
//! stack-distance pass, every other policy replayed at each size.

use super::{CurveUnit, LruCurve, Shards};
use crate::error::TraceError;
use crate::replay::{ReplayError, RunSpec, replay_sized};
use crate::size::parse_bytes;
use crate::trace::Requests;
use coopcache_core::{Capacity, PolicyKind, PolicySpec};
use serde::Serialize;

/// Why curves could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum CurveError {
    /// The cache sizes are malformed or do not suit the trace; the message
    /// names the text at fault and the form expected. Nothing was read.
    #[error("{0}")]
    Sizes(String),
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A replay stopped (a size that does not suit its policy).
    #[error(transparent)]
    Replay(#[from] ReplayError),
}

fn sizes_error(message: String) -> CurveError {
    CurveError::Sizes(message)
}

/// One point of a cache size as written: a size, or a fraction of the
/// working set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SizePoint {
    /// A plain number: objects.
    Objects(u64),
    /// A size with a unit.
    Bytes(u64),
    /// `10%`: a fraction of the working set.
    Fraction(f64),
}

impl SizePoint {
    fn parse(text: &str) -> Result<SizePoint, CurveError> {
        let t = text.trim();
        let point = if let Some(pct) = t.strip_suffix('%') {
            pct.trim()
                .parse::<f64>()
                .ok()
                .filter(|p| p.is_finite() && *p > 0.0)
                .map(|p| SizePoint::Fraction(p / 100.0))
        } else if let Ok(n) = t.parse::<u64>() {
            (n > 0).then_some(SizePoint::Objects(n))
        } else {
            parse_bytes(t).filter(|&b| b > 0).map(SizePoint::Bytes)
        };
        point.ok_or_else(|| {
            sizes_error(format!(
                "--cache-size: `{t}` is not a cache size; expected a positive count of objects (`1000`), bytes with a unit (`64MiB`) or a percentage of the working set (`10%`)"
            ))
        })
    }

    fn value(self) -> f64 {
        match self {
            SizePoint::Objects(n) | SizePoint::Bytes(n) => n as f64,
            SizePoint::Fraction(f) => f,
        }
    }

    fn with_value(self, v: f64) -> SizePoint {
        match self {
            SizePoint::Objects(_) => SizePoint::Objects(v.round().max(1.0) as u64),
            SizePoint::Bytes(_) => SizePoint::Bytes(v.round().max(1.0) as u64),
            SizePoint::Fraction(_) => SizePoint::Fraction(v),
        }
    }
}

/// The most points one range may ask for.
const MAX_POINTS: usize = 10_000;

/// The sizes `--cache-size` takes when none are given.
pub const DEFAULT_SIZES: &str = "1%..100%:50";

/// Parses cache sizes: sizes and ranges `FROM..TO:N` (or `:Nlog`),
/// comma-separated.
pub fn parse_sizes(text: &str) -> Result<Vec<SizePoint>, CurveError> {
    let mut points = Vec::new();
    for item in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        match item.split_once("..") {
            None => points.push(SizePoint::parse(item)?),
            Some((from, rest)) => points.extend(parse_range(item, from, rest)?),
        }
    }
    if points.is_empty() {
        return Err(sizes_error(
            "--cache-size is empty: give e.g. `1%..100%:50` or `1MiB..1GiB:20log`".into(),
        ));
    }
    Ok(points)
}

/// `FROM..TO:N` or `FROM..TO:Nlog`.
fn parse_range(item: &str, from: &str, rest: &str) -> Result<Vec<SizePoint>, CurveError> {
    let Some((to, count)) = rest.split_once(':') else {
        return Err(sizes_error(format!(
            "--cache-size {item}: a range needs its number of points, e.g. `{item}:20`"
        )));
    };
    let (count, log) = match count.trim().strip_suffix("log") {
        Some(n) => (n, true),
        None => (count.trim(), false),
    };
    let n: usize = count
        .trim()
        .parse()
        .ok()
        .filter(|n| (2..=MAX_POINTS).contains(n))
        .ok_or_else(|| {
            sizes_error(format!(
                "--cache-size {item}: `{count}` points; expected 2 to {MAX_POINTS}, e.g. `:20` (or `:20log` for log spacing)"
            ))
        })?;
    let (a, b) = (SizePoint::parse(from)?, SizePoint::parse(to)?);
    if std::mem::discriminant(&a) != std::mem::discriminant(&b) {
        return Err(sizes_error(format!(
            "--cache-size {item}: both ends need the same unit (objects, bytes or a percentage)"
        )));
    }
    let (lo, hi) = (a.value(), b.value());
    if lo >= hi {
        return Err(sizes_error(format!(
            "--cache-size {item}: FROM must be smaller than TO"
        )));
    }
    let mut points: Vec<SizePoint> = (0..n)
        .map(|i| {
            let t = i as f64 / (n - 1) as f64;
            let v = if log {
                lo * (hi / lo).powf(t)
            } else {
                lo + (hi - lo) * t
            };
            a.with_value(v)
        })
        .collect();
    points.dedup();
    Ok(points)
}

/// Bytes where the trace has sizes and no size is a plain count of
/// objects; objects otherwise.
pub(super) fn unit(points: &[SizePoint], sized: bool) -> Result<CurveUnit, CurveError> {
    let objects = points.iter().any(|p| matches!(p, SizePoint::Objects(_)));
    let bytes = points.iter().any(|p| matches!(p, SizePoint::Bytes(_)));
    match (objects, bytes, sized) {
        (true, true, _) => Err(sizes_error(
            "--cache-size mixes counts of objects (`1000`) and bytes (`64MiB`): one curve has one unit".into(),
        )),
        (_, true, false) => Err(sizes_error(
            "--cache-size in bytes needs a trace with object sizes (oracle, csv with size=); give this trace's sizes as counts of objects (`1000`) or percentages (`10%`)".into(),
        )),
        (false, _, true) => Ok(CurveUnit::Bytes),
        _ => Ok(CurveUnit::Objects),
    }
}

/// One policy at one size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CurveRow {
    /// The trace's name.
    pub trace: String,
    /// The replacement policy.
    pub policy: String,
    /// `stack` (exact one pass), `shards` (sampled) or `replay`.
    pub method: &'static str,
    /// The cache in objects, for a curve in objects.
    pub cache_size_objects: Option<u64>,
    /// The cache in bytes, for a curve in bytes.
    pub cache_size_bytes: Option<u64>,
    /// The size as a fraction of the working set.
    pub working_set_fraction: f64,
    /// Reads of the trace.
    pub requests: u64,
    /// Reads that missed.
    pub misses: u64,
    /// `misses / requests`.
    pub miss_ratio: f64,
    /// Missed bytes over bytes read (the miss ratio without sizes).
    pub byte_miss_ratio: f64,
}

/// What to compute: the policies (LRU from the stack pass) at the sizes.
#[derive(Clone, Debug)]
pub struct CurveSpec {
    /// Policies, in the order of the rows; LRU from one stack pass.
    pub policies: Vec<PolicySpec>,
    /// Cache sizes as parsed by [`parse_sizes`].
    pub points: Vec<SizePoint>,
    /// Whether the trace's requests carry sizes.
    pub sized: bool,
    /// Sample LRU's stack with SHARDS instead of the exact pass.
    pub shards: Option<Shards>,
}

/// Curves computed: their rows, and the LRU curve and sizes behind them
/// (for what a report notes about them).
#[derive(Clone, Debug)]
pub struct Curves {
    /// One row per policy and size, policy-major.
    pub rows: Vec<CurveRow>,
    /// The unit of the sizes.
    pub unit: CurveUnit,
    /// LRU's one-pass curve (also where LRU was not asked for: it gives
    /// the working set that percentages are of).
    pub lru: LruCurve,
    /// The sizes, in `unit`.
    pub sizes: Vec<u64>,
}

/// Computes `spec`'s curves of the trace `open` opens (once for the
/// stack pass, once more if a policy other than LRU is replayed); `label`
/// names the trace in the rows.
pub fn curves(
    open: impl Fn() -> Result<Requests, TraceError>,
    label: &str,
    spec: &CurveSpec,
) -> Result<Curves, CurveError> {
    let unit = unit(&spec.points, spec.sized)?;
    let lru = LruCurve::of(open()?, unit, spec.sized, spec.shards, |_| {})?;
    let (objects, bytes) = lru.working_set();
    let working_set = match unit {
        CurveUnit::Objects => objects,
        CurveUnit::Bytes => bytes,
    };
    let mut sizes: Vec<u64> = spec
        .points
        .iter()
        .map(|p| match *p {
            SizePoint::Objects(n) | SizePoint::Bytes(n) => n,
            SizePoint::Fraction(f) => (f * working_set as f64).round().max(1.0) as u64,
        })
        .collect();
    sizes.dedup();
    let row = |policy: PolicySpec, method, size: u64, misses, mr, bmr| CurveRow {
        trace: label.to_string(),
        policy: policy.to_string(),
        method,
        cache_size_objects: (unit == CurveUnit::Objects).then_some(size),
        cache_size_bytes: (unit == CurveUnit::Bytes).then_some(size),
        working_set_fraction: size as f64 / working_set.max(1) as f64,
        requests: lru.reads(),
        misses,
        miss_ratio: mr,
        byte_miss_ratio: bmr,
    };
    let specs: Vec<RunSpec> = spec
        .policies
        .iter()
        .filter(|&&p| !stack_lru(p))
        .flat_map(|&policy| {
            sizes.iter().map(move |&s| RunSpec {
                policy,
                capacity: match unit {
                    CurveUnit::Objects => Capacity::Blocks(s as usize),
                    CurveUnit::Bytes => Capacity::Bytes(s),
                },
            })
        })
        .collect();
    let results = if specs.is_empty() {
        Vec::new()
    } else {
        replay_sized(open()?, &specs, spec.sized, |_| {})?
    };
    let mut rows = Vec::new();
    for &policy in &spec.policies {
        if stack_lru(policy) {
            let method = if spec.shards.is_some() {
                "shards"
            } else {
                "stack"
            };
            for &s in &sizes {
                let p = lru.point(s);
                rows.push(row(
                    policy,
                    method,
                    s,
                    p.misses,
                    p.miss_ratio,
                    p.byte_miss_ratio,
                ));
            }
        }
        for r in results.iter().filter(|r| r.spec.policy == policy) {
            let s = match r.spec.capacity {
                Capacity::Blocks(n) => n as u64,
                Capacity::Bytes(b) => b,
            };
            rows.push(row(
                policy,
                "replay",
                s,
                r.tally.misses,
                r.miss_ratio(),
                r.byte_miss_ratio(),
            ));
        }
    }
    Ok(Curves {
        rows,
        unit,
        lru,
        sizes,
    })
}

/// Whether the stack pass gives `policy`'s curve: plain LRU, no knobs or
/// admission (LRU behind an admission policy is replayed).
fn stack_lru(policy: PolicySpec) -> bool {
    policy == PolicySpec::from(PolicyKind::Lru)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_give_evenly_spaced_points() {
        let p = parse_sizes("1%..100%:4").unwrap();
        let fractions: Vec<f64> = p.iter().map(|p| p.value()).collect();
        for (got, want) in fractions.iter().zip([0.01, 0.34, 0.67, 1.0]) {
            assert!((got - want).abs() < 1e-12, "{fractions:?}");
        }
        let p = parse_sizes("1MiB..1GiB:4log").unwrap();
        assert_eq!(p.len(), 4);
        assert_eq!(
            (p[0], p[3]),
            (SizePoint::Bytes(1 << 20), SizePoint::Bytes(1 << 30))
        );
        // Evenly on a log scale: each point 1024^(1/3) = 10.08 times the last.
        let SizePoint::Bytes(second) = p[1] else {
            panic!("{p:?}")
        };
        assert!((second as f64 / (1 << 20) as f64 - 10.079).abs() < 0.001);
        assert_eq!(
            parse_sizes("100, 200..400:3").unwrap(),
            [100, 200, 300, 400].map(SizePoint::Objects).to_vec()
        );
    }

    #[test]
    fn bad_ranges_say_what_is_wrong() {
        for (bad, says) in [
            ("1%..100%", "needs its number of points"),
            ("1%..100%:1", "expected 2 to"),
            ("1%..100%:x", "`x` points"),
            ("100%..1%:5", "FROM must be smaller than TO"),
            ("1%..1GiB:5", "same unit"),
            ("0..10:5", "`0` is not a cache size"),
            ("1MiB..2Q:5", "`2Q` is not a cache size"),
            ("-5%", "`-5%`"),
            ("", "is empty"),
        ] {
            let err = parse_sizes(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
        let err = unit(&[SizePoint::Objects(1), SizePoint::Bytes(1)], true).unwrap_err();
        assert!(err.to_string().contains("mixes"), "{err}");
        let err = unit(&[SizePoint::Bytes(1)], false).unwrap_err();
        assert!(
            err.to_string().contains("needs a trace with object sizes"),
            "{err}"
        );
        assert_eq!(
            unit(&[SizePoint::Fraction(0.5)], true).unwrap(),
            CurveUnit::Bytes
        );
        assert_eq!(
            unit(&[SizePoint::Objects(5)], true).unwrap(),
            CurveUnit::Objects
        );
    }
}
