//! The loopback's physical ceiling, measured with tokio in the same run as
//! the caches: the round trip of a 1-byte ping-pong (with both ends on one
//! thread, and across worker threads), the same with an 8 KiB answer (what
//! a remote block read must at least cost), and the throughput of one TCP
//! stream.

use crate::measure::quantile_us;
use anyhow::Result;
use coopcache_core::protocol::PeerMsg;
use coopcache_node::block::{Block, BlockId};
use coopcache_node::frame::{self, Wire};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Bytes per write of the stream test.
const CHUNK: usize = 256 << 10;

/// Round trips timed at most (the rest only run the clock out).
const MAX_PINGS: usize = 1 << 20;

/// The loopback ceiling.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub(crate) struct Ceiling {
    /// Median round trip of a 1-byte ping-pong with both ends on one
    /// thread: the kernel's loopback path and epoll, no thread wake-up.
    pub rtt_p50_us: f64,
    /// 99th percentile of it.
    pub rtt_p99_us: f64,
    /// The same with a 1-byte request answered with 8 KiB (what a remote
    /// block read must at least cost).
    pub rtt_8k_p50_us: f64,
    /// Median 1-byte round trip with the two ends on the multi-threaded
    /// runtime: each message may wake a parked worker thread (on an idle
    /// VM, a halted virtual CPU).
    pub rtt_threads_p50_us: f64,
    /// Median 1-byte round trip between two threads each with a
    /// current-thread runtime of its own: two nodes, each on its machine.
    pub rtt_node_threads_p50_us: f64,
    /// Median round trip between two node threads over one link of the
    /// cluster's own TLS: a small frame asked, an 8 KiB `Data` frame
    /// answered and hashed (BLAKE3) on arrival. What a remote hit between
    /// two nodes must at least cost on this machine, crypto included.
    pub tls_rtt_8k_node_threads_p50_us: f64,
    /// One TCP stream's throughput, GB/s (10^9 bytes).
    pub stream_gb_s: f64,
}

/// Measures each for `duration` (TLS keys made in `dir`).
pub(crate) async fn measure(dir: &std::path::Path, duration: Duration) -> Result<Ceiling> {
    // The strict round trips on a runtime of their own, on one thread.
    let single = tokio::task::spawn_blocking(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(async {
            let one = ping_pong(duration, 1).await?;
            let eight = ping_pong(duration, 8 << 10).await?;
            anyhow::Ok((one, eight))
        })
    });
    let ((rtt_p50_us, rtt_p99_us), (rtt_8k_p50_us, _)) = single.await??;
    let (rtt_threads_p50_us, _) = ping_pong(duration, 1).await?;
    let (rtt_node_threads_p50_us, _) = ping_pong_between_threads(duration).await?;
    let tls_rtt_8k_node_threads_p50_us = tls_ping_pong_between_threads(dir, duration).await?;
    let stream_gb_s = stream(duration).await?;
    Ok(Ceiling {
        rtt_p50_us,
        rtt_p99_us,
        rtt_8k_p50_us,
        rtt_threads_p50_us,
        rtt_node_threads_p50_us,
        tls_rtt_8k_node_threads_p50_us,
        stream_gb_s,
    })
}

/// Runs `fut` on a current-thread runtime of its own, on an OS thread of
/// its own (as one node of a cluster runs on its machine).
pub(crate) async fn on_own_thread<T, F>(fut: F) -> Result<T>
where
    T: Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("bench-peer".into())
        .spawn(move || {
            let out = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(anyhow::Error::from)
                .and_then(|rt| rt.block_on(fut));
            let _ = tx.send(out);
        })?;
    rx.await?
}

/// One TCP stream from one thread to another (each on a runtime of its
/// own, as two nodes are) for `duration`: GB/s.
pub(crate) async fn stream_between_threads(duration: Duration) -> Result<f64> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let writer = on_own_thread(async move {
        let mut client = TcpStream::connect(addr).await?;
        client.set_nodelay(true)?;
        let chunk = vec![0x5au8; CHUNK];
        let end = Instant::now() + duration;
        while Instant::now() < end {
            client.write_all(&chunk).await?;
        }
        anyhow::Ok(())
    });
    let reader = on_own_thread(async move {
        let listener = TcpListener::from_std(listener)?;
        let (server, _) = listener.accept().await?;
        drain(server).await
    });
    let (w, r) = tokio::join!(writer, reader);
    w?;
    r
}

