//! Running the `coopcache` binary from tests.
#![allow(dead_code)] // each test crate uses some of these

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

pub fn shared_trace(name: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/traces")
        .join(name);
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").is_err(),
        "CI must have {}",
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
