//! Trace statistics on the shared traces against figures computed
//! independently (a Python script's counts for sprite; a brute-force LRU
//! stack here for cs), and conversion to oracleGeneral and lcs read back.

use crate::common;

use coopcache_sim::convert::{Plan, Target, write};
use coopcache_sim::stats::TraceStats;
use coopcache_sim::trace::{self, Op, ReadOptions, Request, TraceFormat};
use std::path::Path;

fn read(path: &Path, format: TraceFormat) -> Vec<Request> {
    trace::open(path, format, &ReadOptions::default())
        .unwrap()
        .requests
        .collect::<Result<_, _>>()
        .unwrap()
}

fn stats(path: &Path, format: TraceFormat) -> TraceStats {
    let stream = trace::open(path, format, &ReadOptions::default()).unwrap();
    TraceStats::of(stream.requests, false, |_| {}).unwrap()
}

/// (bucket lo, count) pairs of a histogram.
fn shape(buckets: &[coopcache_sim::stats::Bucket]) -> Vec<(u64, u64)> {
    buckets.iter().map(|b| (b.lo, b.count)).collect()
}

/// Power-of-two bucket `k` (Python's `bit_length`) as its lower bound.
fn lo(k: u32) -> u64 {
    if k == 0 { 0 } else { 1 << (k - 1) }
}

#[test]
fn sprite_matches_an_independent_count() {
    let Some(dir) = common::traces_dir("sprite.trace.gz") else {
        return;
    };
    let s = stats(&dir.join("sprite.trace.gz"), TraceFormat::Lirs);
    // From a Python pass over the same file (Fenwick-tree stack distances,
    // Counter frequencies, least squares on ln rank / ln frequency).
    assert_eq!(s.ops.requests, 133_996);
    assert_eq!(s.objects, 7_075);
    assert_eq!(s.cold, 7_075);
    assert_eq!(s.one_hit_wonders, 1_437);
    assert_eq!(s.frequencies[..3], [468, 403, 403]);
    let alpha = s.zipf.unwrap().alpha;
    assert!((alpha - 1.371_251_7).abs() < 1e-6, "{alpha}");
    let distance: Vec<(u64, u64)> = [
        (0, 3952),
        (1, 454),
        (2, 664),
        (3, 1346),
        (4, 2163),
        (5, 4236),
        (6, 7770),
        (7, 16088),
        (8, 30197),
        (9, 38904),
        (10, 15803),
        (11, 3742),
        (12, 1074),
        (13, 528),
    ]
    .into_iter()
    .map(|(k, c)| (lo(k), c))
    .collect();
    assert_eq!(shape(&s.reuse_distance), distance);
    // LIRS traces have no time: a request's position is its time.
    let time: Vec<(u64, u64)> = [
        (1, 3952),
        (2, 789),
        (3, 1271),
        (4, 2036),
        (5, 3802),
        (6, 6428),
        (7, 11658),
        (8, 23095),
        (9, 31421),
        (10, 19038),
        (11, 10460),
        (12, 6369),
        (13, 2669),
        (14, 1494),
        (15, 1051),
        (16, 647),
        (17, 741),
    ]
    .into_iter()
    .map(|(k, c)| (lo(k), c))
    .collect();
    assert_eq!(shape(&s.reuse_time), time);
    assert_eq!(s.rate.counts.iter().sum::<u64>(), 133_996);
}

#[test]
fn cs_reuse_distances_match_a_brute_force_stack() {
    let Some(dir) = common::traces_dir("cs.trace.gz") else {
        return;
    };
    let path = dir.join("cs.trace.gz");
    let ids: Vec<u64> = read(&path, TraceFormat::Lirs)
        .iter()
        .map(|r| r.id)
        .collect();
    // The LRU stack as a list, most recent first: a reference's distance
    // is its object's depth.
    let mut stack: Vec<u64> = Vec::new();
    let mut counts = [0u64; 65];
    let mut cold = 0;
    for &id in &ids {
        match stack.iter().position(|&x| x == id) {
            Some(depth) => {
                counts[(u64::BITS - (depth as u64).leading_zeros()) as usize] += 1;
                stack.remove(depth);
            }
            None => cold += 1,
        }
        stack.insert(0, id);
    }
    let expected: Vec<(u64, u64)> = counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(k, &c)| (lo(k as u32), c))
        .collect();
    let s = stats(&path, TraceFormat::Lirs);
    let got: Vec<(u64, u64)> = shape(&s.reuse_distance)
        .into_iter()
        .filter(|(_, c)| *c > 0)
        .collect();
    assert_eq!(got, expected);
    assert_eq!((s.cold, s.objects), (cold, 1_409));
}

#[test]
fn conversions_read_back_as_the_same_requests() {
    let requests: Vec<Request> = (0..500u64)
        .map(|i| Request {
            id: (i * 7919) % 61,
            time: 1000 + i / 3,
            size: 100 + (i % 5) as u32,
            client: (i % 4) as u32,
            op: match i % 10 {
                0 => Op::Write,
                9 => Op::Delete,
                _ => Op::Read,
            },
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let plain = |r: &Request| Request {
        client: 0,
        op: Op::Read,
        ..*r
    };
    for (target, format, name) in [
        (Target::Oracle, TraceFormat::Oracle, "t.oracleGeneral"),
        (Target::Lcs(1), TraceFormat::Lcs, "v1.lcs"),
        (Target::Lcs(2), TraceFormat::Lcs, "v2.lcs"),
        (Target::Lcs(3), TraceFormat::Lcs, "v3.lcs"),
    ] {
        let source = || requests.iter().copied().map(Ok);
        let plan = Plan::of(source(), true).unwrap();
        let path = dir.path().join(name);
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        write(source(), &plan, true, target, &mut out).unwrap();
        drop(out);
        assert_eq!(TraceFormat::from_path(&path), Some(format));
        let back = read(&path, format);
        let keeps_ops = matches!(target, Target::Lcs(v) if v >= 2);
        let expected: Vec<Request> = if keeps_ops {
            requests.clone()
        } else {
            requests.iter().map(plain).collect()
        };
        assert_eq!(back, expected, "{name}");
    }
}
