//! memcached and Redis from Debian's packages, on loopback, as the
//! baselines users would run instead: started as child processes (killed
//! when dropped, so on error and on Ctrl-C too), loaded with 8 KiB values,
//! and read with GETs, one outstanding request per connection.
//!
//! The clients are minimal (GET and SET of the text protocol and RESP)
//! rather than the `redis` or memcached crates: a load of N connections
//! with exactly one request in flight on each is what the coopcache
//! readers do, and the `redis` crate's async connection multiplexes (and
//! so pipelines) requests of concurrent tasks over one socket, which would
//! measure a different thing. Both clients read replies with the same
//! buffered tokio code, so neither baseline pays for a heavier client.

use crate::measure::Worker;
use anyhow::{Context, Result, bail};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufStream};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

/// The two baselines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// memcached, text protocol.
    Memcached,
    /// Redis, RESP, unpipelined.
    Redis,
}

impl Kind {
    /// Its name in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Memcached => "memcached",
            Kind::Redis => "redis",
        }
    }

    /// Where Debian installs the server.
    fn candidates(self) -> [&'static str; 2] {
        match self {
            Kind::Memcached => ["/usr/bin/memcached", "/usr/local/bin/memcached"],
            Kind::Redis => ["/usr/bin/redis-server", "/usr/local/bin/redis-server"],
        }
    }
}

/// Finds the server binary, or says which package to install.
pub(crate) fn find(kind: Kind) -> Result<PathBuf> {
    let exe = match kind {
        Kind::Memcached => "memcached",
        Kind::Redis => "redis-server",
    };
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join(exe)).collect())
        .unwrap_or_default();
    kind.candidates()
        .iter()
        .map(PathBuf::from)
        .chain(on_path)
        .find(|p| p.is_file())
        .with_context(|| {
            format!(
                "{exe} not found: install Debian's packages (`apt-get install memcached redis-server`) or pass --no-baselines"
            )
        })
}

/// A running server; killed when dropped.
pub(crate) struct Server {
    /// Which one.
    pub kind: Kind,
    /// Its port on 127.0.0.1.
    pub port: u16,
    child: Child,
}

