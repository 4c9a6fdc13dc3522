//! Writing a trace as libCacheSim's `oracleGeneral` or `lcs`, with each
//! request's next access computed as libCacheSim's `traceConv` computes
//! it: the 1-based position in the trace of the object's next request,
//! or none (`-1` in oracleGeneral, `i64::MAX` in lcs) for its last.
//!
//! Two passes over the input: the first finds every request's next access
//! (8 bytes a request) and the trace's totals for the lcs header, the
//! second writes the records. Requests without sizes are written with
//! size 1, libCacheSim's default object size.

use crate::error::TraceError;
use crate::trace::lcs::{HEADER_LEN, MAGIC, op_code, record_len};
use crate::trace::{Op, Request};
use foldhash::fast::FixedState;
use std::collections::HashMap;
use std::io::{self, Write};
use thiserror::Error;

/// The format written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// 24-byte oracleGeneral records (`u32 time, u64 id, u32 size, i64
    /// next`).
    Oracle,
    /// lcs of this version: 1 (oracleGeneral's records under a header),
    /// 2 (with op and tenant) or 3 (64-bit sizes and a TTL, written 0).
    Lcs(u64),
}

/// A conversion failed.
#[derive(Debug, Error)]
pub enum ConvertError {
    /// The input could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The output could not be written; it is incomplete.
    #[error("writing the converted trace: {0}")]
    Write(#[from] io::Error),
    /// A request does not fit the target format; the output is incomplete.
    #[error("request {request}: {problem}")]
    Unfit {
        /// 1-based position of the request in the trace.
        request: u64,
        /// What does not fit.
        problem: String,
    },
    /// The second pass read a different trace from the first.
    #[error("the trace changed between the two passes ({first} requests, then more)")]
    Changed {
        /// Requests the first pass read.
        first: u64,
    },
    /// An lcs version this writer does not write.
    #[error("lcs version {0}: this writer writes versions 1, 2 and 3")]
    Version(u64),
}

/// What the first pass learns: each request's next access and the totals
/// the lcs header records.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Per request, the 1-based position of its object's next request, or
    /// 0 for none.
    next: Vec<u64>,
    requests: u64,
    objects: u64,
    request_bytes: u64,
    object_bytes: u64,
    start_time: u64,
    end_time: u64,
    reads: u64,
    writes: u64,
    deletes: u64,
}

impl Plan {
    /// The first pass over `requests`; `sized` if they carry sizes.
    pub fn of(
        requests: impl Iterator<Item = Result<Request, TraceError>>,
        sized: bool,
    ) -> Result<Plan, TraceError> {
        let mut plan = Plan::default();
        let mut last: HashMap<u64, usize, FixedState> = HashMap::default();
        for (i, r) in requests.enumerate() {
            let r = r?;
            if i == 0 {
                plan.start_time = r.time;
            }
            plan.end_time = r.time;
            let size = u64::from(size_of(&r, sized));
            plan.requests += 1;
            plan.request_bytes += size;
            match r.op {
                Op::Read => plan.reads += 1,
                Op::Write => plan.writes += 1,
                Op::Delete => plan.deletes += 1,
            }
            plan.next.push(0);
            match last.insert(r.id, i) {
                Some(prev) => plan.next[prev] = i as u64 + 1,
                None => {
                    plan.objects += 1;
                    plan.object_bytes += size;
                }
            }
        }
        Ok(plan)
    }

    /// Requests in the trace.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Writes and deletes in the trace.
    pub fn ops(&self) -> (u64, u64) {
        (self.writes, self.deletes)
    }
}

/// The size written for `r`: its own, or 1 for traces without sizes.
fn size_of(r: &Request, sized: bool) -> u32 {
    if sized { r.size } else { 1 }
}

/// Writes `requests` (the same trace [`Plan::of`] read) as `target` to
/// `out`, which the caller should buffer.
pub fn write(
    requests: impl Iterator<Item = Result<Request, TraceError>>,
    plan: &Plan,
    sized: bool,
    target: Target,
    out: &mut impl Write,
) -> Result<(), ConvertError> {
    if let Target::Lcs(version) = target {
        if !(1..=3).contains(&version) {
            return Err(ConvertError::Version(version));
        }
        out.write_all(&lcs_header(plan, version))?;
    }
    let mut record = Vec::with_capacity(36);
    for (i, r) in requests.enumerate() {
        let r = r?;
        let next = *plan.next.get(i).ok_or(ConvertError::Changed {
            first: plan.requests,
        })?;
        record.clear();
        encode(&r, next, sized, target, &mut record).map_err(|problem| ConvertError::Unfit {
            request: i as u64 + 1,
            problem,
        })?;
        out.write_all(&record)?;
    }
    out.flush()?;
    Ok(())
}

