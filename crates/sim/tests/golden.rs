//! Exactness against libCacheSim: every row of
//! `../shared/traces/golden-libcachesim.csv` (miss counts of libCacheSim at
//! commit aa0fc40 on six real traces) and of `golden-blocks-libcachesim.csv`
//! beside this file (the policies added since, on the same traces and cache
//! sizes, from libCacheSim's PyPI wheel 0.3.5 through
//! `scripts/golden-blocks.py`) must be reproduced exactly.
//!
//! Uses the real traces in `../shared/traces` (or `$COOPCACHE_TRACES`). A
//! user's clone without them skips with a message; under `CI=true` a
//! missing trace fails the test.

use crate::common;

use coopcache_core::{Capacity, PolicyKind, PolicySpec};
use coopcache_sim::replay::{RunSpec, replay};
use coopcache_sim::trace::{self, ReadOptions, TraceFormat};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn traces_dir() -> Option<PathBuf> {
    common::traces_dir("golden-libcachesim.csv")
}

/// The file and format of each trace named in the golden file.
fn trace_file(name: &str) -> (&'static str, TraceFormat) {
    match name {
        "sprite" => ("sprite.trace.gz", TraceFormat::Lirs),
        "cs" => ("cs.trace.gz", TraceFormat::Lirs),
        "ps" => ("ps.trace.gz", TraceFormat::Lirs),
        "multi2" => ("multi2.trace.gz", TraceFormat::Lirs),
        "w106" => ("w106.trace.xz", TraceFormat::Be32),
        "OLTP" => ("oltp.lis.zst", TraceFormat::Lis),
        other => panic!("golden file names an unknown trace {other}"),
    }
}

struct Row {
    spec: RunSpec,
    requests: u64,
    misses: u64,
}

fn golden_rows(dir: &std::path::Path) -> BTreeMap<String, Vec<Row>> {
    let shared = std::fs::read_to_string(dir.join("golden-libcachesim.csv")).unwrap();
    let added = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden-blocks-libcachesim.csv"),
    )
    .unwrap();
    let mut rows: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    let lines = |text: &str| -> Vec<String> {
        text.lines()
            .skip(1)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    };
    for line in lines(&shared).into_iter().chain(lines(&added)) {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 5, "golden line {line}");
        rows.entry(f[0].to_string()).or_default().push(Row {
            spec: RunSpec {
                policy: policy_spec(f[1]),
                capacity: Capacity::Blocks(f[2].parse().unwrap()),
            },
            requests: f[3].parse().unwrap(),
            misses: f[4].parse().unwrap(),
        });
    }
    rows
}

/// A golden file's policy column: a spec whose knob list separates its
/// knobs with `;` (the file's columns are comma-separated).
fn policy_spec(column: &str) -> PolicySpec {
    column.replace(';', ",").parse().unwrap()
}

/// Checks the rows of policies of `kinds` at their default knobs.
fn check(kinds: &[PolicyKind]) {
    check_rows(|p| p.is_default() && kinds.contains(&p.kind()), kinds);
}

