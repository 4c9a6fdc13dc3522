//! The gateway under clients that take without giving back (issue 42,
//! item 4): readers that crawl or stop, and a flood of connections that
//! send nothing, must leave an ordinary client served at once.

use crate::gateway::{closed, gateway, request};
use coopcache_node::gateway::{GatewayOptions, raise_open_file_limit};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A client socket with a small receive buffer, so that a reader that
/// stops or crawls is felt by the server after kilobytes, not megabytes.
fn connect_small(addr: SocketAddr) -> TcpStream {
    let s =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    s.set_recv_buffer_size(16 << 10).expect("rcvbuf");
    s.connect(&addr.into()).expect("connect");
    s.into()
}

/// Sends `GET path` on a small-buffered connection and returns it unread.
fn start_get(addr: SocketAddr, path: &str) -> TcpStream {
    let mut s = connect_small(addr);
    let head = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
    s.write_all(head.as_bytes()).expect("send");
    s
}

/// A reader taking 4 KiB every 125 ms (32 KiB/s) until `stop`; counts
/// what it got in `got`.
fn slow_reader(mut s: TcpStream, stop: Arc<AtomicBool>, got: Arc<AtomicU64>) {
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut buf = [0u8; 4096];
    while !stop.load(Ordering::Relaxed) {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => got.fetch_add(n as u64, Ordering::Relaxed),
        };
        std::thread::sleep(Duration::from_millis(125));
    }
}

/// One `GET` of `path` on a new connection, timed from connect to the last
/// byte; the status, or why there was none.
fn timed_get(addr: SocketAddr, path: &str) -> (Result<u16, String>, Duration) {
    let start = Instant::now();
    let result = (|| {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
            .map_err(|e| format!("connect: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        let head = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        s.write_all(head.as_bytes())
            .map_err(|e| format!("send: {e}"))?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).map_err(|e| format!("read: {e}"))?;
        let status = std::str::from_utf8(raw.get(9..12).unwrap_or_default())
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("no status in {:?}", String::from_utf8_lossy(&raw)))?;
        Ok(status)
    })();
    (result, start.elapsed())
}

/// Issue 42's scene: 8 readers at 32 KiB/s and 8 that stopped reading,
/// all of a large file, then 2,000 connections that send nothing. A
/// client's `GET` of a small cached file must still take under 100 ms.
/// Before the fix the slow readers held every streaming permit (the GET
/// waited for them) and the accept loop spent a second on each connection
/// past the cap (the GET waited behind the flood).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_stalled_and_idle_clients_leave_a_small_get_fast() {
    let (_, limit) = raise_open_file_limit().expect("raise the open-file limit");
    assert!(
        limit >= 4096,
        "the test needs 4,096 descriptors, has {limit}"
    );
    let big = 24 << 20;
    let g = gateway(
        &[("big.bin", big), ("small.txt", 17)],
        GatewayOptions::default(),
    )
    .await;
    let addr = g.addr;
    // The small file is cached, as a popular file would be.
    assert_eq!(
        request(addr, "GET", "/v1/files/small.txt", &[])
            .await
            .status,
        200
    );

    let stop = Arc::new(AtomicBool::new(false));
    let got = Arc::new(AtomicU64::new(0));
    let mut readers = Vec::new();
    for _ in 0..8 {
        let s = start_get(addr, "/v1/files/big.bin");
        let (stop, got) = (stop.clone(), got.clone());
        readers.push(std::thread::spawn(move || slow_reader(s, stop, got)));
    }
    let stalled: Vec<TcpStream> = (0..8)
        .map(|_| start_get(addr, "/v1/files/big.bin"))
        .collect();
    // Long enough for every stream to take what it may.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let flood_start = Instant::now();
    let connects = (0..2000).map(|_| {
        tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr))
    });
    let idle: Vec<_> = futures::future::join_all(connects)
        .await
        .into_iter()
        .filter_map(|c| c.ok().and_then(Result::ok))
        .collect();
    eprintln!(
        "{} of 2000 idle connections made in {:?}",
        idle.len(),
        flood_start.elapsed()
    );
    // The oldest idle connections are past the age at which one may be
    // closed to make room for a newcomer.
    tokio::time::sleep(Duration::from_secs(1)).await;

    let times = tokio::task::spawn_blocking(move || {
        (0..5)
            .map(|_| timed_get(addr, "/v1/files/small.txt"))
            .collect::<Vec<_>>()
    })
    .await
    .expect("client");
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().expect("reader");
    }
    let slow_got = got.load(Ordering::Relaxed);
    eprintln!("small GETs: {times:?}; the slow readers got {slow_got} bytes");
    drop((stalled, idle));
    for (result, took) in times {
        assert_eq!(result, Ok(200), "the small GET failed after {took:?}");
        assert!(
            took < Duration::from_millis(100),
            "the small GET took {took:?} beside slow, stalled and idle clients"
        );
    }
    assert!(slow_got > 0, "the slow readers were starved");
}

/// Reads `GET path` on `s` at `chunk` bytes every 125 ms for `for_`, then
/// as fast as it can until the connection ends: the bytes it got.
fn paced_reader(mut s: TcpStream, chunk: usize, for_: Duration) -> usize {
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let start = Instant::now();
    let mut got = 0;
    let mut buf = vec![0u8; 1 << 16];
    while start.elapsed() < for_ {
        match s.read(&mut buf[..chunk]) {
            Ok(0) | Err(_) => return got,
            Ok(n) => got += n,
        }
        std::thread::sleep(Duration::from_millis(125));
    }
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return got,
            Ok(n) => got += n,
        }
    }
}

/// A client that keeps reading, but a trickle, is never idle: only the
/// rate floor cuts it. Under a floor of 64 KiB/s over 2 s, one client
/// takes 8 KiB/s for 5 s and then reads as fast as it can: cut, it finds
/// the connection closed once the socket buffers drain (before the floor
/// it got the whole file). Another takes 256 KiB/s, four times the floor,
/// and is served the whole file: the kernel's send buffer must not hide
/// its pace (before `gateway::SEND_BACKLOG` it was cut, its writes
/// waiting for a third of megabytes of buffer to drain).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_reading_under_the_rate_floor_is_cut() {
    let opts = GatewayOptions {
        min_rate: 64 << 10,
        rate_window: Duration::from_secs(2),
        ..GatewayOptions::default()
    };
    let size = 32 << 20;
    let g = gateway(&[("big.bin", size)], opts).await;
    let addr = g.addr;
    let five = Duration::from_secs(5);
    let slow = start_get(addr, "/v1/files/big.bin");
    let slow = std::thread::spawn(move || paced_reader(slow, 1 << 10, five));
    let mut steady = TcpStream::connect(addr).expect("connect");
    steady
        .write_all(b"GET /v1/files/big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("send");
    let steady = std::thread::spawn(move || paced_reader(steady, 32 << 10, five));
    let (slow, steady) = tokio::task::spawn_blocking(move || {
        (
            slow.join().expect("slow reader"),
            steady.join().expect("steady reader"),
        )
    })
    .await
    .expect("clients");
    assert!(
        slow < size / 2,
        "the trickle reader was never cut: it got {slow} of {size} bytes"
    );
    // The whole response: its header and the file.
    assert!(
        steady > size,
        "a reader above the floor was cut after {steady} bytes"
    );
    assert_eq!(
        closed(addr, "slow").await,
        1,
        "cut: the trickle reader only"
    );
}
