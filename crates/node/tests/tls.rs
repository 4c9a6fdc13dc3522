//! The cluster CA, node certificates and real mutual-TLS handshakes over
//! TCP on 127.0.0.1.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use coopcache_node::tls::{
    self, Identity, SERVER_NAME, TlsError, check_name, has_cluster, init_cluster, issue,
    issue_with_validity, peer_name,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tempfile::TempDir;
use time::OffsetDateTime;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{TlsAcceptor, TlsConnector};

const DAYS: u32 = 30;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A fresh cluster in a temporary directory (`keys/` inside it, so that
/// `init_cluster` creates the directory itself).
fn cluster(list: &[&str]) -> (TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("keys");
    init_cluster(&dir, &names(list), DAYS).unwrap();
    (tmp, dir)
}

fn load_err(dir: &Path, name: &str) -> (TlsError, String) {
    let err = Identity::load(dir, name).unwrap_err();
    let text = err.to_string();
    println!("{name}: {text}");
    (err, text)
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn roots_of(dir: &Path) -> Arc<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    let ca = CertificateDer::from_pem_file(dir.join("ca.pem")).unwrap();
    roots.add(ca).unwrap();
    Arc::new(roots)
}

fn client_builder(
    roots: Arc<rustls::RootCertStore>,
) -> rustls::ConfigBuilder<rustls::ClientConfig, rustls::client::WantsClientCert> {
    rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
}

/// What one side of a connection got: the peer's name and the bytes it read.
type Side = io::Result<(Option<String>, Vec<u8>)>;

/// One connection: the client sends `ping!`, the server answers `pong!`.
/// Each side reports what it saw; a side whose handshake fails reads nothing.
async fn exchange(
    server: Arc<rustls::ServerConfig>,
    client: Arc<rustls::ClientConfig>,
) -> (Side, Side) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let acceptor = TlsAcceptor::from(server);
    let server_side = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await?;
        let mut tls = acceptor.accept(tcp).await?;
        let name = peer_name(tls.get_ref().1.peer_certificates().unwrap_or(&[]));
        let mut got = vec![0; 5];
        tls.read_exact(&mut got).await?;
        tls.write_all(b"pong!").await?;
        tls.shutdown().await?;
        Ok((name, got))
    });
    let client_side = async move {
        let tcp = TcpStream::connect(addr).await?;
        let server_name = ServerName::try_from(SERVER_NAME).unwrap().to_owned();
        let mut tls = TlsConnector::from(client).connect(server_name, tcp).await?;
        let name = peer_name(tls.get_ref().1.peer_certificates().unwrap_or(&[]));
        tls.write_all(b"ping!").await?;
        tls.flush().await?;
        let mut got = vec![0; 5];
        tls.read_exact(&mut got).await?;
        Ok((name, got))
    };
    let limit = Duration::from_secs(20);
    let client = tokio::time::timeout(limit, client_side).await.unwrap();
    let server = tokio::time::timeout(limit, server_side)
        .await
        .unwrap()
        .unwrap();
    println!("server side: {server:?}\nclient side: {client:?}");
    (server, client)
}

#[test]
fn init_then_load() {
    let (_tmp, dir) = cluster(&["node-1", "node_2", "n3.example"]);
    assert!(has_cluster(&dir));
    for name in ["node-1", "node_2", "n3.example"] {
        let id = Identity::load(&dir, name).unwrap();
        assert_eq!(id.name, name);
        let chain = CertificateDer::pem_file_iter(dir.join(format!("{name}.pem")))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        assert_eq!(peer_name(&chain).as_deref(), Some(name));
    }
}

#[cfg(unix)]
#[test]
fn key_files_and_directory_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let (_tmp, dir) = cluster(&["a"]);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join("ca.key")), 0o600);
    assert_eq!(mode(&dir.join("a.key")), 0o600);
    // Renewal replaces the files and keeps the key private.
    issue(&dir, "a", DAYS).unwrap();
    assert_eq!(mode(&dir.join("a.key")), 0o600);
    assert!(!dir.join("a.key.tmp").exists());
    Identity::load(&dir, "a").unwrap();
}

#[test]
fn issue_adds_a_node_to_an_existing_cluster() {
    let (_tmp, dir) = cluster(&["a"]);
    issue(&dir, "late", DAYS).unwrap();
    assert_eq!(Identity::load(&dir, "late").unwrap().name, "late");
}

