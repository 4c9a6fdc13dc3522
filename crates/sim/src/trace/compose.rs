//! Composing several single-client traces into one multi-client trace.

use super::{Request, Requests, TraceError};
use crate::error::OptionError;
use std::path::PathBuf;
use std::str::FromStr;

/// How requests of the composed traces are interleaved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComposeMode {
    /// Always the request with the smallest timestamp next (ties go to the
    /// earlier trace). Formats without time use the request's position, so
    /// they interleave one by one.
    ByTime,
    /// One request from each trace in turn; a trace that ends drops out.
    RoundRobin,
}

impl FromStr for ComposeMode {
    type Err = OptionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "time" => Ok(ComposeMode::ByTime),
            "round-robin" | "rr" => Ok(ComposeMode::RoundRobin),
            _ => Err(OptionError {
                what: "composition",
                value: s.to_string(),
                expected: "`time` or `round-robin`".into(),
            }),
        }
    }
}

/// Whether the composed traces address the same blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdSpace {
    /// Each trace is a different client's own data: trace `i`'s id `x`
    /// becomes `i << 48 | x` (ids must be below 2^48).
    Disjoint,
    /// The traces address one shared store: ids are kept, so the same id in
    /// two traces is the same block (the sharing cooperation exploits).
    Shared,
}

/// Bits of a composed id that hold the source trace's own id.
const SOURCE_SHIFT: u32 = 48;

/// Several traces read as one, each trace becoming one client.
pub struct Compose {
    sources: Vec<Source>,
    mode: ComposeMode,
    ids: IdSpace,
    /// Next source to take from in round-robin mode.
    turn: usize,
    failed: bool,
}

struct Source {
    requests: Requests,
    path: PathBuf,
    /// The request read but not yet emitted.
    head: Option<Request>,
    emitted: u64,
}

impl Compose {
    /// Composes `sources` (with the file each came from, for errors): trace
    /// `i` becomes client `i`.
    pub fn new(sources: Vec<(Requests, PathBuf)>, mode: ComposeMode, ids: IdSpace) -> Self {
        Compose {
            sources: sources
                .into_iter()
                .map(|(requests, path)| Source {
                    requests,
                    path,
                    head: None,
                    emitted: 0,
                })
                .collect(),
            mode,
            ids,
            turn: 0,
            failed: false,
        }
    }

    /// Fills every live source's head; drops sources that have ended.
    fn refill(&mut self) -> Result<(), TraceError> {
        for source in &mut self.sources {
            if source.head.is_none() {
                source.head = source.requests.next().transpose()?;
            }
        }
        Ok(())
    }

    /// Which source emits next, among those with a pending request.
    fn pick(&self) -> Option<usize> {
        let live = |i: &usize| self.sources[*i].head.is_some();
        match self.mode {
            ComposeMode::ByTime => (0..self.sources.len())
                .filter(live)
                .min_by_key(|&i| self.sources[i].head.map(|r| r.time)),
            ComposeMode::RoundRobin => {
                let n = self.sources.len();
                (0..n).map(|k| (self.turn + k) % n).find(live)
            }
        }
    }

    fn emit(&mut self, i: usize) -> Result<Request, TraceError> {
        let source = &mut self.sources[i];
        let mut request = source.head.take().expect("picked sources have a head");
        source.emitted += 1;
        request.client = i as u32;
        if self.ids == IdSpace::Disjoint {
            if request.id >> SOURCE_SHIFT != 0 {
                return Err(TraceError::OutOfRange {
                    path: source.path.clone(),
                    record: source.emitted,
                    problem: format!(
                        "id {} needs more than {SOURCE_SHIFT} bits, so disjoint composition cannot tag it; compose with shared ids",
                        request.id
                    ),
                });
            }
            request.id |= (i as u64) << SOURCE_SHIFT;
        }
        self.turn = i + 1;
        Ok(request)
    }
}

impl Iterator for Compose {
    type Item = Result<Request, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let result = self.refill().and_then(|()| match self.pick() {
            Some(i) => self.emit(i).map(Some),
            None => Ok(None),
        });
        self.failed = result.is_err();
        result.transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(times: &[u64]) -> (Requests, PathBuf) {
        let requests: Vec<_> = times
            .iter()
            .map(|&t| {
                Ok(Request {
                    id: t * 10,
                    time: t,
                    ..Request::default()
                })
            })
            .collect();
        (Box::new(requests.into_iter()), PathBuf::from("t"))
    }

    fn order(mode: ComposeMode) -> Vec<(u32, u64)> {
        Compose::new(
            vec![source(&[1, 5, 6]), source(&[2, 3])],
            mode,
            IdSpace::Shared,
        )
        .map(|r| r.map(|r| (r.client, r.time)).unwrap())
        .collect()
    }

    #[test]
    fn by_time_merges_in_timestamp_order() {
        assert_eq!(
            order(ComposeMode::ByTime),
            [(0, 1), (1, 2), (1, 3), (0, 5), (0, 6)]
        );
    }

    #[test]
    fn round_robin_alternates_until_a_trace_ends() {
        assert_eq!(
            order(ComposeMode::RoundRobin),
            [(0, 1), (1, 2), (0, 5), (1, 3), (0, 6)]
        );
    }

    #[test]
    fn disjoint_ids_are_tagged_by_source() {
        let ids: Vec<u64> = Compose::new(
            vec![source(&[1]), source(&[1])],
            ComposeMode::RoundRobin,
            IdSpace::Disjoint,
        )
        .map(|r| r.unwrap().id)
        .collect();
        assert_eq!(ids, [10, (1 << 48) | 10]);
    }

    #[test]
    fn disjoint_refuses_ids_too_wide_to_tag() {
        let wide: Requests = Box::new(std::iter::once(Ok(Request {
            id: 1 << 50,
            ..Request::default()
        })));
        let err = Compose::new(
            vec![(wide, PathBuf::from("w"))],
            ComposeMode::ByTime,
            IdSpace::Disjoint,
        )
        .next()
        .unwrap()
        .unwrap_err();
        assert!(err.to_string().contains("compose with shared ids"), "{err}");
    }
}
