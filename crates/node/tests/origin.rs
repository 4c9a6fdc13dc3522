//! Origin tests: a local directory, and real servers on loopback (MinIO
//! for S3, nginx for HTTP) started here with temporary data directories.
//!
//! Install the servers with `scripts/test-servers.sh install`. Without
//! them the server tests are skipped with a message, except where `CI` is
//! set (as `CI=true` by most CI systems): there they fail.

use crate::servers;
use servers::*;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use coopcache_node::origin::{EntryKind, FileVersion, Origin, OriginError, OriginSpec, check_path};
use object_store::aws::AmazonS3Builder;

/// Content whose every byte depends on its offset, so a range read from
/// the wrong place cannot pass.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

fn write(root: &Path, rel: &str, content: &[u8]) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create parent dirs");
    }
    std::fs::write(path, content).expect("write test file");
}

/// Replaces a file the way editors and rsync do: write aside, rename over.
fn replace(root: &Path, rel: &str, content: &[u8]) {
    let aside = root.join(format!("{rel}.new"));
    std::fs::write(&aside, content).expect("write replacement");
    std::fs::rename(&aside, root.join(rel)).expect("rename replacement");
}

async fn read_all(origin: &Origin, path: &str, v: &FileVersion) -> Vec<u8> {
    origin
        .read(path, v, 0..v.size)
        .await
        .expect("full read")
        .to_vec()
}

/// The range checks every backend must pass on a file holding `content`.
async fn check_ranges(origin: &Origin, path: &str, content: &[u8]) {
    let v = origin.stat(path).await.expect("stat");
    assert_eq!(v.size, content.len() as u64, "{}", origin.describe());
    assert!(!v.version.is_empty());
    assert_eq!(read_all(origin, path, &v).await, content);
    let len = content.len() as u64;
    for range in [0..1, 0..10, 7..300, len - 10..len, len - 5..len + 100] {
        let got = origin.read(path, &v, range.clone()).await.expect("range");
        let end = range.end.min(len) as usize;
        assert_eq!(got, content[range.start as usize..end], "{range:?}");
    }
    for empty in [5..5, len..len + 10, len + 50..len + 100] {
        let got = origin.read(path, &v, empty.clone()).await.expect("empty");
        assert!(got.is_empty(), "{empty:?}");
    }
}

fn assert_bad_path(result: Result<FileVersion, OriginError>, path: &str) {
    match result {
        Err(e @ OriginError::BadPath { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("inside the origin"), "{msg}");
            assert!(msg.contains(&format!("{path:?}")), "{msg}");
        }
        other => panic!("{path:?} should be refused, got {other:?}"),
    }
}

const ESCAPES: &[&str] = &[
    "",
    "/etc/passwd",
    "..",
    "../secret.txt",
    "a/../../secret.txt",
    "./a.bin",
    "a//b",
    "a/",
    "a\\..\\secret.txt",
    "a\0b",
    "%2e%2e/secret.txt",
    "%2E%2E",
    "..%2fsecret.txt",
    "a%5c..",
];

// ---------------------------------------------------------------- local

#[tokio::test]
async fn local_stat_and_ranges() {
    let dir = tempfile::tempdir().expect("tempdir");
    let content = pattern(1000, 7);
    write(dir.path(), "a.bin", &content);
    write(dir.path(), "sub/dir/b c 100% done.txt", &content[..321]);
    write(dir.path(), "empty", b"");
    let origin = Origin::open(&dir.path().display().to_string()).expect("open");
    assert!(origin.describe().contains("local directory"));
    origin.check().await.expect("check");

    check_ranges(&origin, "a.bin", &content).await;
    check_ranges(&origin, "sub/dir/b c 100% done.txt", &content[..321]).await;
    let empty = origin.stat("empty").await.expect("stat empty");
    assert_eq!(empty.size, 0);
    assert!(read_all(&origin, "empty", &empty).await.is_empty());

    let url = format!("file://{}", dir.path().display());
    let by_url = Origin::open(&url).expect("open file:// url");
    assert_eq!(
        by_url.stat("a.bin").await.expect("stat"),
        origin.stat("a.bin").await.expect("stat")
    );
}

