//! How fast one link can receive: a stream of 64 KiB `Data` frames over
//! mutual TLS between two threads, received with tokio-rustls (as the
//! links did) and with rustls's unbuffered API into large buffers (as they
//! do now), beside plain TCP. A measurement, not a check: run with
//! `cargo test --release -p coopcache-node --test all tls_receive:: -- --ignored --nocapture`.

use bytes::{Bytes, BytesMut};
use coopcache_core::protocol::PeerMsg;
use coopcache_node::block::BlockId;
use coopcache_node::frame::{self, Wire};
use coopcache_node::link::read_frame;
use coopcache_node::tls::{Identity, SERVER_NAME, init_cluster};
use rustls_pki_types::ServerName;
use std::io::{Read, Write};
use std::time::Instant;
use tokio::io::AsyncWriteExt;

const BLOCK: usize = 64 << 10;
const TOTAL: usize = 2 << 30;

fn identities() -> (Identity, Identity, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let names = ["a".to_string(), "b".to_string()];
    init_cluster(tmp.path(), &names, 1).unwrap();
    (
        Identity::load(tmp.path(), "a").unwrap(),
        Identity::load(tmp.path(), "b").unwrap(),
        tmp,
    )
}

/// Sends TOTAL bytes of Data frames, batched as the links batch them.
async fn send(client: std::sync::Arc<rustls::ClientConfig>, addr: std::net::SocketAddr) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let connector = tokio_rustls::TlsConnector::from(client);
    let name = ServerName::try_from(SERVER_NAME).unwrap();
    let mut tls = connector.connect(name, tcp).await.unwrap();
    let data = Bytes::from(vec![0x5a; BLOCK]);
    let mut buf = BytesMut::new();
    let mut sent = 0;
    let mut index = 0;
    while sent < TOTAL {
        buf.clear();
        for _ in 0..4 {
            let block = BlockId::new(1, index);
            index += 1;
            let msg = PeerMsg::Data {
                block,
                data: data.clone(),
            };
            frame::encode(&Wire::Peer(msg), &mut buf);
            sent += BLOCK;
        }
        tls.write_all(&buf).await.unwrap();
    }
    tls.shutdown().await.unwrap();
    // Read what the server sent after the handshake (its session tickets)
    // before closing, or the kernel resets the connection.
    let _ = tokio::io::copy(&mut tls, &mut tokio::io::sink()).await;
}

fn on_thread<T: Send + 'static>(
    f: impl Future<Output = T> + Send + 'static,
) -> std::thread::JoinHandle<T> {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    })
}

/// Receives with tokio-rustls and `read_frame`: GB/s.
fn tokio_rustls_receive(a: &Identity, b: &Identity) -> f64 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let server = a.server.clone();
    let rx = on_thread(async move {
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        let (tcp, _) = listener.accept().await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let mut tls = tokio_rustls::TlsAcceptor::from(server)
            .accept(tcp)
            .await
            .unwrap();
        let start = Instant::now();
        let mut got = 0;
        loop {
            match read_frame(&mut tls, frame::max_frame(BLOCK as u32)).await {
                Ok(Some(Wire::Peer(PeerMsg::Data { data, .. }))) => got += data.len(),
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => panic!("after {got} bytes: {e}"),
            }
        }
        assert_eq!(got, TOTAL);
        got as f64 / start.elapsed().as_secs_f64() / 1e9
    });
    let tx = on_thread(send(b.client.clone(), addr));
    tx.join().unwrap();
    rx.join().unwrap()
}

