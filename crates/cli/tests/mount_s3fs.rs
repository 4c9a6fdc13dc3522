//! s3fs, a FUSE file system over S3, mounted on coopcache's S3 endpoint of
//! a node that also mounts the origin itself: what programs write through
//! s3fs is the origin's file and is read through coopcache's mount, and
//! the other way round. s3fs's own requests (HEAD of `dir/` markers,
//! listings with a delimiter, puts of whole files, deletes) are the
//! client's, not ours. Needs FUSE (root) and Debian's s3fs.

use crate::mounts::{self, Mount, Work, free_port};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const KEY: &str = "s3fs-test";
const SECRET: &str = "s3fs-secret-for-tests";

/// An s3fs mount of bucket `data`, unmounted on drop.
struct S3fs {
    child: Child,
    dir: std::path::PathBuf,
}

impl S3fs {
    fn start(work: &Work, endpoint: &str, dir: &Path) -> S3fs {
        use std::os::unix::fs::PermissionsExt;
        let passwd = work.join("s3fs.passwd");
        std::fs::write(&passwd, format!("{KEY}:{SECRET}\n")).unwrap();
        // s3fs refuses a password file others can read.
        std::fs::set_permissions(&passwd, std::fs::Permissions::from_mode(0o600)).unwrap();
        let child = Command::new("s3fs")
            .arg("data")
            .arg(dir)
            .arg("-f")
            .args(["-o", &format!("url=http://{endpoint}")])
            .args(["-o", "use_path_request_style"])
            .args(["-o", &format!("passwd_file={}", passwd.display())])
            // No local cache: every read is a GET of the endpoint.
            .args(["-o", "stat_cache_expire=1"])
            .env_remove("AWS_CA_BUNDLE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(work.join("s3fs.log")).unwrap())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !mounted(dir) {
            assert!(
                Instant::now() < deadline,
                "s3fs did not mount: {}",
                std::fs::read_to_string(work.join("s3fs.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        S3fs {
            child,
            dir: dir.into(),
        }
    }
}

impl Drop for S3fs {
    fn drop(&mut self) {
        let _ = Command::new("fusermount3")
            .args(["-u", "-z"])
            .arg(&self.dir)
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether anything is mounted on `dir` (s3fs's line names it `s3fs`).
fn mounted(dir: &Path) -> bool {
    let table = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    table.lines().any(|l| l.split(' ').nth(1) == dir.to_str())
}

fn sh(script: &str) -> String {
    let out = Command::new("sh").args(["-c", script]).output().unwrap();
    assert!(
        out.status.success(),
        "{script}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn s3fs_on_the_endpoint_and_coopcache_mount_see_each_others_writes() {
    let Some(work) = Work::new(&["origin/data/pre", "mnt", "s3"]) else {
        return;
    };
    if !mounts::have("s3fs") {
        return;
    }
    let (origin, mnt, s3dir) = (work.join("origin"), work.join("mnt"), work.join("s3"));
    std::fs::write(origin.join("data/pre/old.txt"), b"there before\n").unwrap();
    let keys = work.join("s3-keys");
    std::fs::write(&keys, format!("{KEY} {SECRET}\n")).unwrap();
    let endpoint = format!("127.0.0.1:{}", free_port());
    let env = [
        ("COOPCACHE_S3".to_owned(), endpoint.clone()),
        ("COOPCACHE_S3_KEYS".to_owned(), keys.display().to_string()),
    ];
    let mount = Mount::start_env(work.path(), &origin, &mnt, "node", None, &env);
    let s3fs = S3fs::start(&work, &endpoint, &s3dir);
    let (m, s) = (mnt.join("data"), s3fs.dir.clone());
    let (m, s) = (m.display(), s.display());

    // What was there is listed and read through s3fs.
    assert_eq!(sh(&format!("cat {s}/pre/old.txt")), "there before\n");
    assert!(sh(&format!("ls {s}")).contains("pre"));
    // Written through s3fs (a shell redirect, cp, mkdir): the origin's
    // files, read through coopcache's mount.
    sh(&format!(
        "echo written by s3fs > {s}/note.txt && mkdir {s}/dir && head -c 3000000 /dev/urandom > {s}/dir/blob && sync"
    ));
    assert_eq!(
        std::fs::read(origin.join("data/note.txt")).unwrap(),
        b"written by s3fs\n"
    );
    sh(&format!(
        "cmp {s}/dir/blob {m}/dir/blob && cmp {m}/dir/blob {}",
        origin.join("data/dir/blob").display()
    ));
    // Written through coopcache's mount: read through s3fs.
    sh(&format!("printf 'from the mount' > {m}/dir/back.txt"));
    assert_eq!(sh(&format!("cat {s}/dir/back.txt")), "from the mount");
    // Removed through s3fs: gone from the origin and the mount.
    sh(&format!(
        "rm {s}/note.txt {s}/dir/blob {s}/dir/back.txt && rmdir {s}/dir"
    ));
    assert!(!origin.join("data/note.txt").exists());
    assert!(
        !origin.join("data/dir").exists(),
        "{:?}",
        mounts::names(&origin.join("data"))
    );
    drop(s3fs);
    drop(mount);
}