#[tokio::test]
async fn local_missing_files_are_not_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "sub/a.bin", b"x");
    let origin = Origin::open(&dir.path().display().to_string()).expect("open");
    for path in ["missing", "sub/missing", "sub"] {
        let err = origin.stat(path).await.expect_err(path);
        assert!(err.is_not_found(), "{path}: {err}");
        assert!(err.to_string().contains(path), "{err}");
    }
}

#[tokio::test]
async fn local_version_changes_when_the_file_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "a.bin", &pattern(500, 1));
    let origin = Origin::open(&dir.path().display().to_string()).expect("open");
    let old = origin.stat("a.bin").await.expect("stat");
    assert_eq!(origin.stat("a.bin").await.expect("stat again"), old);

    // Same size, new content, new inode: the usual atomic replace.
    replace(dir.path(), "a.bin", &pattern(500, 2));
    let new = origin.stat("a.bin").await.expect("stat replaced");
    assert_ne!(new, old);
    let err = origin
        .read("a.bin", &old, 0..10)
        .await
        .expect_err("old version");
    assert!(
        err.is_changed() && err.to_string().contains("a.bin"),
        "{err}"
    );
    assert_eq!(read_all(&origin, "a.bin", &new).await, pattern(500, 2));

    // Rewritten in place with another size.
    write(dir.path(), "a.bin", &pattern(600, 3));
    let newer = origin.stat("a.bin").await.expect("stat rewritten");
    assert_ne!(newer, new);
    assert!(
        origin
            .read("a.bin", &new, 0..10)
            .await
            .expect_err("old")
            .is_changed()
    );
    assert_eq!(read_all(&origin, "a.bin", &newer).await, pattern(600, 3));
}

#[tokio::test]
async fn escaping_paths_are_refused() {
    let root = tempfile::tempdir().expect("tempdir");
    write(root.path(), "secret.txt", b"outside");
    write(root.path(), "origin/a.bin", b"inside");
    let origin = Origin::open(&root.path().join("origin").display().to_string()).expect("open");
    for path in ESCAPES {
        assert_bad_path(origin.stat(path).await, path);
        assert!(check_path(path).is_err(), "{path:?}");
        let v = FileVersion {
            size: 6,
            version: "x".into(),
            modified: None,
            perm: 0o644,
            owner: None,
        };
        let read = origin.read(path, &v, 0..6).await;
        assert!(matches!(read, Err(OriginError::BadPath { .. })), "{path:?}");
    }
    for fine in [
        "a.bin",
        "x/y z/100% done.txt",
        "..a",
        "a..",
        "%41",
        "ünïcode",
    ] {
        check_path(fine).unwrap_or_else(|e| panic!("{fine:?}: {e}"));
    }
}

#[test]
fn missing_or_non_directory_origins_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no-such-dir");
    for spec in [
        missing.display().to_string(),
        format!("file://{}", missing.display()),
    ] {
        let err = Origin::open(&spec).expect_err("missing dir");
        let msg = err.to_string();
        assert!(matches!(err, OriginError::BadDir { .. }), "{msg}");
        assert!(msg.contains(&missing.display().to_string()), "{msg}");
    }
    write(dir.path(), "file", b"x");
    let file = dir.path().join("file");
    let msg = Origin::open(&file.display().to_string())
        .expect_err("file")
        .to_string();
    assert!(
        msg.contains("not a directory") && msg.contains(&file.display().to_string()),
        "{msg}"
    );
}