/// Receives with rustls's unbuffered API, reading 256 KiB at a time,
/// copying each record's plaintext into the frame being assembled: GB/s.
fn unbuffered_receive(a: &Identity, b: &Identity) -> f64 {
    use rustls::server::UnbufferedServerConnection;
    use rustls::unbuffered::{ConnectionState, UnbufferedStatus};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = a.server.clone();
    let rx = std::thread::spawn(move || {
        let (mut sock, _) = listener.accept().unwrap();
        sock.set_nodelay(true).unwrap();
        let mut conn = UnbufferedServerConnection::new(server).unwrap();
        let mut incoming = vec![0u8; 256 << 10];
        let mut used = 0;
        let mut outgoing = vec![0u8; 16 << 10];
        let mut out_used = 0;
        let mut plain = BytesMut::with_capacity(1 << 20);
        let mut got = 0;
        let mut start = None;
        loop {
            let UnbufferedStatus { mut discard, state } =
                conn.process_tls_records(&mut incoming[..used]);
            match state.unwrap() {
                ConnectionState::ReadTraffic(mut r) => {
                    while let Some(rec) = r.next_record() {
                        let rec = rec.unwrap();
                        discard += rec.discard;
                        plain.extend_from_slice(rec.payload);
                    }
                }
                ConnectionState::EncodeTlsData(mut e) => {
                    out_used += e.encode(&mut outgoing[out_used..]).unwrap();
                }
                ConnectionState::TransmitTlsData(t) => {
                    sock.write_all(&outgoing[..out_used]).unwrap();
                    out_used = 0;
                    t.done();
                }
                ConnectionState::BlockedHandshake | ConnectionState::WriteTraffic(_) => {
                    let n = sock.read(&mut incoming[used..]).unwrap();
                    if n == 0 {
                        break;
                    }
                    start.get_or_insert_with(Instant::now);
                    used += n;
                }
                ConnectionState::PeerClosed | ConnectionState::Closed => break,
                _ => {}
            }
            if discard > 0 {
                incoming.copy_within(discard..used, 0);
                used -= discard;
            }
            // Whole frames out of the plaintext.
            while plain.len() >= 4 {
                let len = u32::from_be_bytes(plain[..4].try_into().unwrap()) as usize;
                if plain.len() < 4 + len {
                    break;
                }
                let mut f = plain.split_to(4 + len);
                let body = f.split_off(4).freeze();
                if let Ok(Wire::Peer(PeerMsg::Data { data, .. })) = frame::decode(body) {
                    got += data.len();
                }
            }
        }
        assert_eq!(got, TOTAL);
        got as f64 / start.unwrap().elapsed().as_secs_f64() / 1e9
    });
    let tx = on_thread(send(b.client.clone(), addr));
    tx.join().unwrap();
    rx.join().unwrap()
}

/// One thread's BLAKE3 over 64 KiB blocks: GB/s.
fn blake3_rate() -> f64 {
    let data = vec![0x5au8; BLOCK];
    let start = Instant::now();
    let mut x = 0u8;
    for _ in 0..(TOTAL / BLOCK) {
        x ^= blake3::hash(&data).as_bytes()[0];
    }
    std::hint::black_box(x);
    TOTAL as f64 / start.elapsed().as_secs_f64() / 1e9
}

/// Plain TCP between two threads, 256 KiB writes and reads: GB/s.
fn tcp_rate() -> f64 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let rx = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 256 << 10];
        let start = Instant::now();
        let mut got = 0;
        loop {
            let n = s.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            got += n;
        }
        got as f64 / start.elapsed().as_secs_f64() / 1e9
    });
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let buf = vec![0x5au8; 256 << 10];
    for _ in 0..(TOTAL / buf.len()) {
        s.write_all(&buf).unwrap();
    }
    drop(s);
    rx.join().unwrap()
}

#[test]
#[ignore = "a measurement: run it in release with --ignored --nocapture"]
fn receive_throughput() {
    let (a, b, _tmp) = identities();
    println!("blake3 {:.2} GB/s", blake3_rate());
    for round in 0..3 {
        let p = tcp_rate();
        let t = tokio_rustls_receive(&a, &b);
        let u = unbuffered_receive(&a, &b);
        println!(
            "round {round}: tcp {p:.2} GB/s, tokio-rustls {t:.2} GB/s, unbuffered {u:.2} GB/s"
        );
    }
}
