//! `--policy` knobs and `--admission` as a user writes them: the knobbed
//! result, the labels, and every refusal's message.

use crate::common;

use common::*;

/// The rows' `policy` labels.
fn labels(rows: &[serde_json::Value]) -> Vec<&str> {
    rows.iter().map(|r| r["policy"].as_str().unwrap()).collect()
}

/// `s3fifo(small=0.2,ghost=0.5)` gives libCacheSim's count for
/// `S3FIFOv0` with `small-size-ratio=0.2,ghost-size-ratio=0.5` (the golden
/// row), beside a plain `lru` in the same run.
#[test]
fn a_knobbed_policy_gives_libcachesims_knobbed_count() {
    let Some(sprite) = shared_trace("sprite.trace.gz") else {
        return;
    };
    let rows = json_rows(&format!(
        "sim {} --format lirs --policy s3fifo(small=0.2,ghost=0.5),lru --cache-size 1000 --json",
        sprite.display()
    ));
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["policy"], "s3fifo(small=0.2,ghost=0.5)");
    assert_eq!(rows[0]["misses"], 13635);
    assert_eq!(rows[1]["policy"], "lru");
    assert_eq!(rows[1]["misses"], 12544);
}

/// Knobs at their defaults print as the bare name; `--admission` crosses
/// the policies and labels each run `policy+admission`.
#[test]
fn runs_are_labelled_in_canonical_form() {
    let dir = tempfile::tempdir().unwrap();
    let trace = temp_trace(dir.path(), "t", &"1\n2\n3\n1\n".repeat(50));
    let rows = json_rows(&format!(
        "sim {trace} --format lirs --policy s3fifo(small=0.1),2q(ain=0.5) --admission none,bloom --cache-size 20 --json"
    ));
    assert_eq!(
        labels(&rows),
        ["s3fifo", "s3fifo+bloom", "2q(ain=0.5)", "2q(ain=0.5)+bloom"]
    );
}

#[test]
fn bad_knobs_are_refused_naming_policy_knob_and_range() {
    let dir = tempfile::tempdir().unwrap();
    let trace = temp_trace(dir.path(), "t", "1\n");
    fails_with(
        &format!("sim {trace} --format lirs --policy s3fifo(tiny=0.2) --cache-size 100"),
        &[
            "s3fifo has no knob `tiny`",
            "small (libCacheSim small-size-ratio)",
        ],
    );
    fails_with(
        &format!("sim {trace} --format lirs --policy s3fifo(small=2) --cache-size 100"),
        &["s3fifo: `small=2` is out of range", "from 0.001 to 0.999"],
    );
    fails_with(
        &format!("sim {trace} --format lirs --policy lru(x=1) --cache-size 100"),
        &["lru has no knob `x`: expected no knobs"],
    );
    fails_with(
        &format!("sim {trace} --format lirs --admission bloomy --cache-size 100"),
        &[
            "unknown admission policy `bloomy`",
            "none, bloom, size, adaptsize",
        ],
    );
    fails_with(
        &format!("sim {trace} --format lirs --admission size(below=0) --cache-size 100"),
        &["size: `below=0` is out of range"],
    );
}

/// Cooperative runs build their nodes' caches by kind: knobs and admission
/// are refused rather than ignored.
#[test]
fn cooperative_runs_refuse_knobs_and_admission() {
    fails_with(
        "sim --workload zipf --workload-params requests=2000 --algorithms base --policy s3fifo(small=0.2)",
        &["bare policy name (s3fifo), not knobs or admission"],
    );
    fails_with(
        "sim --workload zipf --workload-params requests=2000 --algorithms base --admission bloom",
        &["--admission applies to local-policy replays"],
    );
}

/// QD-LP's, LeCaR's, LHD's and MQ's knobs run and label their runs in
/// canonical form (libCacheSim's parameter names accepted too).
#[test]
fn qdlp_lecar_lhd_and_mq_take_knobs() {
    let dir = tempfile::tempdir().unwrap();
    let trace = temp_trace(dir.path(), "t", &"1\n2\n3\n4\n5\n1\n2\n6\n".repeat(50));
    let rows = json_rows(&format!(
        "sim {trace} --format lirs --policy qdlp(fifo=0.2),lecar(lru-weight=0.3,update=0),lhd(samples=64),mq(n-queue=4,ghost=1) --cache-size 20 --json"
    ));
    assert_eq!(
        labels(&rows),
        [
            "qdlp(fifo=0.2)",
            "lecar(update=0,lru=0.3)",
            "lhd(samples=64)",
            "mq(queues=4,ghost=1)"
        ]
    );
}

/// `qdlp(fifo=0.2,ghost=0.5)` gives libCacheSim's count for `QDLP` with
/// `fifo-size-ratio=0.2,ghost-size-ratio=0.5` (the golden row).
#[test]
fn a_knobbed_qdlp_gives_libcachesims_count() {
    let Some(sprite) = shared_trace("sprite.trace.gz") else {
        return;
    };
    let rows = json_rows(&format!(
        "sim {} --format lirs --policy qdlp(fifo=0.2,ghost=0.5) --cache-size 1000 --json",
        sprite.display()
    ));
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row["policy"], "qdlp(fifo=0.2,ghost=0.5)");
    assert_eq!(row["misses"], 13365);
}

#[test]
fn bad_qdlp_lecar_lhd_and_mq_knobs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let trace = temp_trace(dir.path(), "t", "1\n");
    fails_with(
        &format!("sim {trace} --format lirs --policy qdlp(fifo=0.9) --cache-size 100"),
        &[
            "qdlp: `fifo=0.9` is out of range",
            "a number from 0.001 to 0.5",
        ],
    );
    fails_with(
        &format!("sim {trace} --format lirs --policy lecar(rate=1) --cache-size 100"),
        &[
            "lecar has no knob `rate`",
            "update (libCacheSim update-weight), lru (libCacheSim lru-weight)",
        ],
    );
    fails_with(
        &format!("sim {trace} --format lirs --policy lhd(samples=0) --cache-size 100"),
        &[
            "lhd: `samples=0` is out of range",
            "a whole number from 1 to 1024",
        ],
    );
    fails_with(
        &format!("sim {trace} --format lirs --policy mq(queues=100) --cache-size 100"),
        &[
            "mq: `queues=100` is out of range",
            "a whole number from 1 to 64",
        ],
    );
}

/// CLOCK-Pro's knobs (Caffeine's settings, as libCacheSim has none) reach
/// the policy: a wider minimum cold target changes the count on a loop,
/// the run is labelled canonically, and a minimum above the maximum is
/// refused naming both.
#[test]
fn clockpro_knobs_reach_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (0..40)
        .flat_map(|_| 0..150)
        .map(|k| format!("{k}\n"))
        .collect();
    let trace = temp_trace(dir.path(), "loop", &lines);
    let rows = json_rows(&format!(
        "sim {trace} --format lirs --policy clockpro,clock-pro(percent-min-resident-cold=0.5,non_resident=2) --cache-size 100 --json"
    ));
    assert_eq!(rows[0]["policy"], "clockpro");
    assert_eq!(rows[1]["policy"], "clockpro(min_cold=0.5,non_resident=2)");
    assert_ne!(rows[0]["misses"], rows[1]["misses"]);
    fails_with(
        &format!(
            "sim {trace} --format lirs --policy clockpro(min_cold=0.4,max_cold=0.3) --cache-size 100"
        ),
        &["min_cold at most max_cold"],
    );
}
