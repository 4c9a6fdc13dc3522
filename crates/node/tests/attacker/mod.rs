//! An outsider's attacks on real daemons: a member holding one valid
//! certificate speaks the wire protocol from docs/PROTOCOL.md byte by byte
//! (its own frame encoder below, none of the daemon's frame types), and
//! each test checks that what honest nodes serve, whom they count as
//! members and whom they blame does not change.

use crate::common::*;
use coopcache_node::handle::NodeHandle;
use coopcache_node::tls::{Identity, SERVER_NAME, issue_as};
use rustls_pki_types::ServerName;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod answers;
mod disk_hints;
mod evict;
mod flood;
mod gossip;
mod identity;
mod listings;
mod locks;
mod pushed;
mod records;
mod revoke;
mod versions;
mod warm;
mod wire;

/// `PROTOCOL_VERSION` as docs/PROTOCOL.md gives it.
const VERSION: u16 = 15;
const KIND_HELLO: u8 = 1;
const KIND_GOSSIP: u8 = 3;
const KIND_LEAVING: u8 = 4;

/// The attacker's certificate name and the id the CA puts in it.
const EVE: &str = "eve";
const EVE_ID: u32 = 66;

type Link = tokio_rustls::client::TlsStream<TcpStream>;

/// One frame: length u32 BE (kind and body), kind u8, body.
fn frame(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = ((body.len() + 1) as u32).to_be_bytes().to_vec();
    out.push(kind);
    out.extend_from_slice(body);
    out
}

/// A string: len u8, UTF-8.
fn put_str(out: &mut Vec<u8>, s: &str) {
    out.push(s.len() as u8);
    out.extend_from_slice(s.as_bytes());
}

/// A Hello frame of [`VERSION`].
fn hello(node: u32, name: &str, listen: &str, block_size: u32) -> Vec<u8> {
    hello_of(VERSION, node, name, listen, block_size)
}

/// A Hello frame: "COOP", version u16, node id u32, name, listen, block
/// size u32, and from version 15 on the release (a string).
fn hello_of(version: u16, node: u32, name: &str, listen: &str, block_size: u32) -> Vec<u8> {
    let mut body = b"COOP".to_vec();
    body.extend_from_slice(&version.to_be_bytes());
    body.extend_from_slice(&node.to_be_bytes());
    put_str(&mut body, name);
    put_str(&mut body, listen);
    body.extend_from_slice(&block_size.to_be_bytes());
    if version >= 15 {
        put_str(&mut body, "0.0.0-eve");
    }
    frame(KIND_HELLO, &body)
}

/// Eve: a member's certificate from the cluster's CA.
fn eve(c: &TestCluster) -> Identity {
    issue_as(&c.keys, EVE, Some(EVE_ID), 30).unwrap();
    Identity::load(&c.keys, EVE).unwrap()
}

/// TLS to `node` as `who` (the member protocol's mutual TLS).
async fn connect(node: &NodeHandle, who: &Identity) -> Link {
    connect_with(node, who.client.clone()).await.unwrap()
}

/// TLS to `node` with client configuration `config`.
async fn connect_with(
    node: &NodeHandle,
    config: Arc<rustls::ClientConfig>,
) -> std::io::Result<Link> {
    let tcp = TcpStream::connect(node.listen_addr()).await?;
    let connector = tokio_rustls::TlsConnector::from(config);
    let server = ServerName::try_from(SERVER_NAME).unwrap();
    connector.connect(server, tcp).await
}

/// The next frame's kind and body, `None` if the connection ends (or
/// nothing comes within 3 s).
async fn read_frame(link: &mut Link) -> Option<(u8, Vec<u8>)> {
    let read = async {
        let mut len = [0u8; 4];
        link.read_exact(&mut len).await.ok()?;
        let len = u32::from_be_bytes(len) as usize;
        let mut body = vec![0u8; len];
        link.read_exact(&mut body).await.ok()?;
        let kind = body.remove(0);
        Some((kind, body))
    };
    tokio::time::timeout(Duration::from_secs(3), read)
        .await
        .ok()
        .flatten()
}

/// Sends `hello` to `node` as `who`; the link and the node's answering
/// frame (its Hello), or `None` if it refused.
async fn handshake(
    node: &NodeHandle,
    who: &Identity,
    hello: &[u8],
) -> (Link, Option<(u8, Vec<u8>)>) {
    let mut link = connect(node, who).await;
    link.write_all(hello).await.unwrap();
    link.flush().await.unwrap();
    let answer = read_frame(&mut link).await;
    (link, answer)
}

/// The ids `node` counts as live members, itself included.
async fn members(node: &NodeHandle) -> Vec<u32> {
    let mut ids: Vec<u32> = node
        .status()
        .await
        .unwrap()
        .members
        .iter()
        .map(|m| m.id)
        .collect();
    ids.sort_unstable();
    ids
}

/// Polls `nodes` for `within`: fails as soon as one of them does not count
/// every id of `want` as a member.
async fn keep_members(nodes: &[Arc<NodeHandle>], want: &[u32], within: Duration) {
    let end = Instant::now() + within;
    while Instant::now() < end {
        for (i, n) in nodes.iter().enumerate() {
            let got = members(n).await;
            for id in want {
                assert!(got.contains(id), "node {i} dropped member {id}: {got:?}");
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
