//! `coopcache sim --consistency`: traces with writes through NFS's and
//! C2Cfs's close-to-open consistency, as a user runs them.

use crate::common;

use common::*;

#[test]
fn c2cfs_serves_reads_from_peers_that_nfs_reads_from_the_origin() {
    let rows = json_rows(
        "sim --workload sprite-like --workload-params requests=70000 --consistency nfs,c2cfs,c2cfs-exclusive --json",
    );
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["consistency"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["nfs", "c2cfs", "c2cfs-exclusive"]);
    let n = |r: &serde_json::Value, k: &str| r[k].as_u64().unwrap();
    let (nfs, shared, exclusive) = (&rows[0], &rows[1], &rows[2]);
    for r in &rows {
        assert_eq!(n(r, "stale_reads"), 0, "{r}");
        assert!(n(r, "writes") > 0, "the workload writes: {r}");
        assert_eq!(n(r, "origin_writes"), n(r, "writes"), "write-through: {r}");
        assert_eq!(
            n(r, "local") + n(r, "from_peers") + n(r, "origin_reads"),
            n(r, "reads")
        );
    }
    assert_eq!(n(nfs, "from_peers"), 0);
    assert_eq!(n(nfs, "manager_messages"), 0);
    assert!(n(shared, "from_peers") > 0);
    assert!(n(shared, "origin_reads") < n(nfs, "origin_reads"));
    // Shared mode asks the origin's version at every open, exclusive never.
    assert_eq!(n(shared, "origin_getattrs"), n(nfs, "origin_getattrs"));
    assert_eq!(n(exclusive, "origin_getattrs"), 0);
    assert_eq!(n(exclusive, "origin_reads"), n(shared, "origin_reads"));
}

#[test]
fn a_block_trace_with_writes_prints_a_table() {
    let trace = format!(
        "{}/../../../shared/traces/snia/msr-cambridge1-sample.csv",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = coopcache(&format!("sim {trace} --format msr --consistency nfs,c2cfs"));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("1024 reads and 720 writes"), "{text}");
    assert!(text.contains("origin getattrs"), "{text}");
}

#[test]
fn an_unknown_scheme_is_refused_naming_the_choices() {
    let out = coopcache("sim --workload sprite-like --consistency nfs,afs");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("`afs`") && err.contains("c2cfs-exclusive"),
        "{err}"
    );
    let out = coopcache("sim --workload sprite-like --consistency nfs --algorithms base");
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot be used with"),
        "{}",
        stderr(&out)
    );
}
