//! The S3 endpoint over an S3 origin (a real MinIO): three nodes, each
//! with `--s3` (and a mount, which is how the FUSE test binary starts
//! nodes), driven by the same boto3 script as over a directory origin
//! (`s3/boto3_clients.py`), which compares every byte with MinIO's.

use crate::mounts::{Mount, Work, free_port, wait_members};
use crate::servers::{BUCKET, S3_SECRET, S3_USER, s3_env, start_minio};
use std::path::Path;
use std::process::Command;

const KEY: &str = "minio-endpoint-test";
const SECRET: &str = "minio-endpoint-secret";

#[test]
fn boto3_through_the_endpoint_over_minio() {
    let Some(work) = Work::new(&["a", "b", "c"]) else {
        return;
    };
    let Some(venv) = crate::common::s3_clients() else {
        return;
    };
    let Some(minio) = start_minio() else { return };
    let keys = work.join("s3-keys");
    std::fs::write(&keys, format!("{KEY} {SECRET}\n")).unwrap();
    let spec = format!("s3://{BUCKET}/pfx");
    let mut mounts: Vec<Mount> = Vec::new();
    let mut endpoints = Vec::new();
    for name in ["a", "b", "c"] {
        let endpoint = format!("127.0.0.1:{}", free_port());
        let mut env = s3_env(minio.addr);
        env.push(("COOPCACHE_S3".into(), endpoint.clone()));
        env.push(("COOPCACHE_S3_KEYS".into(), keys.display().to_string()));
        let m = Mount::start_env(
            work.path(),
            Path::new(&spec),
            &work.join(name),
            name,
            mounts.first(),
            &env,
        );
        mounts.push(m);
        endpoints.push(format!("http://{endpoint}"));
    }
    for m in &mounts {
        wait_members(m, 3);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/s3/boto3_clients.py");
    let out = Command::new(venv.join("bin/python"))
        .arg(&script)
        .current_dir(work.path())
        .env("ENDPOINTS", endpoints.join(","))
        .env("KEY", KEY)
        .env("SECRET", SECRET)
        .env("ORIGIN", &spec)
        .env("ORIGIN_ENDPOINT", format!("http://{}", minio.addr))
        .env("ORIGIN_KEY", S3_USER)
        .env("ORIGIN_SECRET", S3_SECRET)
        .env("HOME", work.path())
        .env_remove("AWS_CA_BUNDLE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let logs: String = mounts
        .iter()
        .map(|m| format!("--- node:\n{}", m.log_text()))
        .collect();
    assert!(
        out.status.success() && stdout.contains("boto3: ok"),
        "stdout: {stdout}\nstderr: {}\n{logs}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A listing stats no key: MinIO's listing gives each object's version
    // (before, 30 keys cost 30 HEADs on top of the listing).
    let stats = |m: &Mount| m.status()["origin_stats"].as_u64().unwrap();
    let script = r#"
import boto3, os
s3 = boto3.client("s3", endpoint_url=os.environ["ENDPOINT"], aws_access_key_id=os.environ["KEY"],
                  aws_secret_access_key=os.environ["SECRET"], region_name="us-east-1")
if os.environ["STEP"] == "put":
    for i in range(30):
        s3.put_object(Bucket="data", Key=f"listed/{i:02}", Body=b"x" * i)
else:
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="data", Prefix="listed/")["Contents"]]
    assert keys == [f"listed/{i:02}" for i in range(30)], keys
    print("listed", len(keys))
"#;
    let step = |step: &str| {
        let out = Command::new(venv.join("bin/python"))
            .args(["-c", script])
            .env("ENDPOINT", &endpoints[0])
            .env("KEY", KEY)
            .env("SECRET", SECRET)
            .env("STEP", step)
            .env_remove("AWS_CA_BUNDLE")
            .output()
            .unwrap();
        assert!(out.status.success(), "{step}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    step("put");
    let before = stats(&mounts[0]);
    assert!(step("list").contains("listed 30"));
    let after = stats(&mounts[0]);
    assert!(
        after - before < 30,
        "a listing of 30 keys stated {} of them",
        after - before
    );
}