/// One link of the cluster's own (mutual TLS with the node's settings, the
/// node's frames) from one thread to another, each on a runtime of its
/// own, for `duration`: the holder's side writes `Data` frames of `block`
/// bytes four to a write, as a link batches them, and the reader's side
/// reads them with the link's frame reader and hashes every block
/// (BLAKE3) as a link task does before its node sees it. The most one
/// peer stream can carry on this machine, whatever its CPU's cost of
/// encryption and hashing against copying: GB/s. Keys are made in `dir`.
pub(crate) async fn tls_link_between_threads(
    dir: &std::path::Path,
    duration: Duration,
    block: usize,
) -> Result<f64> {
    let (listener, server, connect) = tls_pair(dir)?;
    let reader = on_own_thread(async move {
        let mut tls = accept(listener, server).await?;
        let max = frame::max_frame(block as u32);
        let mut got = 0usize;
        let mut start = None;
        let mut end = Instant::now() + duration;
        while Instant::now() < end {
            match coopcache_node::link::read_frame(&mut tls, max).await? {
                Some(Wire::Peer(PeerMsg::Data { data, .. })) => {
                    // Timed from the first block, past the handshake.
                    if start.is_none() {
                        start = Some(Instant::now());
                        end = Instant::now() + duration;
                        continue;
                    }
                    got += Block::new(data).bytes.len();
                }
                Some(_) => {}
                None => break,
            }
        }
        let secs = start.map_or(0.0, |s| s.elapsed().as_secs_f64());
        anyhow::ensure!(got > 0 && secs > 0.0, "the TLS link carried nothing");
        Ok(got as f64 / secs / 1e9)
    });
    let writer = on_own_thread(async move {
        let mut tls = connect.await?;
        let data = bytes::Bytes::from(vec![0x5au8; block]);
        let mut buf = bytes::BytesMut::new();
        let mut index = 0u32;
        // Until the reader has its figure and closes the connection.
        loop {
            buf.clear();
            for _ in 0..4 {
                let msg = PeerMsg::Data {
                    block: BlockId::new(1, index),
                    data: data.clone(),
                };
                index = index.wrapping_add(1);
                frame::encode(&Wire::Peer(msg), &mut buf);
            }
            if tls.write_all(&buf).await.is_err() {
                break;
            }
        }
        anyhow::Ok(())
    });
    let (w, r) = tokio::join!(writer, reader);
    w?;
    r
}

/// The two ends of one link of the cluster's TLS (keys made in `dir` the
/// first time): a listener and the server's settings, and the client's
/// connection to it (to await on the client's thread).
#[allow(clippy::type_complexity)]
fn tls_pair(
    dir: &std::path::Path,
) -> Result<(
    std::net::TcpListener,
    std::sync::Arc<tokio_rustls::rustls::ServerConfig>,
    std::pin::Pin<
        Box<dyn Future<Output = Result<tokio_rustls::client::TlsStream<TcpStream>>> + Send>,
    >,
)> {
    use coopcache_node::tls::{Identity, SERVER_NAME, init_cluster};
    let keys = dir.join("tls-link-keys");
    if !keys.join("a.pem").exists() {
        init_cluster(&keys, &["a".to_string(), "b".to_string()], 1)?;
    }
    let (a, b) = (Identity::load(&keys, "a")?, Identity::load(&keys, "b")?);
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let client = b.client.clone();
    let connect = Box::pin(async move {
        let tcp = TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        let name = rustls_pki_types::ServerName::try_from(SERVER_NAME)?;
        Ok(tokio_rustls::TlsConnector::from(client)
            .connect(name, tcp)
            .await?)
    });
    Ok((listener, a.server.clone(), connect))
}

/// Accepts the one connection of [`tls_pair`]'s listener.
async fn accept(
    listener: std::net::TcpListener,
    server: std::sync::Arc<tokio_rustls::rustls::ServerConfig>,
) -> Result<tokio_rustls::server::TlsStream<TcpStream>> {
    let listener = TcpListener::from_std(listener)?;
    let (tcp, _) = listener.accept().await?;
    tcp.set_nodelay(true)?;
    Ok(tokio_rustls::TlsAcceptor::from(server).accept(tcp).await?)
}

