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
}