/// Checks the rows whose policy `wanted` selects (`what` names them).
fn check_rows(wanted: impl Fn(&PolicySpec) -> bool, what: impl std::fmt::Debug) {
    let policies = what;
    let Some(dir) = traces_dir() else { return };
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (name, rows) in golden_rows(&dir) {
        let rows: Vec<&Row> = rows.iter().filter(|r| wanted(&r.spec.policy)).collect();
        let (file, format) = trace_file(&name);
        let stream = trace::open(&dir.join(file), format, &ReadOptions::default()).unwrap();
        let specs: Vec<RunSpec> = rows.iter().map(|r| r.spec).collect();
        let results = replay(stream.requests, &specs, |_| {}).unwrap();
        for (row, got) in rows.iter().zip(&results) {
            checked += 1;
            if (got.tally.requests, got.tally.misses) != (row.requests, row.misses) {
                wrong.push(format!(
                    "{name} {} {}: libCacheSim {} requests {} misses, coopcache {} requests {} misses",
                    row.spec.policy, row.spec.capacity, row.requests, row.misses, got.tally.requests, got.tally.misses
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {checked} rows differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(checked > 0, "no golden rows for {policies:?}");
    eprintln!("{checked} golden rows reproduced exactly");
}

#[test]
fn core_policies_match_libcachesim_exactly() {
    use PolicyKind::*;
    check(&[Lru, Fifo, Clock, Sieve, Arc]);
}

#[test]
fn s3fifo_2q_and_lirs_match_libcachesim_exactly() {
    use PolicyKind::*;
    check(&[S3Fifo, TwoQ, Lirs]);
}

#[test]
fn lfu_matches_libcachesim_exactly() {
    check(&[PolicyKind::Lfu]);
}

/// Belady's OPT, told each request's next reference by the replay's
/// pre-pass, as libCacheSim is by the script.
#[test]
fn belady_matches_libcachesim_exactly() {
    check(&[PolicyKind::Belady]);
}

#[test]
fn slru_matches_libcachesim_exactly() {
    check(&[PolicyKind::Slru]);
}

/// libCacheSim's current `S3FIFO`, beside `s3fifo` (its `S3FIFOv0`).
#[test]
fn s3fifo_v1_matches_libcachesim_exactly() {
    check(&[PolicyKind::S3FifoV1]);
}

/// LFU with dynamic aging, as libCacheSim's `LFUDA` (no rows for Sprite at
/// 100 blocks and w106 at 2,750, where libCacheSim does not finish: see
/// [`Lfuda`]'s doc).
///
/// [`Lfuda`]: coopcache_core::policy::Lfuda
#[test]
fn lfuda_matches_libcachesim_exactly() {
    check(&[PolicyKind::Lfuda]);
}

/// Greedy-Dual-Size-Frequency, as libCacheSim's `GDSF` (in blocks, LFU
/// with aging and recency among equals).
#[test]
fn gdsf_matches_libcachesim_exactly() {
    check(&[PolicyKind::Gdsf]);
}

/// W-TinyLFU, as libCacheSim's `WTinyLFU` (its sketch hashes the block
/// ids, which are the trace's here and there).
#[test]
fn wtinylfu_matches_libcachesim_exactly() {
    check(&[PolicyKind::WTinyLfu]);
}

/// QD-LP, as libCacheSim's `QDLP` with its defaults.
#[test]
fn qdlp_matches_libcachesim_exactly() {
    check(&[PolicyKind::Qdlp]);
}

/// MQ, as libCacheSim's `MQ` with its defaults.
#[test]
fn mq_matches_libcachesim_exactly() {
    check(&[PolicyKind::Mq]);
}

/// LeCaR, as libCacheSim's `LeCaR`: its draws are libCacheSim's (the same
/// generator from the same seed, each run on a fresh thread there).
#[test]
fn lecar_matches_libcachesim_exactly() {
    check(&[PolicyKind::LeCaR]);
}

/// LHD, as libCacheSim's `LHD`: its draws and its `f32` model are
/// libCacheSim's.
#[test]
fn lhd_matches_libcachesim_exactly() {
    check(&[PolicyKind::Lhd]);
}

/// Non-default knobs, as libCacheSim's parameters of the same policies
/// (`scripts/golden-blocks.py` writes them with `;` between knobs).
#[test]
fn knobbed_policies_match_libcachesim_exactly() {
    check_rows(
        |p| !p.knobs_default() && p.admission().is_none(),
        "knobbed policies",
    );
}

/// Second-hit (libCacheSim's `bloomfilter`) and size-threshold admission in
/// front of the policies, as libCacheSim's admissioners.
#[test]
fn bloom_and_size_admission_match_libcachesim_exactly() {
    use coopcache_core::admission::AdmissionSpec;
    check_rows(
        |p| matches!(p.admission(), AdmissionSpec::Bloom | AdmissionSpec::Size(_)),
        "bloom and size admission",
    );
}
