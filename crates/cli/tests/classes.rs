//! `coopcache sim --class-policy`: size-class policies as a user runs them.

use crate::common;

use common::*;

const SMALL: &str = "requests=60000,docs0=2000,docs1=2000,docs2=500,docs3=100";

fn docs(file: &str) -> String {
    format!(
        "{}/../../docs/class-policies/{file}.toml",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn each_policy_file_is_a_row_with_its_throughput() {
    let files = [docs("cc-all"), docs("cc-23-discard-01")].join(",");
    let out = coopcache(&format!(
        "sim --workload web --workload-params {SMALL} --client-cache 4MiB --manager-cache 4MiB --class-policy {files} --json"
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["policy"], "cc-all");
    assert_eq!(rows[1]["cooperative"], "{class2,class3}");
    assert_eq!(rows[1]["exclusive"], "{class2,class3}");
    for r in &rows {
        assert!(r["throughput_mb_s"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["reads"], 30_000);
        assert_eq!(r["disk_time_by_class"].as_array().unwrap().len(), 4);
    }
    // Exclusive everywhere: the storage node's memory serves nothing.
    assert_eq!(rows[0]["storage_memory_hit"], 0.0);
    assert!(rows[1]["storage_memory_hit"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_table_names_the_bottleneck_and_the_policies() {
    let dir = tempfile::tempdir().unwrap();
    let out = coopcache(&format!(
        "sim --workload web --workload-params {SMALL} --client-cache 4MiB --manager-cache 4MiB --class-policy {},{} --plot {}",
        docs("replication"),
        docs("no-cc"),
        dir.path().display()
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("node 0 disk") || text.contains("node 1 disk"),
        "{text}"
    );
    assert!(text.contains("storage disk"), "{text}");
    assert!(
        text.contains("Policies (classes with each option on)"),
        "{text}"
    );
    assert!(
        std::fs::read(dir.path().join("class-throughput.png"))
            .unwrap()
            .starts_with(b"\x89PNG")
    );
}

#[test]
fn bad_policy_files_and_options_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let typo = temp_trace(dir.path(), "typo.toml", "[default]\nreplicas = true\n");
    fails_with(
        &format!("sim --workload web --class-policy {typo}"),
        &["typo.toml", "line 2", "unknown field `replicas`", "replica"],
    );
    let bounds = temp_trace(
        dir.path(),
        "bounds.toml",
        "[[class]]\nbelow = \"2K\"\n[[class]]\nbelow = \"1K\"\n[[class]]\n",
    );
    fails_with(
        &format!("sim --workload web --class-policy {bounds}"),
        &["bounds.toml", "class 1", "increasing"],
    );
    fails_with(
        &format!(
            "sim --workload web --class-policy {} --algorithms greedy",
            docs("cc-all")
        ),
        &["N-Chance", "--algorithms nchance"],
    );
    fails_with(
        &format!(
            "sim --workload web --class-policy {} --hardware ibm",
            docs("cc-all")
        ),
        &["`ibm`", "webstone-1999"],
    );
    fails_with(
        &format!(
            "sim --workload web --class-policy {}",
            dir.path().join("none.toml").display()
        ),
        &["none.toml"],
    );
}
