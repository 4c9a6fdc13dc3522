//! The `coopcache sim` command as a user runs it: output forms, exit codes
//! and error messages.

use crate::common;

use common::*;

#[test]
fn json_lines_carry_every_field_and_the_golden_count() {
    let Some(sprite) = shared_trace("sprite.trace.gz") else {
        return;
    };
    let out = coopcache(&format!(
        "sim {} --format lirs --policy lru,arc --cache-size 1000,2000 --json",
        sprite.display()
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 4);
    for field in [
        "trace",
        "policy",
        "cache_size_objects",
        "requests",
        "misses",
        "miss_ratio",
        "elapsed_s",
        "requests_per_s",
    ] {
        assert!(
            rows.iter().all(|r| r.get(field).is_some()),
            "missing {field}"
        );
    }
    // libCacheSim's golden LRU count for sprite at 1,000 blocks.
    assert_eq!(rows[0]["policy"], "lru");
    assert_eq!(rows[0]["cache_size_objects"], 1000);
    assert_eq!(rows[0]["misses"], 12544);
    assert_eq!(rows[0]["requests"], 133996);
}

#[test]
fn table_is_the_default_and_byte_sizes_divide_by_the_block() {
    let dir = tempfile::tempdir().unwrap();
    let trace = temp_trace(dir.path(), "loop.lirs", &"1\n2\n3\n".repeat(100));
    let out = coopcache(&format!(
        "sim {trace} --format lirs --cache-size 16KiB --block-size 8KiB"
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("trace"), "{text}");
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    // Two blocks of LRU on a loop of three: every request misses.
    assert_eq!(
        row[..6],
        ["loop.lirs", "lru", "2", "300", "300", "1.0000"],
        "{text}"
    );
}

#[test]
fn a_trace_with_sizes_makes_a_byte_cache_with_ops_honoured() {
    let dir = tempfile::tempdir().unwrap();
    // id,size,op: 100 bytes of LRU. 1 and 2 fit; the write of 3 evicts 1;
    // 4 is larger than the cache; 2 is deleted, so its read misses; 0-byte
    // objects are left out.
    let trace = temp_trace(
        dir.path(),
        "kv.csv",
        "1,60,get\n2,30,get\n3,50,set\n4,200,get\n2,30,delete\n2,30,get\n1,60,get\n5,0,get\n",
    );
    let out = coopcache(&format!(
        "sim {trace} --format csv --csv id=1,size=2,op=3 --cache-size 100B --json"
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("1 request of size 0"),
        "{}",
        stderr(&out)
    );
    let row: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    for (field, value) in [
        ("cache_size_bytes", 100),
        ("requests", 5),
        ("misses", 5),
        ("bytes_requested", 380),
        ("bytes_missed", 380),
        ("writes", 1),
        ("deletes", 1),
        ("zero_size_skipped", 1),
    ] {
        assert_eq!(row[field], value, "{field}: {row}");
    }
    assert!(row["cache_size_objects"].is_null() && row["block_size"].is_null());
    // A count of objects has no byte capacity; --block-size does not apply.
    let out = coopcache(&format!(
        "sim {trace} --format csv --csv id=1,size=2 --cache-size 2 --json"
    ));
    let row: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert!(row["cache_size_bytes"].is_null(), "{row}");
    fails_with(
        &format!("sim {trace} --format csv --csv id=1,size=2 --cache-size 1KiB --block-size 4KiB"),
        &["--block-size", "has sizes"],
    );
}

#[test]
fn several_traces_compose_into_one() {
    let dir = tempfile::tempdir().unwrap();
    let a = temp_trace(dir.path(), "a", "1\n2\n");
    let b = temp_trace(dir.path(), "b", "1\n2\n3\n");
    fails_with(
        &format!("sim {a} {b} --format lirs --cache-size 10"),
        &["--compose"],
    );
    for (ids, misses) in [("disjoint", 5), ("shared", 3)] {
        let out = coopcache(&format!(
            "sim {a} {b} --format lirs --cache-size 10 --compose round-robin --ids {ids} --json"
        ));
        assert!(out.status.success(), "{}", stderr(&out));
        let row: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(
            (row["requests"].as_u64(), row["misses"].as_u64()),
            (Some(5), Some(misses)),
            "{ids}"
        );
        assert_eq!(row["trace"], "a+b");
    }
}

#[test]
fn bad_options_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let trace = temp_trace(dir.path(), "t", "1\n");
    fails_with(
        &format!("sim {trace} --format xml --cache-size 10"),
        &["xml", "lirs, lis, be32"],
    );
    fails_with(
        &format!("sim {trace} --format lirs --policy nosuch --cache-size 10"),
        &["nosuch", "expected one of"],
    );
    fails_with(
        &format!("sim {trace} --format lirs --cache-size 0"),
        &["cache size `0`", "at least one block"],
    );
    fails_with(
        &format!("sim {trace} --format lirs --cache-size 4KiB"),
        &["at least one block of 8192 bytes"],
    );
    fails_with(
        &format!("sim {trace} --format lirs --cache-size 12parsecs"),
        &["12parsecs"],
    );
    fails_with(
        &format!("sim {trace} --format lirs --policy s3fifo --cache-size 5"),
        &["cache size 5", "s3fifo", "10"],
    );
    fails_with(
        &format!("sim {trace} --format csv --cache-size 10"),
        &["--csv"],
    );
    fails_with(
        &format!("sim {trace} --format csv --csv id=0 --cache-size 10"),
        &["`id=0`"],
    );
}

/// `--output csv` is a header and one row per run, the same figures as
/// the JSON; `--report-interval` splits each run into intervals whose
/// counts sum to the run's.
#[test]
fn csv_rows_and_intervals_match_the_whole_runs() {
    let dir = tempfile::tempdir().unwrap();
    // A loop over 1..=3 then a loop over 4..=9: a 3-block LRU misses 3
    // times in the first 300 requests, then every time.
    let text = "1\n2\n3\n".repeat(100) + &"4\n5\n6\n7\n8\n9\n".repeat(50);
    let trace = temp_trace(dir.path(), "two-loops.lirs", &text);
    let base = format!("sim {trace} --format lirs --policy lru,fifo --cache-size 3");
    let out = coopcache(&format!("{base} --output csv"));
    assert!(out.status.success(), "{}", stderr(&out));
    let csv = stdout(&out);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    assert_eq!(rows[0][col("policy")], "lru");
    assert_eq!(rows[0][col("requests")], "600");
    assert_eq!(rows[0][col("misses")], "303");
    assert_eq!(rows[0][col("cache_size_objects")], "3");

    let out = coopcache(&format!("{base} --report-interval 250 --output csv"));
    assert!(out.status.success(), "{}", stderr(&out));
    let csv = stdout(&out);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // Three intervals per run (250, 500, 600), run-major.
    let ends: Vec<&str> = rows.iter().map(|r| r[col("interval_end")]).collect();
    assert_eq!(ends, ["250", "500", "600", "250", "500", "600"], "{csv}");
    let misses: Vec<&str> = rows[..3].iter().map(|r| r[col("misses")]).collect();
    // LRU: 3 cold misses, then 200 of the second loop's in 251-500, then 100.
    assert_eq!(misses, ["3", "200", "100"], "{csv}");
    assert_eq!(rows[0][col("miss_ratio")], "0.012");

    // The table shows the intervals, then the whole runs.
    let out = coopcache(&format!("{base} --report-interval 250"));
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(
        table.contains("requests read") && table.contains("Mreq/s"),
        "{table}"
    );

    fails_with(
        &format!("{base} --report-interval 0"),
        &["--report-interval", "at least 1"],
    );
    fails_with(
        "sim --workload zipf --workload-params requests=2000 --algorithms base --output csv",
        &["--output csv", "local policies"],
    );
    fails_with(
        "sim --workload zipf --workload-params requests=2000 --algorithms base --report-interval 10",
        &["--report-interval", "cluster"],
    );
}

/// The csv columns of `--output csv`, and its rows split into cells.
fn csv_table(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut lines = text.lines();
    let header = lines
        .next()
        .unwrap_or_default()
        .split(',')
        .map(String::from);
    let rows = lines.map(|l| l.split(',').map(String::from).collect());
    (header.collect(), rows.collect())
}

/// `--report-interval 1min` cuts a timestamped trace at every minute of
/// trace time from its first request; the minute without requests is left
/// out, and the last interval ends on its minute though its requests stop
/// before. Formats without timestamps, or a csv time of no unit, refuse a
/// span naming what is missing.
#[test]
fn intervals_of_trace_time_end_on_each_multiple() {
    let dir = tempfile::tempdir().unwrap();
    // Seconds 100-159: three requests; 160-219: two; 220-279: none; 280-339: one.
    let text = "100,1\n110,2\n159,3\n160,1\n161,2\n300,3\n";
    let trace = temp_trace(dir.path(), "timed.csv", text);
    let base = format!("sim {trace} --format csv --csv time=1,id=2,time_unit=s --cache-size 2");
    let out = coopcache(&format!("{base} --report-interval 1min --output csv"));
    assert!(out.status.success(), "{}", stderr(&out));
    let (header, rows) = csv_table(&stdout(&out));
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let cells = |name: &str| -> Vec<&str> { rows.iter().map(|r| r[col(name)].as_str()).collect() };
    assert_eq!(cells("end_time_s"), ["60.0", "120.0", "240.0"]);
    assert_eq!(cells("interval_end"), ["3", "5", "6"]);
    assert_eq!(cells("requests"), ["3", "2", "1"]);
    // The table gains an end time column.
    let out = coopcache(&format!("{base} --report-interval 1min"));
    assert!(stdout(&out).contains("end time (s)"), "{}", stdout(&out));

    fails_with(
        &format!("sim {trace} --format csv --csv time=1,id=2 --cache-size 2 --report-interval 1h"),
        &["--report-interval", "time_unit"],
    );
    let lirs = temp_trace(dir.path(), "t.lirs", "1\n2\n1\n");
    fails_with(
        &format!("sim {lirs} --format lirs --cache-size 2 --report-interval 1h"),
        &["--report-interval", "lirs traces have no timestamps"],
    );
    fails_with(
        &format!("{base} --report-interval 1fortnight"),
        &["--report-interval", "10min"],
    );
}

/// The MSR sample's 100 ns clock: about two minutes of trace in intervals
/// of 30 s, whose reads sum to the whole run's.
#[test]
fn msr_sample_reports_every_thirty_seconds() {
    let Some(msr) = shared_trace("snia/msr-cambridge1-sample.csv") else {
        return;
    };
    let base = format!("sim {} --format msr --cache-size 100", msr.display());
    let out = coopcache(&format!("{base} --report-interval 30s --output csv"));
    assert!(out.status.success(), "{}", stderr(&out));
    let (header, rows) = csv_table(&stdout(&out));
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let ends: Vec<f64> = rows
        .iter()
        .map(|r| r[col("end_time_s")].parse().unwrap())
        .collect();
    assert!(ends.len() >= 4, "{ends:?}");
    assert!(ends.windows(2).all(|w| w[0] < w[1]), "{ends:?}");
    assert!(ends.iter().all(|e| e % 30.0 == 0.0), "{ends:?}");
    let reads: u64 = rows
        .iter()
        .map(|r| r[col("requests")].parse::<u64>().unwrap())
        .sum();
    let out = coopcache(&format!("{base} --output csv"));
    let (header, whole) = csv_table(&stdout(&out));
    let requests = header.iter().position(|h| h == "requests").unwrap();
    assert_eq!(reads, whole[0][requests].parse::<u64>().unwrap());
}

/// `--plot FILE.png` on a local run: the miss ratio over time with
/// `--report-interval`, against cache size with several sizes; refused
/// with one size and no intervals, saying what to add.
#[test]
fn local_plots_draw_over_time_or_cache_size() {
    let dir = tempfile::tempdir().unwrap();
    let text = "1\n2\n3\n".repeat(100) + &"4\n5\n6\n7\n8\n9\n".repeat(50);
    let trace = temp_trace(dir.path(), "two-loops.lirs", &text);
    let base = format!("sim {trace} --format lirs --policy lru,fifo");
    let is_png = |path: &std::path::Path| {
        let bytes = std::fs::read(path).unwrap();
        assert!(
            bytes.starts_with(b"\x89PNG"),
            "{} is no PNG",
            path.display()
        );
        assert!(
            bytes.len() > 5_000,
            "{}: {} bytes",
            path.display(),
            bytes.len()
        );
    };
    let over_time = dir.path().join("over-time.png");
    let out = coopcache(&format!(
        "{base} --cache-size 3,6 --report-interval 100 --plot {}",
        over_time.display()
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("wrote"), "{}", stdout(&out));
    is_png(&over_time);

    let by_size = dir.path().join("by-size.png");
    let out = coopcache(&format!(
        "{base} --cache-size 2,3,6 --plot {} --plot-metric byte-miss-ratio --json",
        by_size.display()
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("wrote"), "json stays rows only");
    is_png(&by_size);

    fails_with(
        &format!("{base} --cache-size 3 --plot {}", by_size.display()),
        &["--plot", "--cache-size", "--report-interval"],
    );
    fails_with(
        &format!("{base} --cache-size 3,6 --plot figures"),
        &["--plot figures", "FILE.png"],
    );
    fails_with(
        &format!("{base} --cache-size 3,6 --plot-metric miss-ratio"),
        &["--plot-metric", "--plot FILE.png"],
    );
}

/// A local-policy run refuses the cooperative options it would ignore,
/// naming the flag, rather than exit 0 unchanged.
#[test]
fn local_runs_refuse_cooperative_options() {
    let dir = tempfile::tempdir().unwrap();
    let trace = temp_trace(dir.path(), "t", "1\n2\n1\n");
    for flag in [
        "--warmup 1",
        "--chances 3",
        "--seed 2",
        "--profile dc-2026-s3",
        "--central-fraction 0.5",
        "--foreign-first",
        "--hardware dc-2026",
        "--client-cache 1MiB",
    ] {
        let name = flag.split(' ').next().unwrap();
        fails_with(
            &format!("sim {trace} --format lirs --cache-size 2 {flag}"),
            &[name, "applies to cooperative caching", "--algorithms"],
        );
    }
    // The same options work with --algorithms (here the seed).
    let out =
        coopcache("sim --workload zipf --workload-params requests=2000 --algorithms base --seed 2");
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn bad_traces_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad = temp_trace(dir.path(), "bad.lirs", "1\n2\nx3\n");
    fails_with(
        &format!("sim {bad} --format lirs --cache-size 10"),
        &["bad.lirs:3", "`x3`", "expected one unsigned integer"],
    );
    let truncated = temp_trace(dir.path(), "short.be32", "abcdef");
    fails_with(
        &format!("sim {truncated} --format be32 --cache-size 10"),
        &["short.be32", "record 2 is truncated"],
    );
    fails_with(
        "sim /no/such/trace --format lirs --cache-size 10",
        &["/no/such/trace"],
    );
    // A trace of nothing is refused, not replayed as 0 requests.
    let empty = temp_trace(dir.path(), "empty.be32", "");
    fails_with(
        &format!("sim {empty} --format be32 --cache-size 10"),
        &["empty.be32", "no requests in it", "a be32 trace"],
    );
    let blank = temp_trace(dir.path(), "blank.lirs", "\n\n");
    fails_with(
        &format!("sim {blank} --format lirs --cache-size 10"),
        &["blank.lirs", "no requests in it"],
    );
    // A name that says compressed must be: a 0-byte .xz is not an empty trace.
    let not_xz = temp_trace(dir.path(), "trace.lirs.xz", "");
    fails_with(
        &format!("sim {not_xz} --format lirs --cache-size 10"),
        &["trace.lirs.xz", "its name says xz", "an xz stream"],
    );
    // A line's bytes reach the terminal escaped: no escape sequence gets
    // through from a file.
    let hostile = temp_trace(dir.path(), "esc.lirs", "1\n\x1b[2J\x1b]0;owned\x07\n");
    let out = coopcache(&format!("sim {hostile} --format lirs --cache-size 10"));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("esc.lirs:2"), "{err}");
    assert!(
        !err.contains('\x1b') && !err.contains('\x07'),
        "raw control bytes in: {err:?}"
    );
    assert!(
        err.contains("\\u{1b}[2J"),
        "the escape shown escaped: {err}"
    );
}

#[test]
fn a_fault_soak_reports_json() {
    let rows = json_rows("sim faults --seeds 20 --ops 200 --json");
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r["seeds"], 20);
    assert_eq!(r["mode"], "safety");
    assert!(r["reads"].as_u64().unwrap() >= 20 * 200, "{r}");
    assert_eq!(r["violations"].as_array().map(Vec::len), Some(0), "{r}");
    assert!(
        r["faults"].as_object().is_some_and(|f| !f.is_empty()),
        "{r}"
    );
    let one = json_rows("sim faults --seed 3 --ops 200 --json");
    assert_eq!(one[0]["seed"], 3);
    assert!(one[0]["failure"].is_null(), "{}", one[0]);
}

#[test]
fn the_live_protocol_follows_the_model_read_by_read_at_a_hundred_nodes() {
    let rows = json_rows("sim live --nodes 100 --reads 3000 --json");
    assert_eq!(rows.len(), 5, "every live algorithm: {rows:?}");
    for r in &rows {
        assert_eq!(r["nodes"], 100);
        assert_eq!(r["agreed"], 3000, "{r}");
        assert_eq!(r["faults"], 0, "{r}");
        assert!(r["first_difference"].is_null(), "{r}");
        assert!(r["messages"].as_u64().unwrap() > 3000, "{r}");
    }
    let peer = |name: &str| rows.iter().find(|r| r["algorithm"] == name).unwrap()["peer"].clone();
    assert!(peer("nchance").as_u64().unwrap() > 0, "{rows:?}");
    // With idle members, Direct parks at them (its reads from peers are
    // reclaimed parked blocks), still read by read as its model does.
    let rows =
        json_rows("sim live --nodes 100 --reads 3000 --lenders 20 --algorithms direct --json");
    assert_eq!(rows[0]["lenders"], 20);
    assert_eq!(rows[0]["agreed"], 3000, "{rows:?}");
    assert!(rows[0]["first_difference"].is_null(), "{rows:?}");
    assert!(rows[0]["peer"].as_u64().unwrap() > 0, "{rows:?}");
    let out = coopcache("sim live --nodes 4 --lenders 4");
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--lenders 4 leaves no node to read"),
        "{}",
        stderr(&out)
    );
    let out = coopcache("sim live --algorithms central");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("--algorithms") && err.contains("central manager"),
        "{err}"
    );
}

