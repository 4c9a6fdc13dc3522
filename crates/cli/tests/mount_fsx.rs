//! fsx (the File System eXerciser, crates.io's `fsx`: Apple's, FreeBSD's
//! and Linux's tool rewritten in Rust) on a mount, in both consistency
//! modes: random reads, writes, truncations,
//! fsyncs, fallocates, sendfiles, copy_file_ranges and close-reopens of
//! one file, every read checked against fsx's own model of the bytes. An
//! outsider's model of POSIX, not ours. CI runs 3,000 operations per mode;
//! `COOPCACHE_FSX_OPS=200000 cargo test -p coopcache --profile ci --test
//! fuse mount_fsx` is the long run (its last result is in
//! docs/reliability.md).

use crate::mounts::*;
use std::process::Command;

/// Every operation fsx has that the mount keeps, with fsx's default
/// weights, except two the README's table lists as by design: mapped
/// reads and writes (fsx maps shared and writable, which the mount
/// refuses with `ENODEV`) and hole punching (the mount has no
/// `fallocate` of its own: `EOPNOTSUPP`; glibc's `posix_fallocate`
/// writes the range instead).
const CONFIG: &str = "flen = 1048576
[opsize]
max = 65536
[weights]
close_open = 1
read = 10
write = 10
mapread = 0
mapwrite = 0
invalidate = 0
truncate = 2
fsync = 1
fdatasync = 1
posix_fallocate = 1
punch_hole = 0
sendfile = 1
posix_fadvise = 1
copy_file_range = 1
";

#[test]
fn fsx_finds_nothing_on_a_mount() {
    let ops: u64 = std::env::var("COOPCACHE_FSX_OPS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3_000);
    for (consistency, seed) in [("shared", 1), ("exclusive", 2)] {
        let Some(work) = Work::new(&["origin", "mnt", "fsx"]) else {
            return;
        };
        if !have("fsx") {
            return;
        }
        let (origin, dir, out) = (work.join("origin"), work.join("mnt"), work.join("fsx"));
        let config = out.join("fsx.toml");
        std::fs::write(&config, CONFIG).unwrap();
        let env = [("COOPCACHE_CONSISTENCY".to_string(), consistency.to_string())];
        let m = Mount::start_env(work.path(), &origin, &dir, "node", None, &env);
        let run = Command::new("fsx")
            .arg("-f")
            .arg(&config)
            .args(["-N", &ops.to_string(), "-S", &seed.to_string(), "-P"])
            .arg(&out)
            .arg(dir.join("fsxfile"))
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(
            run.status.success() && said.contains("All operations completed A-OK"),
            "fsx -S {seed} -N {ops} on a {consistency} mount:\n{said}"
        );
        // What fsx left is what the origin holds.
        assert_eq!(
            std::fs::read(dir.join("fsxfile")).unwrap(),
            std::fs::read(origin.join("fsxfile")).unwrap()
        );
        assert!(m.terminate().success());
    }
}