/// Appends `r`'s record to `out`.
fn encode(
    r: &Request,
    next: u64,
    sized: bool,
    target: Target,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let time = u32::try_from(r.time).map_err(|_| {
        format!(
            "time {} does not fit the format's 32-bit clock time (seconds)",
            r.time
        )
    })?;
    let none = match target {
        Target::Oracle => -1,
        Target::Lcs(_) => i64::MAX,
    };
    let next = if next == 0 { none } else { next as i64 };
    let size = size_of(r, sized);
    out.extend_from_slice(&time.to_le_bytes());
    out.extend_from_slice(&r.id.to_le_bytes());
    let version = match target {
        Target::Oracle | Target::Lcs(1) => {
            out.extend_from_slice(&size.to_le_bytes());
            out.extend_from_slice(&next.to_le_bytes());
            return Ok(());
        }
        Target::Lcs(v) => v,
    };
    if version >= 3 {
        out.extend_from_slice(&i64::from(size).to_le_bytes());
    } else {
        out.extend_from_slice(&size.to_le_bytes());
    }
    if r.client > 0xff_ffff {
        return Err(format!(
            "client {} does not fit lcs's 24-bit tenant",
            r.client
        ));
    }
    let word = u32::from(op_code(r.op)) | (r.client << 8);
    out.extend_from_slice(&word.to_le_bytes());
    if version >= 3 {
        out.extend_from_slice(&0u32.to_le_bytes()); // ttl
    }
    out.extend_from_slice(&next.to_le_bytes());
    debug_assert_eq!(Some(out.len()), record_len(version));
    Ok(())
}

/// libCacheSim's `lcs_trace_header_t` for `plan`: magics, version, and the
/// statistics this pass knows (the others stay 0, which libCacheSim reads
/// as unknown).
fn lcs_header(plan: &Plan, version: u64) -> Vec<u8> {
    let mut h = vec![0u8; HEADER_LEN];
    let mut put = |at: usize, v: u64| h[at..at + 8].copy_from_slice(&v.to_le_bytes());
    put(0, MAGIC);
    put(8, version);
    // lcs_trace_stat_t from byte 16: version, n_req, n_obj, n_req_byte,
    // n_obj_byte, start and end timestamps, n_read, n_write, n_delete.
    let stats = [
        1,
        plan.requests,
        plan.objects,
        plan.request_bytes,
        plan.object_bytes,
        plan.start_time,
        plan.end_time,
        plan.reads,
        plan.writes,
        plan.deletes,
    ];
    for (i, v) in stats.into_iter().enumerate() {
        put(16 + 8 * i, v);
    }
    put(HEADER_LEN - 8, MAGIC);
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reqs(ids: &[u64]) -> Vec<Result<Request, TraceError>> {
        ids.iter()
            .enumerate()
            .map(|(t, &id)| {
                Ok(Request {
                    id,
                    time: t as u64,
                    ..Request::default()
                })
            })
            .collect()
    }

    #[test]
    fn next_access_is_the_1_based_position_of_the_next_request() {
        let plan = Plan::of(reqs(&[5, 6, 5, 7, 6]).into_iter(), false).unwrap();
        assert_eq!(plan.next, [3, 5, 0, 0, 0]);
        assert_eq!((plan.requests, plan.objects), (5, 3));
        let mut out = Vec::new();
        write(
            reqs(&[5, 6, 5, 7, 6]).into_iter(),
            &plan,
            false,
            Target::Oracle,
            &mut out,
        )
        .unwrap();
        assert_eq!(out.len(), 5 * 24);
        let next_of =
            |i: usize| i64::from_le_bytes(out[i * 24 + 16..i * 24 + 24].try_into().unwrap());
        assert_eq!((next_of(0), next_of(2)), (3, -1));
        // Unsized traces get libCacheSim's default size, 1.
        assert_eq!(u32::from_le_bytes(out[12..16].try_into().unwrap()), 1);
    }

    #[test]
    fn a_longer_second_pass_is_refused() {
        let plan = Plan::of(reqs(&[1]).into_iter(), false).unwrap();
        let err = write(
            reqs(&[1, 2]).into_iter(),
            &plan,
            false,
            Target::Lcs(1),
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(matches!(err, ConvertError::Changed { first: 1 }));
    }
}
