//! The S3 endpoint as its users reach it: boto3, the AWS CLI and rclone
//! (real clients, not our encoder) against a cluster of three nodes over a
//! directory origin, each node with `--s3`. Every byte a client reads is
//! compared with the origin's, every byte it writes is looked for in the
//! origin, and a write on one node is read on the others.
//!
//! boto3 and the AWS CLI come from the venv `scripts/test-deps.sh` makes in
//! `target/s3-clients`; rclone from Debian. Without them the tests fail
//! (CI has them), or skip under `COOPCACHE_ALLOW_SKIP=1`.

use crate::cluster::members;
use crate::cluster::{Node, NodeSpec, cluster_init, free_addr, wait_until};
use crate::common::random_bytes;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const KEY: &str = "coopcache-test";
const SECRET: &str = "s3cr3t-for-tests-only";

/// Three nodes with an S3 endpoint each, over a directory origin holding
/// bucket `data`.
struct S3Cluster {
    dir: tempfile::TempDir,
    nodes: Vec<Node>,
    endpoints: Vec<SocketAddr>,
}

impl S3Cluster {
    fn start() -> S3Cluster {
        S3Cluster::start_with(&[])
    }

    /// [`S3Cluster::start`], each node given `more` arguments too.
    fn start_with(more: &[&str]) -> S3Cluster {
        let dir = tempfile::tempdir().unwrap();
        let (keys, origin) = (dir.path().join("keys"), dir.path().join("origin"));
        std::fs::create_dir_all(origin.join("data")).unwrap();
        cluster_init(&keys, &["a", "b", "c"]);
        let key_file = dir.path().join("s3-keys");
        std::fs::write(&key_file, format!("# the tests' key\n{KEY} {SECRET}\n")).unwrap();
        let (mut nodes, mut endpoints) = (Vec::new(), Vec::new());
        for name in ["a", "b", "c"] {
            let s3 = free_addr();
            let s3_arg = s3.to_string();
            let extra = [
                "--memory",
                "128MiB",
                "--max-pinned",
                "16MiB",
                "--s3",
                &s3_arg,
                "--s3-keys",
                key_file.to_str().unwrap(),
            ];
            let extra = [&extra[..], more].concat();
            nodes.push(Node::start(&NodeSpec {
                name,
                keys: &keys,
                origin: &origin,
                join: nodes.first().map(|n: &Node| n.listen),
                extra: &extra,
            }));
            endpoints.push(s3);
        }
        for n in &nodes {
            wait_until(&format!("{} sees 3 members", n.name), || {
                members(&n.status()) == 3
            });
        }
        S3Cluster {
            dir,
            nodes,
            endpoints,
        }
    }

    fn origin(&self) -> PathBuf {
        self.dir.path().join("origin")
    }

    /// A work directory for the client's files (made), and the origin's
    /// bucket `data`.
    fn dirs(&self, work: &str) -> (PathBuf, PathBuf) {
        let dir = self.dir.path().join("work");
        std::fs::create_dir_all(dir.join(work)).unwrap();
        (dir, self.origin().join("data"))
    }

    fn url(&self, i: usize) -> String {
        format!("http://{}", self.endpoints[i])
    }

    fn logs(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("--- {}:\n{}", n.name, n.log_text()))
            .collect()
    }
}

fn check(what: &str, out: Output, cluster: &S3Cluster) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed\nstdout: {stdout}\nstderr: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        cluster.logs()
    );
    stdout
}

