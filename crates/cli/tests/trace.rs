//! `coopcache trace stats` and `coopcache trace convert` as a user runs
//! them: output forms, format detection, conversion read back by `sim`.

use crate::common;

use common::*;

#[test]
fn stats_json_carries_the_independent_counts_of_sprite() {
    let Some(sprite) = shared_trace("sprite.trace.gz") else {
        return;
    };
    let out = coopcache(&format!(
        "trace stats {} --format lirs --json",
        sprite.display()
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["trace"], "sprite.trace.gz");
    assert_eq!(v["ops"]["requests"], 133_996);
    assert_eq!(v["objects"], 7_075);
    assert_eq!(v["one_hit_wonders"], 1_437);
    assert_eq!(v["cold"], 7_075);
    let alpha = v["zipf"]["alpha"].as_f64().unwrap();
    assert!((alpha - 1.3713).abs() < 1e-4, "{alpha}");
    assert_eq!(v["top"][0]["requests"], 468);
    assert!(v["reuse_distance"].as_array().unwrap().len() > 5);
}

#[test]
fn stats_table_csv_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    // Loop over a, b, c then one more d: distances 2, one-hit wonder d.
    let trace = temp_trace(
        dir.path(),
        "loop.txt",
        &format!("{}4\n", "1\n2\n3\n".repeat(4)),
    );
    let out = coopcache(&format!("trace stats {trace} --format txt"));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "requests         13 (reads 13, writes 0, deletes 0)",
        "one-hit wonders  1 (25.00% of objects)",
        "reuse distance (objects)",
        "zipf alpha",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from:\n{text}");
    }
    let out = coopcache(&format!("trace stats {trace} --format txt --csv"));
    assert!(out.status.success(), "{}", stderr(&out));
    let csv = stdout(&out);
    assert!(csv.starts_with("section,key,lo,hi,value\n"), "{csv}");
    assert!(csv.contains("summary,objects,,,4\n"), "{csv}");
    assert!(csv.contains("reuse_distance,,2,4,9\n"), "{csv}");
    assert!(csv.contains("reuse_distance,cold,,,4\n"), "{csv}");
    let plots = dir.path().join("plots");
    let out = coopcache(&format!(
        "trace stats {trace} --format txt --plot {}",
        plots.display()
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    for png in ["popularity.png", "reuse-distance.png", "request-rate.png"] {
        let bytes = std::fs::read(plots.join(png)).unwrap();
        assert!(bytes.starts_with(b"\x89PNG"), "{png}");
    }
}

#[test]
fn a_name_that_does_not_say_the_format_asks_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let trace = temp_trace(dir.path(), "ids.trace", "1\n2\n");
    fails_with(
        &format!("trace stats {trace}"),
        &["ids.trace", "--format", "lcs"],
    );
    fails_with(
        &format!("trace stats {trace} --format csv"),
        &["--csv-columns"],
    );
}

#[test]
fn convert_to_oracle_and_lcs_keeps_the_miss_counts() {
    let Some(cs) = shared_trace("cs.trace.gz") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let misses = |args: String| {
        let out = coopcache(&format!("sim {args} --cache-size 100,500 --json"));
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["misses"].clone())
            .collect::<Vec<_>>()
    };
    let original = misses(format!("{} --format lirs", cs.display()));
    for (to, name) in [
        ("oracle", "cs.oracleGeneral"),
        ("lcs", "cs.lcs"),
        ("lcs --lcs-version 2", "cs2.lcs"),
    ] {
        let out_path = dir.path().join(name);
        let out = coopcache(&format!(
            "trace convert {} {} --format lirs --to {to}",
            cs.display(),
            out_path.display()
        ));
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stdout(&out).contains("wrote 6781 requests"),
            "{}",
            stdout(&out)
        );
        assert!(stderr(&out).contains("size 1"), "{}", stderr(&out));
        // The name says the format: no --format. Counted as objects.
        assert_eq!(misses(out_path.display().to_string()), original, "{name}");
    }
    fails_with(
        &format!(
            "trace convert {} {} --format lirs --to oracle --lcs-version 2",
            cs.display(),
            dir.path().join("x").display()
        ),
        &["--lcs-version applies to --to lcs"],
    );
}

/// `coopcache trace stats TRACE | head -c 10`, with `head` gone before
/// the first line: the command ends quietly (killed by SIGPIPE, as Unix
/// tools are), never with a panic about the failed write.
#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let Some(trace) = shared_trace("sprite.trace.gz") else {
        return;
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_coopcache"))
        .args([
            "trace",
            "stats",
            trace.to_str().unwrap(),
            "--format",
            "lirs",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The pipe's read end closes now, long before the trace is read and
    // the first line written.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        out.status.success() || out.status.signal() == Some(13),
        "{:?}: {err}",
        out.status
    );
}
