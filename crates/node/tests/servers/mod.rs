//! Real servers on loopback for the tests (MinIO for S3, nginx for HTTP),
//! started with temporary data directories and killed on drop.
//!
//! Install them with `scripts/test-servers.sh install`. Without them the
//! server tests fail, saying so; `COOPCACHE_ALLOW_SKIP=1` skips them.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use coopcache_node::origin::{Origin, OriginError};
use object_store::ObjectStore;

/// A server process started by a test; killed (by its own handle) on drop.
pub(crate) struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    /// The server's data and log (taken back by [`Server::stop`]).
    dir: Option<tempfile::TempDir>,
}

impl Server {
    /// Kills the server and gives back its directory (to start it again
    /// on the same data: see [`minio_in`]).
    pub(crate) fn stop(mut self) -> tempfile::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.dir.take().expect("a running server has its directory")
    }

    fn log(&self) -> String {
        let dir = self.dir.as_ref().map(|d| d.path().join("server.log"));
        dir.and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Finds a server binary, or says how to get it: `None` means skip.
pub(crate) fn find_binary(name: &str, env: &str, extra: &[PathBuf]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::var_os(env)
        .map(PathBuf::from)
        .into_iter()
        .chain(std::env::split_paths(&path).map(|d| d.join(name)))
        .chain(extra.iter().cloned())
        .find(|p| p.is_file());
    if found.is_none() {
        let msg = format!("{name} not found (set {env}, or run `scripts/test-servers.sh install`)");
        assert!(
            std::env::var_os("COOPCACHE_ALLOW_SKIP").is_some(),
            "{msg}; scripts/test-deps.sh installs it, or set COOPCACHE_ALLOW_SKIP=1 to skip the tests that need it"
        );
        eprintln!("SKIPPED: {msg}");
    }
    found
}

pub(crate) fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    listener.local_addr().expect("local addr").port()
}

/// The status code of a plain HTTP/1.0 GET, or `None` if nothing answers.
pub(crate) fn http_status(addr: SocketAddr, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// Starts `command` and waits until `path` answers 200 on `addr`.
pub(crate) fn start(
    mut command: Command,
    addr: SocketAddr,
    path: &str,
    dir: tempfile::TempDir,
) -> Server {
    let log = std::fs::File::create(dir.path().join("server.log")).expect("server log");
    let child = command
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log fd"))
        .stderr(log)
        .spawn()
        .expect("spawn server");
    let mut server = Server {
        child,
        addr,
        dir: Some(dir),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while http_status(addr, path) != Some(200) {
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!("server exited with {status}: {}", server.log());
        }
        assert!(
            Instant::now() < deadline,
            "server on {addr} not ready in 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    server
}

// ---------------------------------------------------------------- S3

pub(crate) const S3_USER: &str = "coopcache";
pub(crate) const S3_SECRET: &str = "coopcache-test-secret";
pub(crate) const BUCKET: &str = "origin-test";

pub(crate) fn start_minio() -> Option<Server> {
    let addr: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    minio_in(tempfile::tempdir().expect("tempdir"), addr)
}

/// MinIO on `addr` with its data in `dir` (made if new, kept if not).
pub(crate) fn minio_in(dir: tempfile::TempDir, addr: SocketAddr) -> Option<Server> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let gopath = std::env::var_os("GOPATH")
        .map(PathBuf::from)
        .unwrap_or(home.join("go"));
    let extra = [gopath.join("bin").join("minio")];
    let minio = find_binary("minio", "COOPCACHE_MINIO", &extra)?;
    let data = dir.path().join("data");
    // A top-level directory of the data dir is a bucket to MinIO.
    std::fs::create_dir_all(data.join(BUCKET)).expect("bucket dir");
    let console: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let mut command = Command::new(minio);
    command
        .args(["server", "--quiet", "--address", &addr.to_string()])
        .args(["--console-address", &console.to_string()])
        .arg(&data)
        .env("MINIO_ROOT_USER", S3_USER)
        .env("MINIO_ROOT_PASSWORD", S3_SECRET)
        .env("MINIO_BROWSER", "off")
        .env("MINIO_UPDATE", "off")
        .env("MINIO_CI_CD", "1");
    Some(start(command, addr, "/minio/health/ready", dir))
}

/// The environment that points `object_store` (and so a `coopcache`
/// process) at MinIO on `addr`.
pub(crate) fn s3_env(addr: SocketAddr) -> Vec<(String, String)> {
    s3_options(addr)
        .into_iter()
        .map(|(k, v)| (format!("AWS_{}", k.to_uppercase()), v))
        .collect()
}

pub(crate) fn s3_options(addr: SocketAddr) -> Vec<(&'static str, String)> {
    vec![
        ("endpoint", format!("http://{addr}")),
        ("access_key_id", S3_USER.into()),
        ("secret_access_key", S3_SECRET.into()),
        ("region", "us-east-1".into()),
        ("allow_http", "true".into()),
    ]
}

pub(crate) fn open_s3(spec: &str, addr: SocketAddr) -> Result<Origin, OriginError> {
    let options = s3_options(addr);
    let options: Vec<(&str, &str)> = options.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Origin::open_with(spec, &options)
}

pub(crate) async fn put(store: &dyn ObjectStore, key: &str, content: &[u8]) {
    let location = object_store::path::Path::parse(key).expect("key");
    store
        .put(&location, content.to_vec().into())
        .await
        .expect("upload");
}
