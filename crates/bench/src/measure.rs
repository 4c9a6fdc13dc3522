//! A closed-loop load: each of N workers issues one operation, waits for
//! it, and issues the next, for a fixed time. Memcached, Redis and
//! coopcache are driven by the same loop, so their figures compare.

use anyhow::Result;
use std::future::Future;
use std::time::{Duration, Instant};

/// Latency samples kept across all workers; beyond this, operations are
/// still counted but not timed individually (the memory stays bounded).
const MAX_SAMPLES: usize = 4 << 20;

/// One closed-loop client: a connection or a node, with whatever it
/// tallies.
pub(crate) trait Worker: Send + 'static {
    /// Issues one operation and waits for its answer; `measured` is false
    /// during the warm-up.
    fn op(&mut self, measured: bool) -> impl Future<Output = Result<()>> + Send;
}

/// Figures of one closed-loop run.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub(crate) struct Summary {
    /// Concurrent workers.
    pub concurrency: usize,
    /// Operations completed in the measured window.
    pub ops: u64,
    /// Median latency, microseconds.
    pub p50_us: f64,
    /// 99th percentile latency, microseconds.
    pub p99_us: f64,
    /// Operations per second over the measured window.
    pub per_s: f64,
}

/// Runs `workers` concurrently for `warmup` (not measured) and then
/// `duration`, and returns the figures and the workers (with their
/// tallies).
pub(crate) async fn closed_loop<W: Worker>(
    workers: Vec<W>,
    warmup: Duration,
    duration: Duration,
) -> Result<(Summary, Vec<W>)> {
    let concurrency = workers.len();
    let per_worker = MAX_SAMPLES / concurrency.max(1);
    let start = Instant::now() + warmup;
    let end = start + duration;
    let tasks: Vec<_> = workers
        .into_iter()
        .map(|mut w| {
            tokio::spawn(async move {
                let mut samples = Vec::with_capacity(per_worker.min(1 << 16));
                let mut ops = 0u64;
                loop {
                    let t = Instant::now();
                    if t >= end {
                        break;
                    }
                    let measured = t >= start;
                    w.op(measured).await?;
                    if measured {
                        ops += 1;
                        if samples.len() < per_worker {
                            samples.push(t.elapsed());
                        }
                    }
                }
                anyhow::Ok((w, ops, samples))
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut ops = 0;
    let mut back = Vec::with_capacity(concurrency);
    for t in tasks {
        let (w, n, s) = t.await??;
        back.push(w);
        ops += n;
        all.extend(s);
    }
    // The last operation may finish after `end`: count the real window.
    let window = start.elapsed().as_secs_f64().max(f64::MIN_POSITIVE);
    all.sort_unstable();
    Ok((
        Summary {
            concurrency,
            ops,
            p50_us: quantile_us(&all, 0.50),
            p99_us: quantile_us(&all, 0.99),
            per_s: ops as f64 / window,
        },
        back,
    ))
}

/// The `q` quantile of sorted samples, in microseconds (0 if none).
pub(crate) fn quantile_us(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * q) as usize).min(sorted.len() - 1);
    sorted[i].as_secs_f64() * 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_pick_the_sample_at_that_rank() {
        let s: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(quantile_us(&s, 0.5), 51.0);
        assert_eq!(quantile_us(&s, 0.99), 100.0);
        assert_eq!(quantile_us(&[], 0.5), 0.0);
    }

    struct Sleeper(u64);

    impl Worker for Sleeper {
        async fn op(&mut self, measured: bool) -> Result<()> {
            tokio::time::sleep(Duration::from_millis(2)).await;
            self.0 += u64::from(measured);
            Ok(())
        }
    }

    #[tokio::test]
    async fn every_worker_runs_and_only_the_window_is_counted() {
        let (s, back) = closed_loop(
            vec![Sleeper(0), Sleeper(0)],
            Duration::from_millis(20),
            Duration::from_millis(60),
        )
        .await
        .unwrap();
        assert_eq!(s.concurrency, 2);
        assert_eq!(s.ops, back.iter().map(|w| w.0).sum::<u64>());
        assert!(s.ops > 0 && s.p50_us >= 2000.0, "{s:?}");
    }
}
