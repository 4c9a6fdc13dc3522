//! The HTTP gateway as an untrusted client meets it, over raw TCP so every
//! header and every byte is ours: conditional requests and the resumed
//! download that must not splice two versions, Range arithmetic at the
//! edges, HEAD, errors that name no origin path, links out of the origin,
//! clients that send half a header or stop reading, a connection cap,
//! and the bearer token.

use crate::common;
use common::*;
use coopcache_node::gateway::{self, GatewayOptions, Token};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const TOKEN: &str = "0123456789abcdef-test-token";

pub(crate) struct Gateway {
    pub(crate) addr: SocketAddr,
    pub(crate) c: TestCluster,
}

pub(crate) async fn gateway(files: &[(&str, usize)], opts: GatewayOptions) -> Gateway {
    let shape = Shape {
        nodes: 1,
        ..Shape::default()
    };
    let c = cluster_with(shape, files, |o| o.attr_ttl = Duration::ZERO).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let node = c.nodes[0].clone();
    tokio::spawn(async move { gateway::serve(listener, node, &opts).await });
    Gateway { addr, c }
}

/// A response: status, headers (lower-case names), body.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends one request (`extra` header lines) and reads the response whole;
/// runs on a blocking thread so the node keeps its runtime.
pub(crate) async fn request(addr: SocketAddr, method: &str, path: &str, extra: &[&str]) -> Reply {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{}\r\n",
        extra.iter().map(|h| format!("{h}\r\n")).collect::<String>()
    );
    tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        s.write_all(head.as_bytes()).expect("send");
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).expect("read reply");
        parse(&raw)
    })
    .await
    .expect("client thread")
}

/// Connections the gateway closed on its own for `reason`, as its
/// `/metrics` shows them.
pub(crate) async fn closed(addr: SocketAddr, reason: &str) -> u64 {
    let r = request(addr, "GET", "/metrics", &[]).await;
    assert_eq!(r.status, 200, "/metrics");
    let text = String::from_utf8_lossy(&r.body).into_owned();
    let key = format!("coopcache_gateway_closed_total{{endpoint=\"http\",reason=\"{reason}\"}} ");
    let line = text.lines().find_map(|l| l.strip_prefix(&key));
    let line = line.unwrap_or_else(|| panic!("no {key} in /metrics:\n{text}"));
    line.trim().parse().expect("a count")
}