/// Round trips over one link of the cluster's TLS between two node
/// threads for `duration`: a `Read` frame asked, an 8 KiB `Data` frame
/// answered and hashed (BLAKE3) on arrival, as a remote hit between two
/// nodes is at least: the p50, µs.
pub(crate) async fn tls_ping_pong_between_threads(
    dir: &std::path::Path,
    duration: Duration,
) -> Result<f64> {
    const ANSWER: usize = 8 << 10;
    let max = frame::max_frame(ANSWER as u32);
    let (listener, server, connect) = tls_pair(dir)?;
    let holder = on_own_thread(async move {
        let mut tls = accept(listener, server).await?;
        let data = bytes::Bytes::from(vec![0x5au8; ANSWER]);
        let mut buf = bytes::BytesMut::new();
        while let Ok(Some(Wire::Peer(PeerMsg::Read { block }))) =
            coopcache_node::link::read_frame(&mut tls, max).await
        {
            buf.clear();
            let answer = PeerMsg::Data {
                block,
                data: data.clone(),
            };
            frame::encode(&Wire::Peer(answer), &mut buf);
            if tls.write_all(&buf).await.is_err() {
                break;
            }
        }
        anyhow::Ok(())
    });
    let reader = on_own_thread(async move {
        let mut tls = connect.await?;
        let mut buf = bytes::BytesMut::new();
        let mut samples = Vec::new();
        let end = Instant::now() + duration;
        let mut index = 0u32;
        while Instant::now() < end {
            let t = Instant::now();
            buf.clear();
            let ask = PeerMsg::Read {
                block: BlockId::new(1, index),
            };
            index = index.wrapping_add(1);
            frame::encode(&Wire::Peer(ask), &mut buf);
            tls.write_all(&buf).await?;
            match coopcache_node::link::read_frame(&mut tls, max).await? {
                Some(Wire::Peer(PeerMsg::Data { data, .. })) => {
                    std::hint::black_box(Block::new(data));
                }
                other => anyhow::bail!("the TLS ping-pong got {other:?}"),
            }
            if samples.len() < MAX_PINGS {
                samples.push(t.elapsed());
            }
        }
        samples.sort_unstable();
        Ok(quantile_us(&samples, 0.5))
    });
    let (r, h) = tokio::join!(reader, holder);
    // The holder ends when the reader's connection closes.
    let p50 = r?;
    h?;
    Ok(p50)
}

/// 1-byte requests answered with 1 byte, the two ends on two threads each
/// with a runtime of its own (as two nodes are): p50 and p99.
pub(crate) async fn ping_pong_between_threads(duration: Duration) -> Result<(f64, f64)> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let echo = on_own_thread(async move {
        let listener = TcpListener::from_std(listener)?;
        let (mut server, _) = listener.accept().await?;
        server.set_nodelay(true)?;
        let mut b = [0u8; 1];
        while server.read_exact(&mut b).await.is_ok() {
            if server.write_all(&b).await.is_err() {
                break;
            }
        }
        anyhow::Ok(())
    });
    let client = on_own_thread(async move {
        let mut client = TcpStream::connect(addr).await?;
        client.set_nodelay(true)?;
        let mut samples = Vec::new();
        let end = Instant::now() + duration;
        let mut b = [7u8; 1];
        while Instant::now() < end {
            let t = Instant::now();
            client.write_all(&b).await?;
            client.read_exact(&mut b).await?;
            if samples.len() < MAX_PINGS {
                samples.push(t.elapsed());
            }
        }
        samples.sort_unstable();
        Ok((quantile_us(&samples, 0.5), quantile_us(&samples, 0.99)))
    });
    let (e, c) = tokio::join!(echo, client);
    e?;
    c
}

async fn pair() -> Result<(TcpStream, TcpStream)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let client = TcpStream::connect(listener.local_addr()?);
    let (client, accepted) = tokio::join!(client, listener.accept());
    let (client, (server, _)) = (client?, accepted?);
    // As the nodes' links do: small frames go out at once.
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    Ok((client, server))
}

/// 1-byte requests each answered with `answer` bytes: p50 and p99.
async fn ping_pong(duration: Duration, answer: usize) -> Result<(f64, f64)> {
    let (mut client, mut server) = pair().await?;
    let echo = tokio::spawn(async move {
        let mut b = [0u8; 1];
        let reply = vec![0x5au8; answer];
        while server.read_exact(&mut b).await.is_ok() {
            if server.write_all(&reply).await.is_err() {
                break;
            }
        }
    });
    let mut samples = Vec::new();
    let end = Instant::now() + duration;
    let b = [7u8; 1];
    let mut reply = vec![0u8; answer];
    while Instant::now() < end {
        let t = Instant::now();
        client.write_all(&b).await?;
        client.read_exact(&mut reply).await?;
        if samples.len() < MAX_PINGS {
            samples.push(t.elapsed());
        }
    }
    drop(client);
    let _ = echo.await;
    samples.sort_unstable();
    Ok((quantile_us(&samples, 0.5), quantile_us(&samples, 0.99)))
}

async fn stream(duration: Duration) -> Result<f64> {
    let (mut client, server) = pair().await?;
    let writer = tokio::spawn(async move {
        let chunk = vec![0x5au8; CHUNK];
        let end = Instant::now() + duration;
        while Instant::now() < end {
            client.write_all(&chunk).await?;
        }
        anyhow::Ok(())
    });
    let gb_s = drain(server).await?;
    writer.await??;
    Ok(gb_s)
}

/// Reads `stream` to its end: GB/s.
async fn drain(mut stream: TcpStream) -> Result<f64> {
    let mut buf = vec![0u8; CHUNK];
    let mut bytes = 0u64;
    let start = Instant::now();
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
    }
    Ok(bytes as f64 / start.elapsed().as_secs_f64().max(f64::MIN_POSITIVE) / 1e9)
}