/// `curl --aws-sigv4` (its own signer, not ours) on the cache's own
/// operations: `?coopcache-warm`, `-pin`, `-evict` and `DELETE
/// ?coopcache-pin`, signed with the endpoint's keys, and refused unsigned
/// or badly signed.
#[test]
fn curl_warms_pins_and_evicts_through_the_s3_endpoint() {
    let c = S3Cluster::start();
    let (_, bucket) = c.dirs("ops");
    std::fs::create_dir_all(bucket.join("set")).unwrap();
    for i in 0..3 {
        let path = bucket.join(format!("set/f{i}.bin"));
        std::fs::write(path, random_bytes(i, 200_000)).unwrap();
    }
    let curl = |method: &str, path: &str, secret: Option<&str>| -> (u16, String) {
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "-w", "\n%{http_code}", "-X", method]);
        if let Some(secret) = secret {
            let user = format!("{KEY}:{secret}");
            cmd.args(["--aws-sigv4", "aws:amz:us-east-1:s3", "--user", &user]);
            // The empty body's SHA-256, which S3 signatures carry.
            let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
            cmd.args(["-H", &format!("x-amz-content-sha256: {empty}")]);
        }
        cmd.arg(format!("{}{path}", c.url(0)));
        let out = check(
            &format!("curl -X {method} {path}"),
            cmd.output().unwrap(),
            &c,
        );
        let (body, code) = out.trim_end().rsplit_once('\n').unwrap();
        (code.parse().unwrap(), body.to_string())
    };
    let json = |body: &str| -> serde_json::Value { serde_json::from_str(body).unwrap() };

    for (secret, why) in [(None, "unsigned"), (Some("wrong-secret"), "a wrong secret")] {
        let (code, body) = curl("POST", "/data/set/?coopcache-warm=", secret);
        assert_eq!(code, 403, "{why}: {body}");
    }
    let (code, body) = curl("POST", "/data/set/?coopcache-warm=", Some(SECRET));
    assert_eq!(code, 200, "{body}");
    let v = json(&body);
    assert_eq!(
        (&v["files"], &v["bytes"], &v["done"]),
        (&3.into(), &600_000.into(), &true.into())
    );

    let (code, body) = curl("POST", "/data/set/f0.bin?coopcache-pin=", Some(SECRET));
    assert_eq!((code, &json(&body)["files"]), (200, &1.into()), "{body}");
    assert_eq!(c.nodes[0].status()["pinned_bytes"], 200_000);
    let (code, body) = curl("DELETE", "/data/set/f0.bin?coopcache-pin=", Some(SECRET));
    assert_eq!(
        (code, &json(&body)["bytes"]),
        (200, &200_000.into()),
        "{body}"
    );
    assert_eq!(c.nodes[0].status()["pinned_bytes"], 0);

    let (code, body) = curl("POST", "/data/set?coopcache-evict=", Some(SECRET));
    assert_eq!((code, &json(&body)["files"]), (200, &3.into()), "{body}");
    assert_eq!(c.nodes[0].status()["cached_bytes"], 0);
    let (code, body) = curl("POST", "/data/none.bin?coopcache-warm=", Some(SECRET));
    assert_eq!(code, 404, "{body}");
    assert!(body.contains("NoSuchKey"), "{body}");
}

#[test]
fn boto3_lists_reads_writes_and_is_refused_as_s3_refuses() {
    let Some(venv) = crate::common::s3_clients() else {
        return;
    };
    let cluster = S3Cluster::start();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/s3/boto3_clients.py");
    let endpoints: Vec<String> = (0..3).map(|i| cluster.url(i)).collect();
    let out = Command::new(venv.join("bin/python"))
        .arg(&script)
        .current_dir(cluster.dir.path())
        .env("ENDPOINTS", endpoints.join(","))
        .env("KEY", KEY)
        .env("SECRET", SECRET)
        .env("ORIGIN", cluster.origin())
        .env("HOME", cluster.dir.path())
        .env_remove("AWS_CA_BUNDLE")
        .output()
        .unwrap();
    let stdout = check("boto3_clients.py", out, &cluster);
    assert!(stdout.contains("boto3: ok"), "{stdout}");
}