#[test]
fn bad_specs_are_refused() {
    for spec in [
        "",
        "ftp://host/x",
        "file://relative/dir",
        "s3://",
        "s3:///p",
        "s3://b/../p",
        "http://",
        "gs://b/p",
    ] {
        let err = Origin::open(spec).expect_err(spec);
        let msg = err.to_string();
        assert!(matches!(err, OriginError::BadSpec { .. }), "{spec}: {msg}");
        assert!(
            msg.contains(&format!("{spec:?}")) && msg.contains("accepted forms"),
            "{msg}"
        );
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let local = dir.path().display().to_string();
    let err = Origin::open_with(&local, &[("endpoint", "x")]).expect_err("local options");
    assert!(matches!(err, OriginError::BadOption { .. }), "{err}");
    let err = Origin::open_with("s3://b/p", &[("no_such_key", "x")]).expect_err("bad key");
    assert!(err.to_string().contains("no_such_key"), "{err}");
}

#[test]
fn specs_parse_into_their_forms() {
    let parse = |spec: &str| spec.parse::<OriginSpec>().ok();
    let local = |p: &str| Some(OriginSpec::Local(PathBuf::from(p)));
    assert_eq!(parse("data"), local("data"));
    assert_eq!(parse("file:///srv/x"), local("/srv/x"));
    let s3 = |bucket: &str, prefix: &str| {
        let (bucket, prefix) = (bucket.into(), prefix.into());
        Some(OriginSpec::S3 { bucket, prefix })
    };
    assert_eq!(parse("s3://b/some/prefix/"), s3("b", "some/prefix"));
    assert_eq!(parse("s3://b"), s3("b", ""));
    let http = |url: &str| Some(OriginSpec::Http { url: url.into() });
    assert_eq!(parse("http://h:8080/p/"), http("http://h:8080/p"));
    assert_eq!(parse("https://h"), http("https://h"));
    assert_eq!(parse("http://h/?q"), None);
}

#[test]
fn percent_escapes_are_decoded_only_to_refuse_them() {
    for refused in ["%2e%2e", "%2E.", "a/%2e", "a%2fb", "a%5Cb", "a%00b"] {
        assert!(check_path(refused).is_err(), "{refused:?}");
    }
    for kept in ["100% done", "a%2", "%zz", "%+1", "%2e%2e%2e", "%41"] {
        assert_eq!(
            check_path(kept).map(|p| p.to_string()).ok().as_deref(),
            Some(kept)
        );
    }
}

#[tokio::test]
async fn delay_is_applied_to_every_stat_and_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "a.bin", &pattern(100, 0));
    let delay = Duration::from_millis(120);
    let origin = Origin::open(&dir.path().display().to_string())
        .expect("open")
        .with_delay(delay);
    assert!(
        origin.describe().contains("emulated delay"),
        "{}",
        origin.describe()
    );
    let start = Instant::now();
    let v = origin.stat("a.bin").await.expect("stat");
    assert!(start.elapsed() >= delay, "stat took {:?}", start.elapsed());
    let start = Instant::now();
    origin.read("a.bin", &v, 0..10).await.expect("read");
    assert!(start.elapsed() >= delay, "read took {:?}", start.elapsed());
}

#[tokio::test]
async fn unreachable_origins_fail_the_check_naming_the_origin() {
    let port = free_port();
    let spec = format!("http://127.0.0.1:{port}/data");
    let origin = Origin::open_with(&spec, &[("allow_http", "true")]).expect("open");
    let err = origin.check().await.expect_err("nothing listens there");
    assert!(matches!(err, OriginError::Unreachable { .. }), "{err}");
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
}

