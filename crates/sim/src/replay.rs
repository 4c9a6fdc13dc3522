//! Replaying a trace through several caches at once.
//!
//! The trace is read once, on its own thread, in chunks of block ids; every
//! cache under test consumes each chunk, spread over all cores. Memory stays
//! bounded by a few chunks whatever the trace's length, decompression and
//! parsing overlap the simulation, and each cache's time counts only its
//! own request loop.

use crate::chunks::for_each_chunk;
use crate::error::TraceError;
use crate::trace::Requests;
use coopcache_core::CapacityError;
use coopcache_core::policy::{Policy, PolicyKind, PolicyVisitor, access};
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// One cache to simulate: a policy and a capacity in blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunSpec {
    /// The replacement policy.
    pub policy: PolicyKind,
    /// Capacity in blocks.
    pub capacity: usize,
}

/// What one simulated cache saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunResult {
    /// The cache simulated.
    pub spec: RunSpec,
    /// Requests replayed.
    pub requests: u64,
    /// Requests that missed.
    pub misses: u64,
    /// Time spent in this cache's request loop (trace reading excluded).
    pub elapsed: Duration,
}

impl RunResult {
    /// Misses over requests (0 for an empty trace).
    pub fn miss_ratio(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.misses as f64 / self.requests as f64
        }
    }

    /// Requests per second of request-loop time.
    pub fn requests_per_s(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.requests as f64 / secs
        } else {
            0.0
        }
    }
}

/// A cache being fed chunks of ids; boxed so one list holds every policy,
/// with dynamic dispatch once per chunk rather than per request.
trait Run: Send {
    fn feed(&mut self, ids: &[u64]);
    fn result(&self) -> RunResult;
}

struct PolicyRun<P> {
    policy: P,
    spec: RunSpec,
    requests: u64,
    misses: u64,
    elapsed: Duration,
}

impl<P: Policy<u64> + Send> Run for PolicyRun<P> {
    fn feed(&mut self, ids: &[u64]) {
        let start = Instant::now();
        self.misses += count_misses(&mut self.policy, ids);
        self.elapsed += start.elapsed();
        self.requests += ids.len() as u64;
    }

    fn result(&self) -> RunResult {
        RunResult {
            spec: self.spec,
            requests: self.requests,
            misses: self.misses,
            elapsed: self.elapsed,
        }
    }
}

/// The request loop of a replay: every id through `policy`, counting misses.
/// Allocation-free once the cache is full.
#[inline]
pub fn count_misses<P: Policy<u64>>(policy: &mut P, ids: &[u64]) -> u64 {
    let mut misses = 0;
    for &id in ids {
        if !access(policy, id, |_| {}) {
            misses += 1;
        }
    }
    misses
}

/// Builds the boxed run of a spec.
struct BoxRun(RunSpec);

impl PolicyVisitor<u64> for BoxRun {
    type Output = Box<dyn Run>;

    fn visit<P: Policy<u64> + Send + 'static>(self, policy: P) -> Box<dyn Run> {
        Box::new(PolicyRun {
            policy,
            spec: self.0,
            requests: 0,
            misses: 0,
            elapsed: Duration::ZERO,
        })
    }
}

/// Why a replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The trace could not be read; no results are reported.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A cache size does not suit its policy; nothing was replayed.
    #[error(transparent)]
    Capacity(#[from] CapacityError),
}

/// Replays `requests` through one cache per spec, in parallel, and returns
/// their results in the order of `specs`. `on_chunk` is called after each
/// chunk with the number of requests replayed so far (for progress).
pub fn replay(
    requests: Requests,
    specs: &[RunSpec],
    mut on_chunk: impl FnMut(u64),
) -> Result<Vec<RunResult>, ReplayError> {
    let mut runs = specs
        .iter()
        .map(|&spec| spec.policy.build(spec.capacity, BoxRun(spec)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut replayed = 0u64;
    for_each_chunk(
        requests,
        |r| r.id,
        |ids: &[u64]| {
            runs.par_iter_mut().for_each(|run| run.feed(ids));
            replayed += ids.len() as u64;
            on_chunk(replayed);
            Ok::<(), ReplayError>(())
        },
    )?;
    Ok(runs.iter().map(|run| run.result()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunks::CHUNK;
    use crate::trace::Request;

    fn ids(ids: impl IntoIterator<Item = u64>) -> Requests {
        let requests: Vec<_> = ids
            .into_iter()
            .map(|id| {
                Ok(Request {
                    id,
                    ..Request::default()
                })
            })
            .collect();
        Box::new(requests.into_iter())
    }

    #[test]
    fn every_spec_sees_the_whole_trace() {
        // A loop over 3 blocks: a 2-block LRU misses every time, a 3-block
        // one only the first pass; more than one chunk long.
        let trace = (0..3 * CHUNK as u64).map(|i| i % 3);
        let specs = [
            RunSpec {
                policy: PolicyKind::Lru,
                capacity: 2,
            },
            RunSpec {
                policy: PolicyKind::Lru,
                capacity: 3,
            },
        ];
        let results = replay(ids(trace), &specs, |_| {}).unwrap();
        assert_eq!(results[0].requests, 3 * CHUNK as u64);
        assert_eq!(results[0].misses, 3 * CHUNK as u64);
        assert_eq!(results[1].misses, 3);
    }

    #[test]
    fn a_trace_error_fails_the_replay() {
        let bad: Requests = Box::new(
            vec![
                Ok(Request::default()),
                Err(TraceError::Line {
                    path: "t".into(),
                    line: 2,
                    problem: "bad".into(),
                    expected: "good",
                }),
            ]
            .into_iter(),
        );
        let spec = [RunSpec {
            policy: PolicyKind::Fifo,
            capacity: 4,
        }];
        assert!(matches!(
            replay(bad, &spec, |_| {}),
            Err(ReplayError::Trace(_))
        ));
    }

    #[test]
    fn a_capacity_error_is_reported_before_reading() {
        let spec = [RunSpec {
            policy: PolicyKind::Lru,
            capacity: 0,
        }];
        assert!(matches!(
            replay(ids([1]), &spec, |_| {}),
            Err(ReplayError::Capacity(_))
        ));
    }
}