#[test]
fn cooperative_json_has_the_papers_figures_per_algorithm() {
    let out = coopcache(
        "sim --workload sprite-like --workload-params requests=60000 --algorithms base,greedy,nchance --json",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["algorithm"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["base", "greedy", "nchance"]);
    for field in [
        "algorithm",
        "avg_read_us",
        "local_hit",
        "server_mem_hit",
        "remote_hit",
        "origin_rate",
        "server_load_vs_base",
        "speedup_vs_base",
        "worst_client_speedup",
    ] {
        assert!(
            rows.iter().all(|r| r.get(field).is_some()),
            "missing {field}"
        );
    }
    for r in &rows {
        let parts: f64 = ["local_hit", "server_mem_hit", "remote_hit", "origin_rate"]
            .iter()
            .map(|f| r[*f].as_f64().unwrap())
            .sum();
        assert!((parts - 1.0).abs() < 1e-9, "levels sum to {parts}");
    }
    assert_eq!(rows[0]["speedup_vs_base"], 1.0);
    assert_eq!(
        rows[0]["remote_hit"], 0.0,
        "Base never reads from another node"
    );
}

#[test]
fn cooperative_tables_print_each_figure() {
    let out =
        coopcache("sim --workload zipf --workload-params requests=20000 --algorithms greedy,hash");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for heading in ["Figure 4", "Figure 5", "Figure 6", "Figure 7"] {
        assert!(text.contains(heading), "no {heading} table in:\n{text}");
    }
}

#[test]
fn a_multi_client_trace_drives_a_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let trace = temp_trace(
        dir.path(),
        "t.csv",
        "1,100,r,0\n2,101,r,1\n3,100,r,1\n4,100,r,2\n",
    );
    let out = coopcache(&format!(
        "sim {trace} --format csv --csv time=1,id=2,op=3,client=4 --algorithms greedy --client-cache 2 --manager-cache 1 --json"
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let row: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(row["nodes"], 3, "one node per client in the trace");
    assert_eq!(row["reads"], 4);
}

#[test]
fn bad_cooperative_options_are_clear_errors() {
    fails_with(
        "sim --workload sprite-like --algorithms greedy,lfu",
        &["lfu", "expected one of base"],
    );
    fails_with(
        "sim --workload sprite --algorithms base --central-fraction 1.5",
        &["central fraction `1.5`"],
    );
    fails_with(
        "sim --workload sprite-like --algorithms base --workload-params hot=3",
        &["`hot`", "hot_files"],
    );
    fails_with(
        "sim --workload sprite-like --algorithms base --workload-params requests=-1",
        &["requests=-1"],
    );
    fails_with(
        "sim --workload mars --algorithms base",
        &["`mars`", "sprite-like"],
    );
    fails_with("sim --workload zipf", &["--algorithms"]);
    fails_with("sim --algorithms base", &["--workload"]);
    fails_with(
        "sim --workload zipf --algorithms base --policy lru,arc",
        &["one --policy"],
    );
    fails_with(
        "sim --workload zipf --algorithms base --profile vax",
        &["`vax`", "atm-1994"],
    );
    fails_with(
        "sim --workload zipf --algorithms base --policy lirs",
        &["node policy `lirs`", "reports every block"],
    );
    fails_with(
        "sim --workload zipf --algorithms nchance --chances 9",
        &["chances `9`", "at most 8"],
    );
    let dir = tempfile::tempdir().unwrap();
    // Client labels are numbered in order of appearance: a, b, c are 0, 1, 2.
    let trace = temp_trace(dir.path(), "t.csv", "1,100,r,a\n2,100,r,b\n3,100,r,c\n");
    fails_with(
        &format!(
            "sim {trace} --format csv --csv time=1,id=2,op=3,client=4 --algorithms base --clients 2"
        ),
        &["request 3 comes from client 2", "2 nodes"],
    );
}

/// A gateway beyond loopback needs a token (or an explicit
/// --http-allow-anonymous); the refusal comes before any key or CA is
/// written.
#[test]
fn an_exposed_gateway_without_a_token_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    let base = format!(
        "node --origin {} --data-dir {} --listen 127.0.0.1:0 --http 0.0.0.0:0",
        dir.path().display(),
        keys.display()
    );
    fails_with(
        &base,
        &[
            "0.0.0.0:0",
            "not a loopback address",
            "--http-token-file",
            "--http-allow-anonymous",
        ],
    );
    assert!(!keys.exists(), "a refused start wrote keys");
    let token = dir.path().join("token");
    std::fs::write(&token, "short\n").unwrap();
    fails_with(
        &format!("{base} --http-token-file {}", token.display()),
        &["token file", "too short"],
    );
}

/// `sim sweep` shares `sim`'s options; one it would ignore is refused
/// with the reason, not dropped.
#[test]
fn sweep_refuses_options_it_would_ignore() {
    for (flag, why) in [
        ("--json", "CSV files"),
        ("--cache-size 100", "its own sizes"),
        ("--class-policy x.toml", "class policies"),
        ("--plot figs", "into --out"),
    ] {
        let out = coopcache(&format!(
            "sim sweep --workload sprite-like --out /nonexistent/sweep {flag}"
        ));
        assert!(!out.status.success(), "{flag} accepted");
        let err = stderr(&out);
        let name = flag.split_whitespace().next().unwrap();
        assert!(
            err.contains(&format!("does not take {name}")) && err.contains(why),
            "{flag}: {err}"
        );
    }
}

/// Completions come from the CLI's definition: bash's script completes
/// the daemon and its flags, every shell clap_complete knows gets one, and
/// an unknown shell is named with the ones there are.
#[test]
fn completions_are_generated_for_each_shell() {
    let out = coopcache("completions bash");
    assert!(out.status.success(), "{}", stderr(&out));
    let bash = stdout(&out);
    for needle in ["coopcache", "node", "--memory", "--check-config", "cluster"] {
        assert!(
            bash.contains(needle),
            "`{needle}` missing from bash completions"
        );
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = coopcache(&format!("completions {shell}"));
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        assert!(stdout(&out).contains("--memory"), "{shell}: no --memory");
    }
    fails_with("completions tcsh", &["tcsh", "bash", "zsh", "fish"]);
}

/// The man page is roff from the CLI's definition; --out writes one page
/// per subcommand, the daemon's with its flags.
#[test]
fn man_pages_are_roff_and_cover_the_subcommands() {
    let out = coopcache("man");
    assert!(out.status.success(), "{}", stderr(&out));
    let page = stdout(&out);
    assert!(page.contains(".TH coopcache 1"), "no .TH header:\n{page}");
    assert!(
        page.contains("coopcache\\-node(1)"),
        "node not listed:\n{page}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("man1");
    let out = coopcache(&format!("man --out {}", out_dir.display()));
    assert!(out.status.success(), "{}", stderr(&out));
    let node = std::fs::read_to_string(out_dir.join("coopcache-node.1")).unwrap();
    assert!(node.contains(".TH coopcache-node 1"), "{node}");
    for flag in ["\\-\\-memory", "\\-\\-init", "\\-\\-log\\-level"] {
        assert!(
            node.contains(flag),
            "`{flag}` missing from coopcache-node.1"
        );
    }
    assert!(out_dir.join("coopcache-cluster-init.1").exists());
}