/// Runs the AWS CLI against node `i`'s endpoint.
fn aws(venv: &Path, cluster: &S3Cluster, i: usize, args: &[&str]) -> String {
    let out = Command::new(venv.join("bin/aws"))
        .args(["--endpoint-url", &cluster.url(i)])
        .args(args)
        .env("AWS_ACCESS_KEY_ID", KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env_remove("AWS_CA_BUNDLE")
        .env("HOME", cluster.dir.path())
        .output()
        .unwrap();
    check(&format!("aws {}", args.join(" ")), out, cluster)
}

#[test]
fn the_aws_cli_copies_syncs_lists_and_removes() {
    let Some(venv) = crate::common::s3_clients() else {
        return;
    };
    let cluster = S3Cluster::start();
    let (work, data) = cluster.dirs("tree/sub");
    // Above the CLI's 8 MiB multipart threshold: uploaded in parts.
    let big = random_bytes(7, 12 << 20);
    std::fs::write(work.join("big.bin"), &big).unwrap();
    for (i, f) in ["tree/one", "tree/two", "tree/sub/three"]
        .iter()
        .enumerate()
    {
        std::fs::write(work.join(f), random_bytes(i as u64, 10_000 * (i + 1))).unwrap();
    }
    let big_path = work.join("big.bin");
    aws(
        &venv,
        &cluster,
        0,
        &[
            "s3",
            "cp",
            big_path.to_str().unwrap(),
            "s3://data/cli/big.bin",
        ],
    );
    assert!(std::fs::read(data.join("cli/big.bin")).unwrap() == big);
    let back = work.join("back.bin");
    aws(
        &venv,
        &cluster,
        1,
        &["s3", "cp", "s3://data/cli/big.bin", back.to_str().unwrap()],
    );
    assert!(
        std::fs::read(&back).unwrap() == big,
        "read back through another node"
    );
    let listed = aws(&venv, &cluster, 2, &["s3", "ls", "s3://data/cli/"]);
    assert!(
        listed.contains(&format!("{} big.bin", big.len())),
        "{listed}"
    );
    aws(
        &venv,
        &cluster,
        2,
        &[
            "s3",
            "sync",
            work.join("tree").to_str().unwrap(),
            "s3://data/synced/",
        ],
    );
    for f in ["one", "two", "sub/three"] {
        assert_eq!(
            std::fs::read(data.join("synced").join(f)).unwrap(),
            std::fs::read(work.join("tree").join(f)).unwrap(),
            "{f}"
        );
    }
    // A second sync finds nothing to copy: sizes and times agree.
    let again = aws(
        &venv,
        &cluster,
        0,
        &[
            "s3",
            "sync",
            work.join("tree").to_str().unwrap(),
            "s3://data/synced/",
        ],
    );
    assert!(!again.contains("upload:"), "{again}");
    let head = aws(
        &venv,
        &cluster,
        1,
        &[
            "s3api",
            "head-object",
            "--bucket",
            "data",
            "--key",
            "synced/sub/three",
        ],
    );
    assert!(head.contains("\"ContentLength\": 30000"), "{head}");
    aws(
        &venv,
        &cluster,
        1,
        &["s3", "rm", "--recursive", "s3://data/synced/"],
    );
    assert!(
        !data.join("synced").exists(),
        "the removed keys' directories stay"
    );
    let listed = aws(
        &venv,
        &cluster,
        0,
        &["s3", "ls", "--recursive", "s3://data/"],
    );
    assert!(!listed.contains("synced/"), "{listed}");
}

/// The sum over the nodes of metric `name` (a counter without labels).
fn metric_sum(cluster: &S3Cluster, name: &str) -> u64 {
    let mut sum = 0;
    for n in &cluster.nodes {
        n.status(); // syncs the metrics
        let text = crate::cluster::get(n.http, "/metrics", None)
            .unwrap()
            .text();
        let value = text
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {name} in the metrics"));
        sum += value.trim().parse::<u64>().unwrap();
    }
    sum
}

/// `exclusive` mode: every directory is listed by its manager, once per
/// change for the whole cluster, and a put or delete through any node is
/// in every listing begun after it was answered.
#[test]
fn the_aws_cli_lists_through_each_directorys_manager_in_exclusive_mode() {
    let Some(venv) = crate::common::s3_clients() else {
        return;
    };
    // Managers answer as soon as the members agree (5 s by default).
    let cluster = S3Cluster::start_with(&["--consistency", "exclusive", "--commit-stable", "0s"]);
    let (work, data) = cluster.dirs("ex");
    std::fs::create_dir_all(data.join("set")).unwrap();
    for i in 0..5 {
        std::fs::write(data.join(format!("set/f{i}")), random_bytes(i, 1000)).unwrap();
    }
    let ls = |i: usize| aws(&venv, &cluster, i, &["s3", "ls", "s3://data/set/"]);
    let names = |listed: &str| -> Vec<String> {
        let mut n: Vec<String> = (listed.lines())
            .filter_map(|l| l.split_whitespace().last().map(str::to_owned))
            .collect();
        n.sort();
        n
    };
    let first = ls(0);
    assert_eq!(names(&first), ["f0", "f1", "f2", "f3", "f4"], "{first}");
    assert!(
        first.contains(" 1000 f0"),
        "sizes from the listing: {first}"
    );
    let from_table = metric_sum(&cluster, "coopcache_manager_listings_total");
    for i in [1, 2, 0] {
        assert_eq!(ls(i), first);
    }
    assert!(
        metric_sum(&cluster, "coopcache_manager_listings_total") >= from_table + 3,
        "the manager answered the later listings from its table"
    );
    // A put through node 1 is in node 2's next listing, a delete through
    // node 0 gone from node 1's, and a put that makes directories shows
    // them in the listing above.
    let new = work.join("ex/new.bin");
    std::fs::write(&new, random_bytes(9, 2345)).unwrap();
    let new = new.to_str().unwrap();
    aws(
        &venv,
        &cluster,
        1,
        &["s3", "cp", new, "s3://data/set/new.bin"],
    );
    assert!(ls(2).contains(" 2345 new.bin"), "{}", ls(2));
    aws(&venv, &cluster, 0, &["s3", "rm", "s3://data/set/f0"]);
    assert_eq!(names(&ls(1)), ["f1", "f2", "f3", "f4", "new.bin"]);
    aws(
        &venv,
        &cluster,
        2,
        &["s3", "cp", new, "s3://data/set/deep/er/g.bin"],
    );
    assert!(ls(0).contains("PRE deep/"), "{}", ls(0));
    let deep = aws(&venv, &cluster, 1, &["s3", "ls", "s3://data/set/deep/er/"]);
    assert_eq!(names(&deep), ["g.bin"]);
    // Its delete removes the directories it leaves empty: gone from the
    // listing above too.
    aws(
        &venv,
        &cluster,
        0,
        &["s3", "rm", "s3://data/set/deep/er/g.bin"],
    );
    assert!(!ls(2).contains("deep/"), "{}", ls(2));
}

#[test]
fn rclone_copies_checks_by_downloading_and_deletes() {
    let Some(_) = crate::common::s3_clients() else {
        return;
    };
    if !crate::common::have("rclone") {
        return;
    }
    let cluster = S3Cluster::start();
    let (work, data) = cluster.dirs("src/deep/er");
    // Above the 5 MiB cutoff set below: rclone uploads it in parts.
    std::fs::write(work.join("src/large.bin"), random_bytes(3, 11 << 20)).unwrap();
    for (i, f) in ["src/a.txt", "src/deep/b.bin", "src/deep/er/c"]
        .iter()
        .enumerate()
    {
        std::fs::write(work.join(f), random_bytes(10 + i as u64, 5_000 + i)).unwrap();
    }
    let rclone = |i: usize, args: &[&str]| {
        let out = Command::new("rclone")
            .args(args)
            .args(["--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M"])
            .env("RCLONE_CONFIG_CC_TYPE", "s3")
            .env("RCLONE_CONFIG_CC_PROVIDER", "Other")
            .env("RCLONE_CONFIG_CC_ENDPOINT", cluster.url(i))
            .env("RCLONE_CONFIG_CC_ACCESS_KEY_ID", KEY)
            .env("RCLONE_CONFIG_CC_SECRET_ACCESS_KEY", SECRET)
            .env("RCLONE_CONFIG_CC_FORCE_PATH_STYLE", "true")
            .env("RCLONE_CONFIG", "/dev/null")
            .env_remove("AWS_CA_BUNDLE")
            .env("HOME", cluster.dir.path())
            .output()
            .unwrap();
        check(&format!("rclone {}", args.join(" ")), out, &cluster)
    };
    let src = work.join("src");
    let src = src.to_str().unwrap();
    rclone(0, &["copy", src, "cc:data/rc"]);
    for f in ["large.bin", "a.txt", "deep/b.bin", "deep/er/c"] {
        assert_eq!(
            std::fs::read(data.join("rc").join(f)).unwrap(),
            std::fs::read(work.join("src").join(f)).unwrap(),
            "{f}"
        );
    }
    // Every byte read back through another node, compared by rclone.
    rclone(1, &["check", "--download", src, "cc:data/rc"]);
    let listed = rclone(2, &["lsf", "-R", "--files-only", "cc:data/rc"]);
    let mut names: Vec<&str> = listed.lines().collect();
    names.sort();
    assert_eq!(names, ["a.txt", "deep/b.bin", "deep/er/c", "large.bin"]);
    rclone(2, &["delete", "cc:data/rc/deep"]);
    assert!(
        !data.join("rc/deep").exists(),
        "deleted keys' directories stay"
    );
    assert!(data.join("rc/a.txt").exists());
}