#[tokio::test]
async fn mutual_tls_between_two_nodes_of_one_cluster() {
    let (_tmp, dir) = cluster(&["alpha", "beta"]);
    let alpha = Identity::load(&dir, "alpha").unwrap();
    let beta = Identity::load(&dir, "beta").unwrap();
    let (server, client) = exchange(alpha.server.clone(), beta.client.clone()).await;
    assert_eq!(
        server.unwrap(),
        (Some("beta".to_owned()), b"ping!".to_vec())
    );
    assert_eq!(
        client.unwrap(),
        (Some("alpha".to_owned()), b"pong!".to_vec())
    );
    // And the other way round.
    let (server, client) = exchange(beta.server, alpha.client).await;
    assert_eq!(server.unwrap().0.as_deref(), Some("alpha"));
    assert_eq!(client.unwrap().0.as_deref(), Some("beta"));
}

#[tokio::test]
async fn nodes_of_another_cluster_are_refused_both_ways() {
    let (_tmp_a, dir_a) = cluster(&["a"]);
    let (_tmp_b, dir_b) = cluster(&["a"]);
    let ours = Identity::load(&dir_a, "a").unwrap();
    let theirs = Identity::load(&dir_b, "a").unwrap();

    // Our client refuses their server (and their server reads nothing).
    let (server, client) = exchange(theirs.server.clone(), ours.client.clone()).await;
    assert!(client.is_err());
    assert!(server.is_err());
    // Their client refuses our server.
    let (server, client) = exchange(ours.server.clone(), theirs.client).await;
    assert!(client.is_err());
    assert!(server.is_err());

    // Our server refuses a client that trusts our CA but holds their cert:
    // the server's handshake fails before any application byte is read.
    let their_chain = vec![CertificateDer::from_pem_file(dir_b.join("a.pem")).unwrap()];
    let their_key = PrivateKeyDer::from_pem_file(dir_b.join("a.key")).unwrap();
    let impostor = client_builder(roots_of(&dir_a))
        .with_client_auth_cert(their_chain, their_key)
        .unwrap();
    let (server, client) = exchange(ours.server, Arc::new(impostor)).await;
    assert!(server.is_err(), "server accepted a foreign client");
    assert!(client.is_err(), "client got an answer");
}

#[tokio::test]
async fn a_client_without_a_certificate_is_refused() {
    let (_tmp, dir) = cluster(&["a"]);
    let node = Identity::load(&dir, "a").unwrap();
    let anonymous = client_builder(roots_of(&dir)).with_no_client_auth();
    let (server, client) = exchange(node.server, Arc::new(anonymous)).await;
    assert!(
        server.is_err(),
        "server accepted a client without a certificate"
    );
    assert!(client.is_err());
}

#[test]
fn an_expired_certificate_is_named_expired() {
    let (_tmp, dir) = cluster(&["a"]);
    let now = OffsetDateTime::now_utc();
    issue_with_validity(
        &dir,
        "old",
        now - time::Duration::days(30),
        now - time::Duration::days(1),
    )
    .unwrap();
    let (err, text) = load_err(&dir, "old");
    assert!(matches!(err, TlsError::Expired { .. }));
    assert!(text.contains("expired"));
    assert!(text.contains(&dir.join("old.pem").display().to_string()));

    issue_with_validity(
        &dir,
        "future",
        now + time::Duration::days(1),
        now + time::Duration::days(9),
    )
    .unwrap();
    let (err, text) = load_err(&dir, "future");
    assert!(matches!(err, TlsError::NotYetValid { .. }));
    assert!(text.contains("future.pem"));

    let inverted = issue_with_validity(&dir, "x", now, now - time::Duration::days(1));
    assert!(matches!(inverted, Err(TlsError::BadValidity { .. })));
    assert!(matches!(
        issue(&dir, "x", 0),
        Err(TlsError::BadValidity { .. })
    ));
}

#[test]
fn a_missing_file_is_named_with_the_command_that_makes_it() {
    let (_tmp, dir) = cluster(&["a"]);
    let (err, text) = load_err(&dir, "nobody");
    assert!(matches!(err, TlsError::Missing { .. }));
    assert!(text.contains(&dir.join("nobody.pem").display().to_string()));
    assert!(text.contains("coopcache cluster issue nobody"));

    std::fs::remove_file(dir.join("a.key")).unwrap();
    let (_, text) = load_err(&dir, "a");
    assert!(text.contains(&dir.join("a.key").display().to_string()));

    let empty = tempfile::tempdir().unwrap();
    assert!(!has_cluster(empty.path()));
    let (_, text) = load_err(empty.path(), "a");
    assert!(text.contains(&empty.path().join("ca.pem").display().to_string()));
    assert!(text.contains("coopcache cluster init --dir"));
    let err = issue(empty.path(), "a", DAYS).unwrap_err().to_string();
    assert!(
        err.contains("ca.pem") && err.contains("cluster init"),
        "{err}"
    );
}