#[tokio::test]
async fn s3_origin_on_minio() {
    let Some(server) = start_minio() else { return };
    let mut builder = AmazonS3Builder::new().with_bucket_name(BUCKET);
    for (key, value) in s3_options(server.addr) {
        builder = builder.with_config(key.parse().expect("config key"), value);
    }
    let store = builder.build().expect("uploader");
    let content = pattern(100_000, 9);
    put(&store, "pre/fix/a.bin", &content).await;
    put(&store, "pre/fix/dir/b c.txt", &content[..777]).await;
    put(&store, "pre/secret.txt", b"outside the prefix").await;

    let origin = open_s3(&format!("s3://{BUCKET}/pre/fix"), server.addr).expect("open");
    assert!(
        origin.describe().contains("s3://origin-test/pre/fix"),
        "{}",
        origin.describe()
    );
    origin.check().await.expect("check");
    check_ranges(&origin, "a.bin", &content).await;
    check_ranges(&origin, "dir/b c.txt", &content[..777]).await;
    assert!(
        origin
            .stat("missing")
            .await
            .expect_err("missing")
            .is_not_found()
    );
    assert!(
        origin
            .stat("secret.txt")
            .await
            .expect_err("outside")
            .is_not_found()
    );
    assert_bad_path(origin.stat("../secret.txt").await, "../secret.txt");

    let old = origin.stat("a.bin").await.expect("stat");
    put(&store, "pre/fix/a.bin", &pattern(100_000, 10)).await;
    let new = origin.stat("a.bin").await.expect("stat rewritten");
    assert_ne!(new, old, "same size, new content: the ETag must differ");
    let err = origin
        .read("a.bin", &old, 0..10)
        .await
        .expect_err("old version");
    assert!(err.is_changed(), "{err}");
    assert_eq!(read_all(&origin, "a.bin", &new).await, pattern(100_000, 10));

    let whole_bucket = open_s3(&format!("s3://{BUCKET}"), server.addr).expect("open bucket");
    check_ranges(&whole_bucket, "pre/fix/dir/b c.txt", &content[..777]).await;

    let no_bucket = open_s3("s3://no-such-bucket/p", server.addr).expect("open");
    let err = no_bucket.check().await.expect_err("missing bucket");
    assert!(err.to_string().contains("no-such-bucket"), "{err}");
}

fn tree_join(dir: &str, name: &str) -> String {
    coopcache_node::origin::tree::join(dir, name)
}

/// The names in `dir` with their kinds, as the mount lists them.
async fn listing(origin: &Origin, dir: &str) -> Vec<(String, EntryKind)> {
    let list = origin.list(dir).await.expect("list");
    list.into_iter().map(|e| (e.name, e.kind)).collect()
}

#[tokio::test]
async fn s3_prefixes_list_as_directories() {
    let Some(server) = start_minio() else { return };
    let mut builder = AmazonS3Builder::new().with_bucket_name(BUCKET);
    for (key, value) in s3_options(server.addr) {
        builder = builder.with_config(key.parse().expect("config key"), value);
    }
    let store = builder.build().expect("uploader");
    put(&store, "tree/a.bin", &pattern(1000, 1)).await;
    put(&store, "tree/sub/b.txt", b"b").await;
    put(&store, "tree/sub/deeper/c.txt", b"c").await;
    put(&store, "other/x", b"outside the prefix").await;

    let origin = open_s3(&format!("s3://{BUCKET}/tree"), server.addr).expect("open");
    let (file, dir) = (EntryKind::File, EntryKind::Dir);
    assert_eq!(
        listing(&origin, "").await,
        [("a.bin".to_string(), file), ("sub".to_string(), dir)]
    );
    assert_eq!(
        listing(&origin, "sub").await,
        [("b.txt".to_string(), file), ("deeper".to_string(), dir)]
    );
    // An object store lists each object's version, the one a stat (a
    // HEAD) gives (its time to the millisecond, a HEAD's to the second),
    // so the S3 endpoint's listings stat no key; a prefix carries none.
    for (dir, name) in [("", "a.bin"), ("sub", "b.txt")] {
        let listed = origin.list(dir).await.expect("list");
        let entry = listed.iter().find(|e| e.name == name).expect("listed");
        let path = tree_join(dir, name);
        let stat = origin.stat(&path).await.expect("stat");
        let listed = entry.version.clone().expect("a listed version");
        assert_eq!((&listed.version, listed.size), (&stat.version, stat.size));
        let seconds = |v: &FileVersion| {
            let t = v.modified.expect("a time");
            t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
        };
        assert_eq!(seconds(&listed), seconds(&stat), "{path}");
    }
    let listed = origin.list("sub").await.expect("list");
    assert!(
        listed
            .iter()
            .all(|e| (e.kind == dir) == e.version.is_none())
    );
    assert_eq!(origin.entry("").await.expect("root").kind, dir);
    assert_eq!(origin.entry("sub/deeper").await.expect("prefix").kind, dir);
    let a = origin.entry("a.bin").await.expect("object");
    assert_eq!((a.kind, a.size), (file, 1000));
    assert!(
        origin
            .entry("su")
            .await
            .expect_err("partial")
            .is_not_found()
    );
    assert!(origin.entry("x").await.expect_err("outside").is_not_found());
    assert!(origin.read_link("a.bin").await.is_err(), "S3 has no links");
}