pub(crate) fn parse(raw: &[u8]) -> Reply {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next().expect("status line")[9..12]
        .parse()
        .expect("status");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Reply {
        status,
        headers,
        body: raw[end + 4..].to_vec(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_requests_follow_rfc_9110() {
    let g = gateway(&[("a.bin", 100_000)], GatewayOptions::default()).await;
    let url = "/v1/files/a.bin";
    let full = request(g.addr, "GET", url, &[]).await;
    assert_eq!(full.status, 200);
    assert_eq!(full.body, contents(1, 100_000));
    let etag = full.header("etag").expect("ETag").to_owned();
    let date = full
        .header("last-modified")
        .expect("Last-Modified")
        .to_owned();
    let ask = |h: String| async move { request(g.addr, "GET", url, &[&h]).await };

    let r = ask(format!("If-None-Match: {etag}")).await;
    assert_eq!((r.status, r.body.len()), (304, 0));
    assert_eq!(r.header("etag"), Some(etag.as_str()));
    assert_eq!(ask("If-None-Match: \"other\"".into()).await.status, 200);
    assert_eq!(ask(format!("If-Modified-Since: {date}")).await.status, 304);
    assert_eq!(ask(format!("If-Match: {etag}")).await.status, 200);
    assert_eq!(ask("If-Match: \"other\"".into()).await.status, 412);
    let before = "If-Unmodified-Since: Thu, 01 Jan 1970 00:00:01 GMT".to_owned();
    assert_eq!(ask(before).await.status, 412);
    assert_eq!(
        ask(format!("If-Unmodified-Since: {date}")).await.status,
        200
    );
}

/// A resumed download: the client holds the first 1,000 bytes of version
/// 1 and asks for the rest `If-Range` version 1; the file has changed, so
/// it must get the whole new file (200), never a 206 of version 2 that it
/// would splice onto version 1's head.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_download_of_a_changed_file_gets_the_whole_new_file() {
    let g = gateway(&[("a.bin", 100_000)], GatewayOptions::default()).await;
    let url = "/v1/files/a.bin";
    let head = request(g.addr, "GET", url, &["Range: bytes=0-999"]).await;
    assert_eq!(head.status, 206);
    let etag = head.header("etag").expect("ETag").to_owned();
    let resume = format!("If-Range: {etag}");
    let same = request(g.addr, "GET", url, &["Range: bytes=1000-", &resume]).await;
    assert_eq!(same.status, 206, "unchanged: the range applies");
    assert_eq!(same.body, contents(1, 100_000)[1000..]);

    let new = contents(2, 100_000);
    let tmp = g.c.origin_dir.join("a.tmp");
    std::fs::write(&tmp, &new).expect("write");
    std::fs::rename(&tmp, g.c.origin_dir.join("a.bin")).expect("replace");
    let r = request(g.addr, "GET", url, &["Range: bytes=1000-", &resume]).await;
    assert_eq!(r.status, 200, "changed: the whole new representation");
    assert!(r.body == new, "the new file, whole");
    assert_ne!(r.header("etag"), Some(etag.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn range_edges_head_and_errors() {
    let g = gateway(
        &[("a.bin", 1 << 20), ("empty", 0)],
        GatewayOptions::default(),
    )
    .await;
    let r = request(
        g.addr,
        "GET",
        "/v1/files/a.bin",
        &["Range: bytes=0-18446744073709551615"],
    )
    .await;
    assert_eq!(r.status, 206);
    assert_eq!(r.header("content-range"), Some("bytes 0-1048575/1048576"));
    assert_eq!(r.body.len(), 1 << 20);
    let r = request(g.addr, "GET", "/v1/files/empty", &["Range: bytes=-5"]).await;
    assert_eq!(r.status, 416);
    assert_eq!(r.header("content-range"), Some("bytes */0"));

    for range in [None, Some("Range: bytes=10-19")] {
        let extra: Vec<&str> = range.into_iter().collect();
        let get = request(g.addr, "GET", "/v1/files/a.bin", &extra).await;
        let head = request(g.addr, "HEAD", "/v1/files/a.bin", &extra).await;
        assert_eq!(head.status, get.status);
        assert!(head.body.is_empty());
        for name in [
            "content-length",
            "etag",
            "last-modified",
            "accept-ranges",
            "content-type",
            "content-range",
        ] {
            assert_eq!(
                head.header(name),
                get.header(name),
                "{name} of HEAD {extra:?}"
            );
        }
    }

    let origin = g.c.origin_dir.display().to_string();
    let long = format!("/v1/files/{}", "n".repeat(300));
    for (path, want) in [
        ("/v1/files/a.bin/x", 404),
        ("/v1/files/missing", 404),
        (long.as_str(), 400),
        ("/v1/files/%2e%2e/etc/passwd", 400),
    ] {
        let r = request(g.addr, "GET", path, &[]).await;
        assert_eq!(r.status, want, "{path}");
        let body = String::from_utf8_lossy(&r.body);
        assert!(
            !body.contains(&origin),
            "{path}: the body names the origin: {body}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_out_of_the_origin_are_not_served() {
    let g = gateway(&[("a.bin", 10)], GatewayOptions::default()).await;
    std::os::unix::fs::symlink("/etc/passwd", g.c.origin_dir.join("passwd_link")).expect("link");
    std::os::unix::fs::symlink("/etc", g.c.origin_dir.join("etc_link")).expect("link");
    for path in ["/v1/files/passwd_link", "/v1/files/etc_link/passwd"] {
        let r = request(g.addr, "GET", path, &[]).await;
        assert_eq!(r.status, 400, "{path}");
        assert!(
            !String::from_utf8_lossy(&r.body).contains("root:"),
            "{path} leaked /etc/passwd"
        );
    }
}

/// Reads until the server closes; returns the bytes and how long it took.
fn until_closed(mut s: TcpStream) -> (Vec<u8>, Duration) {
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return (got, start.elapsed()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_headers_silence_and_idle_keep_alive_are_timed_out() {
    let opts = GatewayOptions {
        header_timeout: Duration::from_millis(500),
        ..GatewayOptions::default()
    };
    let g = gateway(&[("a.bin", 10)], opts).await;
    let addr = g.addr;
    let times = tokio::task::spawn_blocking(move || {
        let mut half = TcpStream::connect(addr).expect("connect");
        half.write_all(b"GET /v1/status HTTP/1.1\r\nHost: x\r\n")
            .expect("send");
        let silent = TcpStream::connect(addr).expect("connect");
        let mut kept = TcpStream::connect(addr).expect("connect");
        kept.write_all(b"GET /v1/files/a.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            .expect("send");
        let (reply, t_kept) = until_closed(kept);
        assert!(
            reply.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&reply)
        );
        [until_closed(half).1, until_closed(silent).1, t_kept]
    })
    .await
    .expect("client");
    for t in times {
        assert!(
            t < Duration::from_secs(5),
            "a connection outlived the header timeout: {t:?}"
        );
    }
}

/// A client asks for 32 MiB and never reads: once the socket buffers fill,
/// nothing moves, and the idle timeout closes the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_cut_off() {
    let opts = GatewayOptions {
        idle_timeout: Duration::from_millis(500),
        ..GatewayOptions::default()
    };
    let size = 32 << 20;
    let g = gateway(&[("big.bin", size)], opts).await;
    let addr = g.addr;
    let got = tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.write_all(b"GET /v1/files/big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            .expect("send");
        std::thread::sleep(Duration::from_secs(3));
        until_closed(s).0.len()
    })
    .await
    .expect("client");
    assert!(
        got < size,
        "the stalled client got all {got} bytes: no idle timeout"
    );
    assert_eq!(closed(addr, "idle").await, 1);
    assert_eq!(closed(addr, "slow").await, 0);
}

/// At the cap a newcomer never waits: while every slot is young or busy
/// it is answered 503 at once, and once the oldest connection has sat
/// without a request for [`gateway::EVICT_AFTER`] it is closed to make
/// room, so a flood of silent connections cannot keep a client out.
/// Before: the accept loop waited a second on each connection past the
/// cap, then refused it, and silent connections kept their slots for the
/// whole header timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_cap_a_newcomer_is_refused_at_once_or_takes_a_silent_slot() {
    let opts = GatewayOptions {
        max_connections: 3,
        ..GatewayOptions::default()
    };
    let g = gateway(&[("a.bin", 10)], opts).await;
    let addr = g.addr;
    let silent: Vec<TcpStream> = (0..3)
        .map(|_| TcpStream::connect(addr).expect("connect"))
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let asked = Instant::now();
    let over = request(addr, "GET", "/v1/files/a.bin", &[]).await;
    let took = asked.elapsed();
    assert_eq!(over.status, 503);
    assert_eq!(over.header("retry-after"), Some("1"));
    assert!(
        took < Duration::from_millis(300),
        "the refusal took {took:?}"
    );

    tokio::time::sleep(Duration::from_millis(1200)).await;
    let asked = Instant::now();
    let r = request(addr, "GET", "/v1/files/a.bin", &[]).await;
    let took = asked.elapsed();
    assert_eq!(r.status, 200, "a silent connection kept its slot");
    assert!(took < Duration::from_millis(300), "the GET took {took:?}");
    // The oldest silent connection was the one closed.
    let mut first = silent.into_iter().next().expect("one");
    first
        .set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    assert_eq!(first.read(&mut [0u8; 16]).ok(), Some(0), "not closed");
    assert_eq!(closed(addr, "refused").await, 1);
    assert_eq!(closed(addr, "evicted").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_with_a_token_serves_only_its_holders() {
    let opts = GatewayOptions {
        token: Token::new(TOKEN),
        ..GatewayOptions::default()
    };
    let g = gateway(&[("a.bin", 10)], opts).await;
    for path in [
        "/v1/files/a.bin",
        "/v1/status",
        "/metrics",
        "/",
        "/dashboard.js",
        "/dashboard.css",
    ] {
        let none = request(g.addr, "GET", path, &[]).await;
        assert_eq!(none.status, 401, "{path}");
        assert!(
            none.header("www-authenticate")
                .is_some_and(|v| v.starts_with("Bearer"))
        );
        let wrong = request(
            g.addr,
            "GET",
            path,
            &["Authorization: Bearer 0123456789abcdef-wrong"],
        )
        .await;
        assert_eq!(wrong.status, 401, "{path}");
        let bearer = format!("Authorization: Bearer {TOKEN}");
        assert_eq!(
            request(g.addr, "GET", path, &[&bearer]).await.status,
            200,
            "{path}"
        );
    }
}
