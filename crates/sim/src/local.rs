//! A local-policy study as `coopcache sim` runs it and as the Python
//! package calls it: how a trace's requests are sized, the (policy, size)
//! runs, and one [`SimRow`] of figures per run. Kept here, not in the
//! binary, so that every front end reports the same figures.

use crate::error::OptionError;
use crate::replay::{IntervalEnd, RunResult, RunSpec, Tally};
use crate::size::CacheSize;
use crate::trace::{ReadOptions, TraceFormat};
use coopcache_core::{Capacity, PolicySpec};
use serde::Serialize;
use std::path::PathBuf;

/// How the trace's requests are sized, for the figures in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sizing {
    /// Every request is one block of this many bytes (block traces and
    /// traces without sizes).
    Blocks(u64),
    /// Requests carry their objects' sizes.
    Objects,
}

impl Sizing {
    /// The sizing of a trace of `format` read with `opts`. `block_size` is
    /// the block size asked for, `None` for the default (`opts`'s): a trace
    /// with object sizes refuses one, since its caches count objects or
    /// bytes, never blocks.
    pub fn of(
        format: TraceFormat,
        opts: &ReadOptions,
        block_size: Option<u64>,
    ) -> Result<Sizing, OptionError> {
        if !format.has_sizes(opts) {
            return Ok(Sizing::Blocks(block_size.unwrap_or(opts.block_size)));
        }
        match block_size {
            None => Ok(Sizing::Objects),
            Some(b) => Err(OptionError {
                what: "--block-size",
                value: b.to_string(),
                expected: format!(
                    "none: it applies to block traces and traces without object sizes; this {format} trace has sizes, so a cache size with a unit (`100MiB`) holds each object at its size, and a plain number (`12800`) is a count of objects"
                ),
            }),
        }
    }

    /// Whether requests carry sizes (what the replay must keep).
    pub fn sized(self) -> bool {
        matches!(self, Sizing::Objects)
    }
}

/// Every (policy, size) pair, policy-major: a byte cache where the trace
/// has sizes and the size has a unit, else a cache of blocks of
/// `block_size` bytes.
pub fn run_specs(
    policies: &[PolicySpec],
    sizes: &[CacheSize],
    sizing: Sizing,
    block_size: u64,
) -> Result<Vec<RunSpec>, OptionError> {
    let mut specs = Vec::with_capacity(policies.len() * sizes.len());
    for &policy in policies {
        for &size in sizes {
            let capacity = match (size, sizing) {
                (CacheSize::Bytes(b), Sizing::Objects) => Capacity::Bytes(b),
                (size, _) => Capacity::Blocks(size.blocks(block_size)?),
            };
            specs.push(RunSpec { policy, capacity });
        }
    }
    Ok(specs)
}

/// One run's figures: a row of `coopcache sim`'s table, a line of its
/// `--json`, a row of the Python package's `simulate`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimRow {
    /// The trace's name (see [`trace_label`]).
    pub trace: String,
    /// The replacement policy.
    pub policy: String,
    /// The cache in objects, for a block cache.
    pub cache_size_objects: Option<usize>,
    /// The block size, where every request is one block.
    pub block_size: Option<u64>,
    /// The cache in bytes: a byte cache's capacity, or blocks times the
    /// block size; none for a count of objects of varied sizes.
    pub cache_size_bytes: Option<u64>,
    /// Reads replayed.
    pub requests: u64,
    /// Reads that missed.
    pub misses: u64,
    /// `misses / requests`.
    pub miss_ratio: f64,
    /// Bytes the reads asked for.
    pub bytes_requested: u64,
    /// Bytes of the reads that missed.
    pub bytes_missed: u64,
    /// `bytes_missed / bytes_requested`.
    pub byte_miss_ratio: f64,
    /// Writes replayed (write-allocate).
    pub writes: u64,
    /// Deletes replayed.
    pub deletes: u64,
    /// Requests of size 0 left out of a byte cache.
    pub zero_size_skipped: u64,
    /// Time in the cache's request loop.
    pub elapsed_s: f64,
    /// Requests per second of that time.
    pub requests_per_s: f64,
}

impl SimRow {
    /// The row of `result` on trace `trace`, whose requests are sized as
    /// `sizing` says.
    pub fn new(trace: &str, sizing: Sizing, result: &RunResult) -> Self {
        let t = &result.tally;
        // Where every request is one block, each counts the block's bytes.
        let (bytes_requested, bytes_missed) = match sizing {
            Sizing::Blocks(block) => (t.requests * block, t.misses * block),
            Sizing::Objects => (t.bytes, t.byte_misses),
        };
        let (objects, block_size, bytes) = match (result.spec.capacity, sizing) {
            (Capacity::Bytes(b), _) => (None, None, Some(b)),
            (Capacity::Blocks(n), Sizing::Blocks(block)) => {
                (Some(n), Some(block), Some(n as u64 * block))
            }
            (Capacity::Blocks(n), Sizing::Objects) => (Some(n), None, None),
        };
        SimRow {
            trace: trace.to_string(),
            policy: result.spec.policy.to_string(),
            cache_size_objects: objects,
            block_size,
            cache_size_bytes: bytes,
            requests: t.requests,
            misses: t.misses,
            miss_ratio: result.miss_ratio(),
            bytes_requested,
            bytes_missed,
            byte_miss_ratio: if bytes_requested == 0 {
                0.0
            } else {
                bytes_missed as f64 / bytes_requested as f64
            },
            writes: t.writes,
            deletes: t.deletes,
            zero_size_skipped: t.skipped,
            elapsed_s: result.elapsed.as_secs_f64(),
            requests_per_s: result.requests_per_s(),
        }
    }
}

