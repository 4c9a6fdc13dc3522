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

/// A policy file for daemons: files below 256 KiB never looked up in
/// peers' memory, larger ones cooperative.
const LIVE_CLASSES: &str = "[[class]]\nname = \"small\"\nbelow = \"256KiB\"\ncooperative = false\n\n[[class]]\nname = \"large\"\n";

#[test]
fn daemons_apply_a_class_policy_file_to_each_files_size_class() {
    use crate::cluster::{fetch, start_cluster};
    let dir = tempfile::tempdir().unwrap();
    let classes = temp_trace(dir.path(), "classes.toml", LIVE_CLASSES);
    let origin = dir.path().join("origin");
    std::fs::create_dir_all(&origin).unwrap();
    let small: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let large: Vec<u8> = (0..1_000_000u32).map(|i| (i % 241) as u8).collect();
    std::fs::write(origin.join("small.txt"), &small).unwrap();
    std::fs::write(origin.join("large.bin"), &large).unwrap();
    let keys = dir.path().join("keys");
    crate::cluster::cluster_init(&keys, &["a", "b"]);
    let nodes = start_cluster(&["a", "b"], &keys, &origin, &["--class-policy", &classes]);
    for node in &nodes {
        assert!(fetch(node.http, "small.txt").unwrap() == small);
        assert!(fetch(node.http, "large.bin").unwrap() == large);
    }
    let b = nodes[1].status();
    // small.txt's 2 blocks of 64 KiB from the origin though node a holds
    // them; large.bin's 16 from node a.
    assert_eq!(b["origin_reads"], 2, "{b}");
    assert_eq!(b["reads"]["peer"], 16, "{b}");
    assert_eq!(b["integrity_failures"], 0, "{b}");
}

#[test]
fn a_nodes_class_policy_is_checked_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    let classes = temp_trace(dir.path(), "classes.toml", LIVE_CLASSES);
    let out = coopcache(&format!(
        "node --data-dir {} --init --class-policy {classes} --check-config",
        dir.path().join("keys").display()
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(
        shown.contains("class_policy") && shown.contains("small: cooperative off, forward on"),
        "{shown}"
    );
    fails_with(
        &format!("node --class-policy {classes} --algorithm greedy --check-config"),
        &["--class-policy", "classes.toml", "greedy", "nchance"],
    );
    let discard = temp_trace(
        dir.path(),
        "discard.toml",
        "[[class]]\nname = \"cold\"\nbelow = \"1KiB\"\ndiscard_cache = true\n[[class]]\n",
    );
    fails_with(
        &format!("node --class-policy {discard} --check-config"),
        &[
            "discard.toml",
            "discard_cache = true in class `cold`",
            "keeps no blocks",
        ],
    );
    fails_with(
        &format!(
            "node --class-policy {} --check-config",
            dir.path().join("none.toml").display()
        ),
        &["none.toml"],
    );
}
