//! `coopcache demo`, the README's main job: a loopback cluster reads with
//! and without cooperation; cooperation must need fewer origin reads and
//! no read may return wrong bytes.

mod common;
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