#[tokio::test]
async fn local_directories_list_files_directories_and_links() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "a.bin", &pattern(1000, 1));
    write(dir.path(), "sub/b.txt", b"b");
    std::os::unix::fs::symlink("a.bin", dir.path().join("link")).expect("link");
    std::os::unix::fs::symlink("/etc/passwd", dir.path().join("out")).expect("link");
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    let origin = Origin::open(dir.path().to_str().unwrap()).expect("open");
    let (file, link) = (EntryKind::File, EntryKind::Symlink);
    assert_eq!(
        listing(&origin, "").await,
        [
            ("a.bin".to_string(), file),
            ("link".to_string(), link),
            ("out".to_string(), link),
            ("sub".to_string(), EntryKind::Dir),
        ],
        "the FIFO is left out"
    );
    assert_eq!(listing(&origin, "sub").await, [("b.txt".to_string(), file)]);
    // A link is itself, its target only text: one leading out of the
    // origin is listed and readable as a link, never followed here.
    let out = origin.entry("out").await.expect("link");
    assert_eq!(out.kind, link);
    assert_eq!(
        origin.read_link("out").await.expect("target"),
        "/etc/passwd"
    );
    assert_eq!(origin.read_link("link").await.expect("target"), "a.bin");
    assert!(origin.read_link("a.bin").await.is_err(), "not a link");
    assert!(origin.entry("fifo").await.is_err());
    assert!(origin.list("a.bin").await.is_err(), "a file is not listed");
    assert!(origin.entry("../x").await.is_err());
}

// ---------------------------------------------------------------- HTTP