/// A free port on 127.0.0.1 (free when asked; the server binds it next).
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Whether this process runs as root (memcached refuses to without `-u`).
fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Starts `kind` on a free loopback port with `threads` worker threads
/// (memcached; Redis serves from one thread) and waits until it accepts.
pub(crate) async fn start(kind: Kind, exe: &Path, threads: u32, dir: &Path) -> Result<Server> {
    let port = free_port()?;
    let mut cmd = Command::new(exe);
    match kind {
        Kind::Memcached => {
            let threads = threads.to_string();
            let port = port.to_string();
            cmd.args(["-l", "127.0.0.1", "-p", &port, "-t", &threads, "-U", "0"]);
            if is_root() {
                cmd.args(["-u", "root"]);
            }
        }
        Kind::Redis => {
            let port = port.to_string();
            let dir = dir.to_str().context("temporary directory is not UTF-8")?;
            cmd.args([
                "--port",
                &port,
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                dir,
            ]);
        }
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let mut server = Server { kind, port, child };
    server.wait_ready().await?;
    Ok(server)
}

impl Server {
    async fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait()? {
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = e.read_to_string(&mut err).await;
                }
                bail!(
                    "{} exited at start ({status}): {}",
                    self.kind.name(),
                    err.trim()
                );
            }
            if TcpStream::connect(("127.0.0.1", self.port)).await.is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "{} did not accept on port {} within 10 s",
                    self.kind.name(),
                    self.port
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Kills the server and waits for it to exit (dropping it only
    /// kills it).
    pub(crate) async fn stop(mut self) -> Result<()> {
        self.child.kill().await?;
        Ok(())
    }

    /// Where clients reach it.
    pub(crate) fn endpoint(&self) -> Endpoint {
        Endpoint {
            kind: self.kind,
            port: self.port,
        }
    }

    /// A new connection.
    pub(crate) async fn connect(&self) -> Result<Conn> {
        self.endpoint().connect().await
    }
}

/// Where a running server's clients connect (copied to the threads they
/// run on).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Endpoint {
    /// Which server.
    pub kind: Kind,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl Endpoint {
    /// A new connection.
    pub(crate) async fn connect(&self) -> Result<Conn> {
        let s = TcpStream::connect(("127.0.0.1", self.port)).await?;
        s.set_nodelay(true)?;
        Ok(Conn {
            kind: self.kind,
            io: BufStream::new(s),
            line: String::new(),
            value: Vec::new(),
        })
    }
}

/// The key of value `i`.
fn key(i: u32) -> String {
    format!("block:{i:08}")
}

/// One connection, one request at a time.
pub(crate) struct Conn {
    kind: Kind,
    io: BufStream<TcpStream>,
    line: String,
    value: Vec<u8>,
}

impl Conn {
    /// Stores `value` under key `i`.
    pub(crate) async fn set(&mut self, i: u32, value: &[u8]) -> Result<()> {
        let k = key(i);
        match self.kind {
            Kind::Memcached => {
                let head = format!("set {k} 0 0 {}\r\n", value.len());
                self.io.write_all(head.as_bytes()).await?;
            }
            Kind::Redis => {
                let head = format!(
                    "*3\r\n$3\r\nSET\r\n${}\r\n{k}\r\n${}\r\n",
                    k.len(),
                    value.len()
                );
                self.io.write_all(head.as_bytes()).await?;
            }
        }
        self.io.write_all(value).await?;
        self.io.write_all(b"\r\n").await?;
        self.io.flush().await?;
        let reply = self.read_line().await?;
        let ok = match self.kind {
            Kind::Memcached => reply == "STORED",
            Kind::Redis => reply == "+OK",
        };
        if !ok {
            bail!("{}: SET {k} answered `{reply}`", self.kind.name());
        }
        Ok(())
    }

    /// Reads key `i`; returns the value's length.
    pub(crate) async fn get(&mut self, i: u32) -> Result<usize> {
        let k = key(i);
        let request = match self.kind {
            Kind::Memcached => format!("get {k}\r\n"),
            Kind::Redis => format!("*2\r\n$3\r\nGET\r\n${}\r\n{k}\r\n", k.len()),
        };
        self.io.write_all(request.as_bytes()).await?;
        self.io.flush().await?;
        let head = self.read_line().await?;
        let len = match self.kind {
            // VALUE <key> <flags> <bytes>
            Kind::Memcached => head
                .strip_prefix("VALUE ")
                .and_then(|rest| rest.split(' ').nth(2))
                .and_then(|n| n.parse::<usize>().ok()),
            Kind::Redis => head.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()),
        };
        let Some(len) = len.filter(|&n| n <= MAX_VALUE) else {
            bail!("{}: GET {k} answered `{head}`", self.kind.name());
        };
        // The value and its CRLF.
        self.value.resize(len + 2, 0);
        self.io.read_exact(&mut self.value).await?;
        if self.kind == Kind::Memcached {
            let end = self.read_line().await?;
            if end != "END" {
                bail!("memcached: GET {k} ended with `{end}`");
            }
        }
        Ok(len)
    }

    async fn read_line(&mut self) -> Result<String> {
        self.line.clear();
        let n = (&mut self.io)
            .take(MAX_LINE)
            .read_line(&mut self.line)
            .await?;
        if n == 0 {
            bail!("{} closed the connection", self.kind.name());
        }
        Ok(self.line.trim_end().to_string())
    }
}

/// Longest reply line read (a header, never a value).
const MAX_LINE: u64 = 1024;

/// Largest value accepted.
const MAX_VALUE: usize = 1 << 20;

/// Loads `keys` values of `value_size` bytes.
pub(crate) async fn load(server: &Server, keys: u32, value_size: usize) -> Result<()> {
    let mut conn = server.connect().await?;
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    let mut value = vec![0u8; value_size];
    for i in 0..keys {
        rng.fill(&mut value[..]);
        conn.set(i, &value).await?;
    }
    Ok(())
}

/// A closed-loop GET client over random keys.
pub(crate) struct GetWorker {
    conn: Conn,
    keys: u32,
    value_size: usize,
    rng: Pcg64Mcg,
}

impl GetWorker {
    /// A worker on a new connection, seeded by `seed`.
    pub(crate) async fn new(
        server: &Endpoint,
        keys: u32,
        value_size: usize,
        seed: u64,
    ) -> Result<Self> {
        Ok(GetWorker {
            conn: server.connect().await?,
            keys,
            value_size,
            rng: Pcg64Mcg::seed_from_u64(seed),
        })
    }
}

impl Worker for GetWorker {
    async fn op(&mut self, _measured: bool) -> Result<()> {
        let i = self.rng.random_range(0..self.keys);
        let len = self.conn.get(i).await?;
        if len != self.value_size {
            bail!(
                "{}: key {i} holds {len} bytes, {} were stored",
                self.conn.kind.name(),
                self.value_size
            );
        }
        Ok(())
    }
}
