//! Running the `coopcache` binary from tests.
#![allow(dead_code)] // each test crate uses some of these

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// Runs `coopcache` with the words of `command` (paths here have no spaces).
pub fn coopcache(command: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_coopcache"))
        .args(command.split_whitespace())
        .output()
        .unwrap()
}

/// Runs `coopcache` with `args` as given (for arguments with spaces).
pub fn coopcache_args(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_coopcache"))
        .args(args)
        .output()
        .unwrap()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `coopcache` with the words of `args`, which must succeed, and
/// parses each line it prints as a JSON row (`--json` output).
pub fn json_rows(args: &str) -> Vec<serde_json::Value> {
    let out = coopcache(args);
    assert!(out.status.success(), "{args}: {}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn shared_trace(name: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/traces")
        .join(name);
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("COOPCACHE_ALLOW_SKIP").is_some(),
        "no {}: the shared traces must be beside the checkout (../shared), or set COOPCACHE_ALLOW_SKIP=1 to skip the tests that read them",
        path.display()
    );
    eprintln!("skipping: no {}", path.display());
    None
}

pub fn temp_trace(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// `coopcache` with `command`'s words fails with a non-zero exit and an
/// error naming each of `needles`.
pub fn fails_with(command: &str, needles: &[&str]) {
    let out = coopcache(command);
    assert!(
        !out.status.success(),
        "{command} succeeded: {}",
        stdout(&out)
    );
    let err = stderr(&out);
    for needle in needles {
        assert!(
            err.contains(needle),
            "{command}: `{needle}` missing from: {err}"
        );
    }
    assert!(!err.contains("panicked"), "{command} panicked: {err}");
}

/// The keys `coopcache node --config FILE` accepts, as serde sees them:
/// `FileConfig`'s derived `Deserialize` hands its field list to
/// `deserialize_struct`, which this deserializer records, then refuses.
/// No list to keep in step by hand.
pub fn file_config_keys() -> Vec<&'static str> {
    use serde::Deserialize;
    use serde::de::{self, Deserializer, Visitor};

    struct Fields<'a>(&'a mut &'static [&'static str]);

    impl<'de> Deserializer<'de> for Fields<'_> {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("fields recorded"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str
            string bytes byte_buf option unit unit_struct newtype_struct seq
            tuple tuple_struct map enum identifier ignored_any
        }
    }

    let mut fields: &'static [&'static str] = &[];
    let _ = coopcache_node::config::FileConfig::deserialize(Fields(&mut fields));
    assert!(
        fields.len() > 10,
        "FileConfig's Deserialize named only {fields:?}"
    );
    fields.to_vec()
}

/// Starts `cmd` (a daemon) with its log, stderr, in `log`, at its default
/// level, and nothing on stdin or stdout.
pub fn spawn_logging(cmd: &mut Command, log: &Path) -> Child {
    cmd.env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

/// Whether `program` is installed; in CI it must be.
pub fn have(program: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("COOPCACHE_ALLOW_SKIP").is_some(),
            "no {program}: scripts/test-deps.sh installs it, or set COOPCACHE_ALLOW_SKIP=1 to skip the tests that need it"
        );
        eprintln!("SKIPPED: no {program}");
    }
    found
}

/// The venv of S3 clients (boto3, the AWS CLI) `scripts/test-deps.sh`
/// makes in `target/s3-clients`; `None` (a skip) only under
/// `COOPCACHE_ALLOW_SKIP`.
pub fn s3_clients() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/s3-clients");
    let ready = venv.join("bin/aws").exists() && venv.join("bin/python").exists();
    prepared(venv, ready, "boto3 and the AWS CLI", "scripts/test-deps.sh")
}

/// The previous release's `coopcache` that `scripts/build-previous.sh`
/// builds in `target/previous`; `None` (a skip) only under
/// `COOPCACHE_ALLOW_SKIP`.
pub fn previous_release() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/previous/coopcache");
    let ready = bin.is_file();
    prepared(
        bin,
        ready,
        "the previous release",
        "scripts/build-previous.sh",
    )
}

/// `path` if a script made it (`ready`); otherwise a failure naming the
/// script, or `None` (a skip) under `COOPCACHE_ALLOW_SKIP`.
fn prepared(path: PathBuf, ready: bool, what: &str, script: &str) -> Option<PathBuf> {
    if ready {
        return Some(path);
    }
    assert!(
        std::env::var_os("COOPCACHE_ALLOW_SKIP").is_some(),
        "no {what} at {}: {script} makes it, or set COOPCACHE_ALLOW_SKIP=1 to skip",
        path.display()
    );
    eprintln!("SKIPPED: no {what}");
    None
}

/// The seed of a test's files: `COOPCACHE_LIVE_SEED` or the clock, printed.
pub fn seed(test: &str) -> u64 {
    let seed = std::env::var("COOPCACHE_LIVE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("{test}: seed {seed} (replay with COOPCACHE_LIVE_SEED={seed})");
    seed
}

/// `len` pseudo-random bytes (splitmix64) from `seed`.
pub fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&coopcache_core::policy::splitmix64(&mut state).to_le_bytes());
    }
    out.truncate(len);
    out
}