fn start_nginx(www: &Path) -> Option<Server> {
    let nginx = find_binary("nginx", "COOPCACHE_NGINX", &["/usr/sbin/nginx".into()])?;
    let dir = tempfile::tempdir().expect("tempdir");
    let addr: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let d = dir.path().display();
    // One process (no workers to orphan when the test kills it), and every
    // path inside the temporary directory. `/bare/` serves the same files
    // through a proxy that strips both validators, as some application
    // servers do.
    let conf = format!(
        "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 64; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
         \x20 fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
         \x20 server {{\n    listen {addr};\n    root {www};\n    location = /health {{ return 200; }}\n\
         \x20   location /bare/ {{ proxy_pass http://{addr}/; proxy_hide_header ETag; proxy_hide_header Last-Modified; }}\n  }}\n}}\n",
        www = www.display()
    );
    std::fs::write(dir.path().join("nginx.conf"), conf).expect("nginx.conf");
    let mut command = Command::new(nginx);
    command
        .arg("-p")
        .arg(dir.path())
        .arg("-c")
        .arg(dir.path().join("nginx.conf"));
    Some(start(command, addr, "/health", dir))
}

#[tokio::test]
async fn http_origin_on_nginx() {
    let www = tempfile::tempdir().expect("tempdir");
    let content = pattern(50_000, 4);
    write(www.path(), "data/a.bin", &content);
    write(www.path(), "data/dir/b c 100%.txt", &content[..999]);
    write(www.path(), "secret.txt", b"outside the prefix");
    let Some(server) = start_nginx(www.path()) else {
        return;
    };

    for spec in [
        format!("http://{}/data", server.addr),
        format!("http://{}/data/", server.addr),
    ] {
        let origin = Origin::open(&spec).expect("open");
        origin.check().await.expect("check");
        check_ranges(&origin, "a.bin", &content).await;
        check_ranges(&origin, "dir/b c 100%.txt", &content[..999]).await;
        assert!(
            origin
                .stat("missing")
                .await
                .expect_err("missing")
                .is_not_found()
        );
        assert_bad_path(origin.stat("../secret.txt").await, "../secret.txt");
        assert_bad_path(origin.stat("%2e%2e/secret.txt").await, "%2e%2e/secret.txt");
    }
    let root = Origin::open(&format!("http://{}/", server.addr)).expect("open root");
    root.check().await.expect("check root");
    check_ranges(&root, "data/a.bin", &content).await;

    // nginx's ETag is mtime (seconds) and size: change the size so the
    // test does not depend on the clock.
    let origin = Origin::open(&format!("http://{}/data", server.addr)).expect("open");
    let old = origin.stat("a.bin").await.expect("stat");
    assert!(
        old.version.starts_with('"'),
        "nginx gives a strong ETag: {}",
        old.version
    );
    replace(www.path(), "data/a.bin", &pattern(40_000, 5));
    let new = origin.stat("a.bin").await.expect("stat rewritten");
    assert_ne!(new, old);
    let err = origin
        .read("a.bin", &old, 0..10)
        .await
        .expect_err("old version");
    assert!(err.is_changed(), "{err}");
    assert_eq!(read_all(&origin, "a.bin", &new).await, pattern(40_000, 5));
}

#[tokio::test]
async fn an_http_origin_without_validators_is_refused_unless_immutable() {
    let www = tempfile::tempdir().expect("tempdir");
    let content = pattern(50_000, 6);
    write(www.path(), "data/a.bin", &content);
    let Some(server) = start_nginx(www.path()) else {
        return;
    };
    let spec = format!("http://{}/bare/data", server.addr);

    // Neither ETag nor Last-Modified: a rewrite at the same size could
    // never be seen, so the file is refused with a way out.
    let origin = Origin::open(&spec).expect("open");
    origin.check().await.expect("check");
    let err = origin.stat("a.bin").await.expect_err("no validator");
    assert!(matches!(err, OriginError::NoValidator { .. }), "{err:?}");
    assert!(err.to_string().contains("--origin-immutable"), "{err}");
    assert!(err.to_string().contains("a.bin"), "{err}");
    assert!(
        origin
            .stat("missing")
            .await
            .expect_err("missing")
            .is_not_found(),
        "a missing file is still not found"
    );

    // Declared immutable, the same files are served, versioned by size.
    let immutable = Origin::open(&spec).expect("open").immutable();
    assert!(
        immutable.describe().contains("immutable"),
        "{}",
        immutable.describe()
    );
    let v = immutable.stat("a.bin").await.expect("stat");
    assert_eq!(v.version, "immutable-50000");
    assert_eq!(v.modified, None, "no Last-Modified is made up");
    check_ranges(&immutable, "a.bin", &content).await;

    // The validators are only ever dropped when absent: the same files
    // straight from nginx keep its ETag, immutable or not.
    let direct = Origin::open(&format!("http://{}/data", server.addr))
        .expect("open")
        .immutable();
    let v = direct.stat("a.bin").await.expect("stat");
    assert!(v.version.starts_with('"'), "{}", v.version);
    assert!(v.modified.is_some());
}