/// One run's figures over one interval of the trace (`coopcache sim
/// --report-interval N` or `1h`): the miss ratio over time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IntervalRow {
    /// The trace's name (see [`trace_label`]).
    pub trace: String,
    /// The replacement policy.
    pub policy: String,
    /// The cache in objects, for a block cache.
    pub cache_size_objects: Option<usize>,
    /// The cache in bytes, as [`SimRow::cache_size_bytes`].
    pub cache_size_bytes: Option<u64>,
    /// Trace requests (reads, writes and deletes) read by the interval's
    /// end.
    pub interval_end: u64,
    /// For intervals of trace time, the interval's end in seconds after
    /// the first request's time (see [`IntervalEnd::time_s`]).
    pub end_time_s: Option<f64>,
    /// Reads in the interval.
    pub requests: u64,
    /// Reads that missed in it.
    pub misses: u64,
    /// `misses / requests` (0 without reads).
    pub miss_ratio: f64,
    /// Bytes its reads asked for.
    pub bytes_requested: u64,
    /// Bytes of its reads that missed.
    pub bytes_missed: u64,
    /// `bytes_missed / bytes_requested`.
    pub byte_miss_ratio: f64,
    /// Writes in it.
    pub writes: u64,
    /// Deletes in it.
    pub deletes: u64,
}

impl IntervalRow {
    /// The row of `spec`'s cache over the interval ending at `end`, in
    /// which it counted `tally`.
    pub fn new(trace: &str, sizing: Sizing, spec: RunSpec, end: IntervalEnd, tally: Tally) -> Self {
        let whole = SimRow::new(
            trace,
            sizing,
            &RunResult {
                spec,
                tally,
                elapsed: std::time::Duration::ZERO,
            },
        );
        IntervalRow {
            trace: whole.trace,
            policy: whole.policy,
            cache_size_objects: whole.cache_size_objects,
            cache_size_bytes: whole.cache_size_bytes,
            interval_end: end.requests,
            end_time_s: end.time_s,
            requests: whole.requests,
            misses: whole.misses,
            miss_ratio: whole.miss_ratio,
            bytes_requested: whole.bytes_requested,
            bytes_missed: whole.bytes_missed,
            byte_miss_ratio: whole.byte_miss_ratio,
            writes: whole.writes,
            deletes: whole.deletes,
        }
    }
}

/// The trace's name in reports: its file name, or names joined with `+`.
pub fn trace_label(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| {
            p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        })
        .collect::<Vec<_>>()
        .join("+")
}

#[cfg(test)]
mod tests {
    use super::*;
    use coopcache_core::PolicyKind;
    use std::time::Duration;

    #[test]
    fn a_trace_with_sizes_refuses_a_block_size_and_counts_bytes() {
        let csv = ReadOptions {
            csv: Some("id=1,size=2".parse().unwrap()),
            ..ReadOptions::default()
        };
        assert_eq!(
            Sizing::of(TraceFormat::Csv, &csv, None).unwrap(),
            Sizing::Objects
        );
        let err = Sizing::of(TraceFormat::Csv, &csv, Some(4096)).unwrap_err();
        assert!(err.to_string().contains("has sizes"), "{err}");
        let plain = ReadOptions::default();
        assert_eq!(
            Sizing::of(TraceFormat::Be32, &plain, Some(4096)).unwrap(),
            Sizing::Blocks(4096)
        );
        assert_eq!(
            Sizing::of(TraceFormat::Be32, &plain, None).unwrap(),
            Sizing::Blocks(8192)
        );
    }

    #[test]
    fn sizes_with_a_unit_are_bytes_only_where_requests_have_sizes() {
        let sizes = [CacheSize::Bytes(1 << 20), CacheSize::Blocks(10)];
        let specs = run_specs(&[PolicyKind::Lru.into()], &sizes, Sizing::Objects, 4096).unwrap();
        let caps: Vec<Capacity> = specs.iter().map(|s| s.capacity).collect();
        assert_eq!(caps, [Capacity::Bytes(1 << 20), Capacity::Blocks(10)]);
        let specs = run_specs(
            &[PolicyKind::Lru.into()],
            &sizes,
            Sizing::Blocks(4096),
            4096,
        )
        .unwrap();
        let caps: Vec<Capacity> = specs.iter().map(|s| s.capacity).collect();
        assert_eq!(caps, [Capacity::Blocks(256), Capacity::Blocks(10)]);
    }

    #[test]
    fn a_block_row_counts_each_request_as_one_block_of_bytes() {
        let result = RunResult {
            spec: RunSpec {
                policy: PolicyKind::Lru.into(),
                capacity: Capacity::Blocks(100),
            },
            tally: Tally {
                requests: 10,
                misses: 4,
                ..Tally::default()
            },
            elapsed: Duration::from_secs(1),
        };
        let row = SimRow::new("t", Sizing::Blocks(8192), &result);
        assert_eq!(row.cache_size_bytes, Some(100 * 8192));
        assert_eq!((row.bytes_requested, row.bytes_missed), (81920, 32768));
        assert!((row.byte_miss_ratio - 0.4).abs() < 1e-12);
        assert_eq!(row.requests_per_s, 10.0);
    }

    #[test]
    fn several_traces_are_named_by_their_file_names() {
        let paths = [PathBuf::from("/a/x.trace.gz"), PathBuf::from("y.lis")];
        assert_eq!(trace_label(&paths), "x.trace.gz+y.lis");
    }
}
