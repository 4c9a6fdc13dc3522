//! Issue 39, attack 2: membership gossip believed anyone about anyone. With
//! her own id, a member gossiped "node 2 is down" at an incarnation no
//! refutation can beat; the others dropped node 2 for good.
//!
//! The datagrams are SWIM's, as docs/PROTOCOL.md says: foca's postcard
//! encoding of its header and updates, a SWIM identity being (node id,
//! listen address, incarnation). Eve encodes them with foca itself and an
//! identity type of her own.

use super::*;
use foca::{Codec, Header, Member, Message, PostcardCodec, State};
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::net::TcpListener;

/// A SWIM identity as the protocol document describes it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Swim {
    node: u32,
    listen: String,
    incarnation: u64,
}

impl foca::Identity for Swim {
    type Addr = u32;
    fn renew(&self) -> Option<Self> {
        None
    }
    fn addr(&self) -> u32 {
        self.node
    }
    fn win_addr_conflict(&self, other: &Self) -> bool {
        self.incarnation > other.incarnation
    }
}

fn datagram(header: &Header<Swim>, updates: &[Member<Swim>]) -> Vec<u8> {
    let mut out = Vec::new();
    Codec::encode_header(&mut PostcardCodec, header, &mut out).unwrap();
    out.extend_from_slice(&(updates.len() as u16).to_be_bytes());
    for m in updates {
        Codec::encode_member(&mut PostcardCodec, m, &mut out).unwrap();
    }
    out
}

/// Eve's listener: answers the nodes' links with her Hello and notes the
/// SWIM identity each node's datagrams carry as their source.
async fn listen(eve: Identity, bs: u32) -> (String, Arc<Mutex<HashMap<u32, Swim>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen: Arc<Mutex<HashMap<u32, Swim>>> = Arc::default();
    let (me, seen2) = (addr.clone(), seen.clone());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (eve, me, seen) = (eve.clone(), me.clone(), seen2.clone());
            tokio::spawn(async move {
                let acceptor = tokio_rustls::TlsAcceptor::from(eve.server.clone());
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut len = [0u8; 4];
                loop {
                    if tls.read_exact(&mut len).await.is_err() {
                        return;
                    }
                    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
                    if tls.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    match body[0] {
                        KIND_HELLO => {
                            let h = hello(EVE_ID, EVE, &me, bs);
                            if tls.write_all(&h).await.is_err() {
                                return;
                            }
                        }
                        KIND_GOSSIP if body.len() > 1 => {
                            let mut rest = &body[1..];
                            if let Ok(h) =
                                Codec::<Swim>::decode_header(&mut PostcardCodec, &mut rest)
                            {
                                seen.lock().unwrap().insert(h.src.node, h.src);
                            }
                        }
                        _ => {}
                    }
                }
            });
        }
    });
    (addr, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_member_cannot_gossip_another_down() {
    let c = cluster(Shape::default(), &[("x.bin", 1000)]).await;
    let bs = Shape::default().block_size;
    let eve = eve(&c);
    let (eve_listen, seen) = listen(eve.clone(), bs).await;
    // Eve links to nodes 0 and 1 under her own id and names her address
    // (a Members frame: count u16, then id u32 and listen str each), so
    // they dial her and she learns their SWIM identities.
    let mut links = Vec::new();
    for node in &c.nodes[..2] {
        let (mut link, answer) = handshake(node, &eve, &hello(EVE_ID, EVE, &eve_listen, bs)).await;
        assert!(answer.is_some(), "eve's own Hello refused");
        let mut members = 1u16.to_be_bytes().to_vec();
        members.extend_from_slice(&EVE_ID.to_be_bytes());
        put_str(&mut members, &eve_listen);
        link.write_all(&frame(2, &members)).await.unwrap();
        links.push(link);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().len() < 2 {
        assert!(Instant::now() < deadline, "no gossip reached eve");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let victim = Swim {
        node: 2,
        listen: c.nodes[2].listen_addr().to_string(),
        incarnation: u64::MAX,
    };
    let me = Swim {
        node: EVE_ID,
        listen: eve_listen.clone(),
        incarnation: 1,
    };
    let lies = [
        Member::new(victim.clone(), u16::MAX, State::Down),
        Member::new(victim, u16::MAX, State::Suspect),
    ];
    let ids: Vec<Swim> = (0..2).map(|n| seen.lock().unwrap()[&n].clone()).collect();
    let end = Instant::now() + Duration::from_secs(8);
    while Instant::now() < end {
        for (link, dst) in links.iter_mut().zip(&ids) {
            let header = Header {
                src: me.clone(),
                src_incarnation: 0,
                dst: dst.clone(),
                message: Message::Gossip,
            };
            link.write_all(&frame(KIND_GOSSIP, &datagram(&header, &lies)))
                .await
                .unwrap();
        }
        keep_members(&c.nodes, &[0, 1, 2], Duration::from_millis(500)).await;
    }
    for node in &c.nodes[..2] {
        let screened = node.metrics().gossip_screened.get();
        assert!(screened > 0, "no update screened");
    }
}
