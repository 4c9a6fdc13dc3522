//! `coopcache sim mrc`: attribute caches' miss-ratio curves as a user runs
//! them.

use crate::common;

use common::*;

const SMALL: &str = "requests=100000,files=2000,directories=100";

fn json_rows(out: &std::process::Output) -> Vec<serde_json::Value> {
    assert!(out.status.success(), "{}", stderr(out));
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

#[test]
fn the_table_compares_every_configuration_with_the_first() {
    let out = coopcache_args(&[
        "sim",
        "mrc",
        "--workload-params",
        SMALL,
        "--sizes",
        "64K..1M",
        "--configs",
        "unix; variable; 64K/128 ID, x/8K General",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "read miss ratio",
        "reads vs base",
        "64K/128 ID, x/8K General",
        "variable against unix, mean change in disk accesses: small (<= 128K) reads",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from:\n{text}");
    }
    // Five sizes, three configurations.
    assert_eq!(text.lines().filter(|l| l.starts_with("unix ")).count(), 5);
}

#[test]
fn stack_distances_and_direct_simulation_print_the_same_figures() {
    let args = |direct: bool| {
        let mut a = vec![
            "sim",
            "mrc",
            "--workload-params",
            SMALL,
            "--sizes",
            "64K..32M",
            "--configs",
            "unix;variable;32K/128 ID, x/4K Temporal, 1M/64K Sequential",
            "--json",
        ];
        if direct {
            a.push("--direct");
        }
        json_rows(&coopcache_args(&a))
    };
    let (stack, direct) = (args(false), args(true));
    // The third configuration's fixed 1056K fits only from 2M up.
    assert_eq!(stack.len(), 2 * 10 + 5);
    assert_eq!(stack, direct);
    let unix_64k = &stack[0];
    assert_eq!(unix_64k["config"], "unix");
    assert_eq!(unix_64k["read_accesses_vs_baseline"], 1.0);
    assert!(unix_64k["read_misses"].as_u64().unwrap() > 0);
}

#[test]
fn the_variable_scheme_beats_the_unix_baseline_on_the_generated_workload() {
    let rows = json_rows(&coopcache_args(&["sim", "mrc", "--json"]));
    let variable: Vec<f64> = rows
        .iter()
        .filter(|r| r["config"] == "variable")
        .filter_map(|r| r["read_accesses_vs_baseline"].as_f64())
        .collect();
    assert_eq!(variable.len(), 13, "64K to 256M");
    // The paper's shape: fewer read disk accesses at almost every size.
    let fewer = variable.iter().filter(|&&v| v < 1.0).count();
    assert!(
        fewer >= 12,
        "variable wins at {fewer} of 13 sizes: {variable:?}"
    );
}

#[test]
fn a_csv_trace_is_read_and_plotted() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("client,file,type,size,offset,length,op\n");
    for round in 0..50 {
        csv.push_str("a,/home,directory,512,0,512,read\n");
        csv.push_str("a,i7,inode,128,0,128,read\n");
        for chunk in 0..8 {
            csv.push_str(&format!(
                "a,/home/big,datafile,1048576,{},8192,read\n",
                (round * 8 + chunk) % 128 * 8192
            ));
        }
        csv.push_str("b,/bin/cc,executable,90000,0,0,read\n");
        csv.push_str("a,i7,inode,128,0,128,write\n");
    }
    let trace = temp_trace(dir.path(), "requests.csv", &csv);
    let plots = dir.path().join("plots");
    let out = coopcache(&format!(
        "sim mrc {trace} --sizes 256K,2M --plot {}",
        plots.display()
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("wrote charts"));
    for png in [
        "attr-miss-ratio.png",
        "attr-expulsions.png",
        "attr-disk-accesses.png",
    ] {
        let bytes = std::fs::read(plots.join(png)).unwrap();
        assert!(bytes.starts_with(b"\x89PNG"), "{png}");
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = temp_trace(
        dir.path(),
        "bad.csv",
        "file,type,size\na,inode,128\nb,fifo,1\n",
    );
    fails_with(&format!("sim mrc {bad}"), &["bad.csv:3", "type `fifo`"]);
    fails_with("sim mrc --sizes 1M..2Q", &["`2Q`"]);
    fails_with(
        "sim mrc --workload-params colour=blue",
        &["colour", "size_sample"],
    );
    let out = coopcache_args(&["sim", "mrc", "--configs", "unix; 64K/128 ID, x/4K Tmporal"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("Tmporal"), "{}", stderr(&out));
    fails_with(
        &format!("sim mrc {bad} --workload-params seed=2"),
        &["--workload-params"],
    );
}

#[test]
fn an_attribute_cache_can_be_every_algorithms_node_cache() {
    let out = coopcache_args(&[
        "sim",
        "--workload",
        "fs",
        "--workload-params",
        "requests=20000,clients=3",
        "--algorithms",
        "base,direct,greedy,central,nchance,hash,wlru,best",
        "--client-cache",
        "4MiB",
        "--manager-cache",
        "1MiB",
        "--cache-config",
        // Central and Hash keep 20% of 4 MiB local: the fixed 272K fit.
        "16K/128 ID, x/4K Temporal, 256K/64K Sequential",
        "--json",
    ]);
    let rows = json_rows(&out);
    assert_eq!(rows.len(), 8);
    for r in &rows {
        assert!(r["reads"].as_u64().unwrap() > 0, "{r}");
    }
    // The same run without the attribute cache splits requests into 8 KiB
    // blocks: fewer, larger block reads.
    let plain = json_rows(&coopcache(
        "sim --workload fs --workload-params requests=20000,clients=3 --algorithms nchance --client-cache 4MiB --manager-cache 1MiB --json",
    ));
    assert!(plain[0]["reads"].as_u64() < rows[4]["reads"].as_u64());
}

#[test]
fn attribute_node_caches_need_file_requests() {
    fails_with(
        "sim --workload zipf --algorithms nchance --cache-config unix",
        &["--cache-config", "--workload fs", "zipf"],
    );
    let out = coopcache_args(&[
        "sim",
        "--workload",
        "fs",
        "--algorithms",
        "nchance",
        "--client-cache",
        "64KiB",
        "--cache-config",
        "64K/128 ID, x/4K Temporal",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("64K"), "{}", stderr(&out));
    fails_with(
        &format!(
            "sim --workload fs --cache-config unix --class-policy {}/../../docs/class-policies/cc-all.toml",
            env!("CARGO_MANIFEST_DIR")
        ),
        &["cannot be combined"],
    );
}

/// Local policies' curves (`sim mrc TRACE --format`): the one-pass LRU
/// curve gives `coopcache sim`'s LRU misses at every size, other policies
/// are replayed, and the plot is drawn.
#[test]
fn local_curves_agree_with_sim_and_draw_a_chart() {
    let Some(trace) = shared_trace("sprite.trace.gz") else {
        return;
    };
    let trace = trace.to_string_lossy().into_owned();
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("sprite.png");
    let rows = json_rows(&coopcache_args(&[
        "sim",
        "mrc",
        &trace,
        "--format",
        "lirs",
        "--policy",
        "lru,arc",
        "--cache-size",
        "100..1000:4,50%",
        "--json",
        "--plot",
        png.to_str().unwrap(),
    ]));
    assert!(std::fs::metadata(&png).unwrap().len() > 1000);
    assert_eq!(rows.len(), 2 * 5);
    let sim = json_rows(&coopcache_args(&[
        "sim",
        &trace,
        "--format",
        "lirs",
        "--policy",
        "lru,arc",
        "--cache-size",
        "100,400,700,1000,3538",
        "--json",
    ]));
    for (curve, replay) in rows.iter().zip(&sim) {
        assert_eq!(curve["policy"], replay["policy"]);
        assert_eq!(curve["cache_size_objects"], replay["cache_size_objects"]);
        assert_eq!(curve["misses"], replay["misses"], "{curve} {replay}");
    }
    assert_eq!(rows[0]["method"], "stack");
    assert_eq!(rows[5]["method"], "replay");
}

#[test]
fn bad_curve_options_are_refused_with_their_reason() {
    fails_with(
        "sim mrc x.trace --format lirs --cache-size 100%..1%:5",
        &["FROM must be smaller than TO"],
    );
    fails_with(
        "sim mrc x.trace --format lirs --cache-size 1..10",
        &["needs its number of points"],
    );
    fails_with(
        "sim mrc x.trace --format lirs --cache-size 1..10:0",
        &["expected 2 to 10000"],
    );
    fails_with(
        "sim mrc x.trace --format lirs --shards 2",
        &["--shards 2", "at most 1"],
    );
    fails_with(
        "sim mrc x.trace --format lirs --configs unix",
        &["--configs applies to attribute caches"],
    );
    fails_with("sim mrc --cache-size 10%", &["add --format"]);
}