#[test]
fn init_refuses_to_overwrite_a_cluster() {
    let (_tmp, dir) = cluster(&["a"]);
    let ca_before = std::fs::read(dir.join("ca.pem")).unwrap();
    let a_before = std::fs::read(dir.join("a.pem")).unwrap();
    let err = init_cluster(&dir, &names(&["a", "b"]), DAYS).unwrap_err();
    println!("{err}");
    assert!(matches!(err, TlsError::CaExists { .. }));
    assert!(
        err.to_string()
            .contains(&dir.join("ca.key").display().to_string())
    );
    assert_eq!(std::fs::read(dir.join("ca.pem")).unwrap(), ca_before);
    assert_eq!(std::fs::read(dir.join("a.pem")).unwrap(), a_before);
    assert!(!dir.join("b.pem").exists());

    // A node's directory (ca.pem without ca.key) is not overwritten either.
    std::fs::remove_file(dir.join("ca.key")).unwrap();
    let err = init_cluster(&dir, &[], DAYS).unwrap_err();
    assert!(err.to_string().contains("ca.pem"), "{err}");
    assert_eq!(std::fs::read(dir.join("ca.pem")).unwrap(), ca_before);
}

#[test]
fn bad_names_are_refused_before_anything_is_written() {
    let long = "x".repeat(65);
    for bad in [
        "",
        "a/b",
        "../up",
        ".hidden",
        "ca",
        "with space",
        "é",
        "a\0b",
        long.as_str(),
    ] {
        let err = check_name(bad).unwrap_err();
        assert!(matches!(err, TlsError::BadName { .. }), "{bad:?}");
        assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
    }
    for good in [
        "a",
        "node-1",
        "N_2.rack3",
        "x".repeat(64).as_str(),
        "10.0.0.1",
    ] {
        check_name(good).unwrap();
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("keys");
    let err = init_cluster(&dir, &names(&["ok", "not/ok"]), DAYS).unwrap_err();
    assert!(err.to_string().contains("\"not/ok\""), "{err}");
    assert!(!dir.exists());

    let (_tmp, dir) = cluster(&["a"]);
    assert!(matches!(
        issue(&dir, "../a", DAYS),
        Err(TlsError::BadName { .. })
    ));
    assert!(matches!(
        Identity::load(&dir, "ca"),
        Err(TlsError::BadName { .. })
    ));
}

#[test]
fn a_certificate_of_another_cluster_is_not_signed_by_this_ca() {
    let (_tmp_a, dir_a) = cluster(&["a"]);
    let (_tmp_b, dir_b) = cluster(&["b"]);
    for ext in ["pem", "key"] {
        std::fs::copy(
            dir_b.join(format!("b.{ext}")),
            dir_a.join(format!("b.{ext}")),
        )
        .unwrap();
    }
    let (err, text) = load_err(&dir_a, "b");
    assert!(matches!(err, TlsError::NotSignedByCa { .. }));
    assert!(text.contains("b.pem") && text.contains("ca.pem"));
}

#[test]
fn a_key_that_does_not_match_is_named() {
    let (_tmp, dir) = cluster(&["a", "b"]);
    std::fs::copy(dir.join("b.key"), dir.join("a.key")).unwrap();
    let (err, text) = load_err(&dir, "a");
    assert!(matches!(err, TlsError::KeyMismatch { .. }));
    assert!(text.contains("a.key") && text.contains("a.pem"));
}

#[test]
fn files_that_are_not_pem_or_renamed_are_refused() {
    let (_tmp, dir) = cluster(&["a", "b"]);
    std::fs::write(dir.join("a.pem"), "hello").unwrap();
    let (err, text) = load_err(&dir, "a");
    assert!(matches!(err, TlsError::NotPem { .. }));
    assert!(text.contains("a.pem"));

    std::fs::write(dir.join("b.key"), "-----BEGIN PRIVATE KEY-----\n!!\n").unwrap();
    let (err, _) = load_err(&dir, "b");
    assert!(matches!(err, TlsError::NotPem { .. }));

    issue(&dir, "b", DAYS).unwrap();
    for ext in ["pem", "key"] {
        std::fs::copy(dir.join(format!("b.{ext}")), dir.join(format!("c.{ext}"))).unwrap();
    }
    let (err, text) = load_err(&dir, "c");
    assert!(matches!(err, TlsError::BadCert { .. }));
    assert!(text.contains("issued to node b"));
}

#[test]
fn peer_name_of_nothing_is_none() {
    assert_eq!(peer_name(&[]), None);
    assert_eq!(peer_name(&[CertificateDer::from(vec![1, 2, 3])]), None);
    assert_eq!(tls::SERVER_NAME, "coopcache.cluster");
}
