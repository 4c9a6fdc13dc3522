//! `coopcache demo`, the README's main job: a loopback cluster reads with
//! and without cooperation; cooperation must need fewer origin reads and
//! no read may return wrong bytes.

use crate::common;
use common::coopcache_args;

#[test]
fn demo_shows_fewer_origin_reads_with_cooperation_and_no_wrong_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("demo.png");
    let plot_arg = plot.to_str().unwrap();
    let out = coopcache_args(&[
        "demo", "--reads", "300", "--files", "24", "--json", "--plot", plot_arg,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed: {stderr}");
    let rows: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    let (base, nchance) = (&rows[0], &rows[1]);
    assert_eq!(base["algorithm"], "base");
    assert_eq!(nchance["algorithm"], "nchance");
    for r in &rows {
        assert_eq!(r["reads"], 4 * 300);
        assert_eq!(r["wrong_bytes"], 0, "{r}");
        assert_eq!(r["integrity_failures"], 0, "{r}");
    }
    assert_eq!(base["peer"], 0, "no cooperation, no peer reads");
    let (b, n) = (
        base["origin_reads"].as_u64().unwrap(),
        nchance["origin_reads"].as_u64().unwrap(),
    );
    assert!(n < b, "nchance {n} origin reads, base {b}");
    assert!(
        std::fs::metadata(&plot).unwrap().len() > 1000,
        "plot written"
    );
}

/// The demo writes nothing into the current directory unless given
/// `--plot`; stopped by SIGTERM (as a service manager or `timeout` stops
/// it) it removes its temporary directory and exits non-zero.
#[test]
fn demo_stopped_by_sigterm_cleans_up_and_fails() {
    let (cwd, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_coopcache"))
        .args(["demo", "--reads", "100000", "--origin-delay", "20ms"])
        .current_dir(cwd.path())
        .env("TMPDIR", tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let started = || {
        std::fs::read_dir(tmp.path()).unwrap().flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("coopcache-demo-")
        })
    };
    while !started() {
        assert!(
            std::time::Instant::now() < deadline,
            "no temporary directory"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_secs(1));
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("terminated (SIGTERM)"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let written: Vec<_> = std::fs::read_dir(cwd.path()).unwrap().flatten().collect();
    assert!(
        written.is_empty(),
        "wrote into the current directory: {written:?}"
    );
}
