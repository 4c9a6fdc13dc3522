//! Eve, with a certificate from another CA, gets nothing.

use super::*;

/// `name`'s certificate chain and key from `dir`.
fn chain_and_key(dir: &Path, name: &str) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    let chain = CertificateDer::pem_file_iter(dir.join(format!("{name}.pem")))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join(format!("{name}.key"))).unwrap();
    (chain, key)
}

/// A client config that trusts the cluster CA in `trusted` but presents
/// the certificate and key of `name` in `presented` (another CA's).
fn mixed_client(trusted: &Path, presented: &Path, name: &str) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(trusted.join("ca.pem")).unwrap())
        .unwrap();
    let (chain, key) = chain_and_key(presented, name);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .unwrap();
    Arc::new(config)
}

/// A server presenting `name`'s certificate from `dir` and accepting any
/// client, so only the dialling node's own check can refuse it.
fn lax_server(dir: &Path, name: &str) -> Arc<rustls::ServerConfig> {
    let (chain, key) = chain_and_key(dir, name);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    Arc::new(config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_without_a_cluster_certificate_gets_nothing() {
    let len = (BLOCKS_PER_FILE * BLOCK_SIZE) as usize;
    let shape = Shape {
        nodes: 2,
        block_size: BLOCK_SIZE,
        ..Shape::default()
    };
    let c = cluster_with(shape, &[("x.bin", len)], |o| {
        o.min_timeout = Duration::from_secs(5)
    })
    .await;
    let other = tempfile::tempdir().unwrap();
    let other_keys = other.path().join("keys");
    init_cluster(&other_keys, &["node-7".to_string()], 30).unwrap();
    let eve = Identity::load(&other_keys, "node-7").unwrap();

    // Eve's listener: counts connections and completed handshakes.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let eve_listen = listener.local_addr().unwrap().to_string();
    let connections = Arc::new(AtomicUsize::new(0));
    let handshakes = Arc::new(AtomicUsize::new(0));
    let frames = Arc::new(AtomicUsize::new(0));
    {
        let server = lax_server(&other_keys, "node-7");
        let (connections, handshakes, frames) =
            (connections.clone(), handshakes.clone(), frames.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                connections.fetch_add(1, Ordering::SeqCst);
                let acceptor = tokio_rustls::TlsAcceptor::from(server.clone());
                let (handshakes, frames) = (handshakes.clone(), frames.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    handshakes.fetch_add(1, Ordering::SeqCst);
                    while let Ok(Some(_)) = read_frame(&mut tls, max_frame(BLOCK_SIZE)).await {
                        frames.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
    }
    let version = c.nodes[0].stat("x.bin").await.unwrap();
    let block = first_block("x.bin", &version.version);
    let errors_before = c.nodes[0].status().await.unwrap().peer_errors;

    // 1. Eve dials node 0 trusting its CA, presenting her own certificate:
    //    the node refuses her certificate. Whatever she sends (her Hello,
    //    a member list naming her, a claim to cache a block, a read) is
    //    never processed, and nothing comes back.
    let client = mixed_client(&c.keys, &other_keys, "node-7");
    let eve_hello = hello(&eve, 7, &eve_listen);
    let attempt = async {
        let tcp = TcpStream::connect(c.nodes[0].listen_addr()).await.unwrap();
        let connector = tokio_rustls::TlsConnector::from(client);
        let server = ServerName::try_from(SERVER_NAME).unwrap();
        // In TLS 1.3 the client may finish its side before the server has
        // judged its certificate: the refusal then arrives as an alert.
        let Ok(mut tls) = connector.connect(server, tcp).await else {
            return None;
        };
        let frames = [
            eve_hello.clone(),
            Wire::Members(vec![(7, eve_listen.clone())]),
            Wire::Peer(PeerMsg::Cached { block }),
            Wire::Peer(PeerMsg::Read { block }),
        ];
        for f in &frames {
            if write_frame(&mut tls, f).await.is_err() {
                return None;
            }
        }
        match read_frame(&mut tls, max_frame(BLOCK_SIZE)).await {
            Ok(Some(w)) => Some(w),
            _ => None,
        }
    };
    let got = tokio::time::timeout(Duration::from_secs(10), attempt)
        .await
        .expect("the node neither refused nor answered");
    assert_eq!(got, None, "Eve got a frame back");

    // 2. With her own CA's configs she does not even finish a handshake.
    let refused = dial(
        &c.nodes[1].listen_addr().to_string(),
        eve.client.clone(),
        &eve_hello,
    )
    .await;
    assert!(refused.is_err(), "Eve connected to node 1");

    // Node 0 never acted on her member list: nobody dialled her.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "a node dialled Eve after her member list"
    );

    // 3. A node told to join Eve refuses her server certificate (and
    //    keeps retrying, refusing each time).
    c.nodes[1].join(eve_listen.clone()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while connections.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "node 1 never dialled Eve");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    let errors_after = c.nodes[0].status().await.unwrap().peer_errors;
    assert!(errors_after > errors_before, "node 0 counted no refusal");
    for node in &c.nodes {
        let s = node.status().await.unwrap();
        let ids: Vec<NodeId> = s.members.iter().map(|m| m.id).collect();
        assert_eq!(ids.len(), 2, "node {}: members {ids:?}", s.id);
    }
    assert_eq!(
        handshakes.load(Ordering::SeqCst),
        0,
        "a node finished a handshake with Eve"
    );
    assert_eq!(frames.load(Ordering::SeqCst), 0, "a node sent Eve a frame");

    // Her claim to cache the block was not recorded: the second reader is
    // served by the first, not forwarded to her (and left to time out).
    // The block's manager reads first, so its hash is recorded at once.
    let path: Arc<str> = Arc::from("x.bin");
    let want = contents(1, len);
    let first = manager_of(u64::from(block.route), &[0, 1]).unwrap() as usize;
    let mut levels = Vec::new();
    for node in [&c.nodes[first], &c.nodes[1 - first]] {
        let (data, level) = node.read_block(&path, &version, 0).await.unwrap();
        assert!(data[..] == want[..BLOCK_SIZE as usize]);
        levels.push(level);
    }
    assert_eq!(levels, [Level::Origin, Level::RemoteNode]);
    for node in &c.nodes {
        assert_eq!(node.status().await.unwrap().timeouts, 0);
    }
}
