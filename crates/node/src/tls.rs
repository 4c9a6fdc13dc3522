//! The cluster CA, node certificates and mutual TLS between nodes.
//!
//! A cluster's key directory holds:
//!
//! - `ca.pem`, `ca.key`: the cluster CA. `ca.key` is only needed where
//!   certificates are issued; a node needs `ca.pem` and its own pair.
//! - `NAME.pem`, `NAME.key`: node `NAME`'s certificate and private key.
//!
//! Every node certificate carries the DNS name [`SERVER_NAME`], and every
//! client connects with that server name: TLS proves "a member of this
//! cluster", and [`peer_name`] then says which member. A process without a
//! certificate from the cluster CA cannot complete a handshake in either
//! direction.
//!
//! Keys are ECDSA P-256. Only TLS 1.3 is offered. The crypto provider is
//! always `ring`, passed explicitly, so no process-wide default is needed.

use coopcache_core::coop::NodeId;
use std::fs;
use std::io::{self, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::sign::CertifiedKey;
use rustls::{CertificateError, InconsistentKeys, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, DnsName, PrivateKeyDer, ServerName, UnixTime};
use sha2::{Digest, Sha256};
use time::{Duration, OffsetDateTime};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

/// The DNS name every node certificate carries and every client asks for.
pub const SERVER_NAME: &str = "coopcache.cluster";

/// The cluster CA's certificate, in the key directory.
pub const CA_CERT_FILE: &str = "ca.pem";

/// The cluster CA's private key, in the key directory.
pub const CA_KEY_FILE: &str = "ca.key";

/// How long the cluster CA is valid, at least (longer if node certificates
/// are asked to live longer): node certificates are renewed with
/// [`issue`]; renewing the CA means a new cluster.
pub const CA_VALID_DAYS: u32 = 3650;

/// The longest node name, in bytes.
pub const MAX_NAME_LEN: usize = 64;

/// The CA's common name; [`issue`] rebuilds the issuer from it.
const CA_COMMON_NAME: &str = "coopcache cluster CA";

/// Certificates start this long before they are made, so that a node whose
/// clock is a little behind still accepts a freshly issued peer.
const BACKDATE: Duration = Duration::hours(1);

/// What went wrong creating, issuing or loading cluster keys. Nothing is
/// left half-written except where a variant says so.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A node name outside `[A-Za-z0-9._-]{1,64}`, starting with `.`, or the
    /// reserved `ca`. Nothing was written.
    #[error(
        "invalid node name {name:?}: expected 1 to {MAX_NAME_LEN} characters of A-Z a-z 0-9 . _ -, \
         not starting with '.', and not \"ca\""
    )]
    BadName {
        /// The refused name.
        name: String,
    },
    /// A validity period that is empty or inverted. Nothing was written.
    #[error("invalid validity for {name}: {reason}")]
    BadValidity {
        /// The node (or `ca`) the certificate was for.
        name: String,
        /// What is wrong with the period.
        reason: String,
    },
    /// `init_cluster` found an existing CA file and left the directory alone.
    #[error(
        "{} already exists: refusing to overwrite the cluster CA \
         (every node certificate depends on it); move it away to start a new cluster",
        path.display()
    )]
    CaExists {
        /// The existing file.
        path: PathBuf,
    },
    /// A file that should be in the key directory is not.
    #[error("{} does not exist; {hint}", path.display())]
    Missing {
        /// The missing file.
        path: PathBuf,
        /// The command that creates it.
        hint: String,
    },
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A file that is not PEM, or PEM without the expected section.
    #[error("{} is not a PEM {expected}: {reason}", path.display())]
    NotPem {
        /// The file.
        path: PathBuf,
        /// What the file should hold (`CERTIFICATE`, `PRIVATE KEY`).
        expected: &'static str,
        /// What the PEM parser said.
        reason: String,
    },
    /// A certificate that is PEM but not a usable X.509 certificate for a
    /// cluster node (unparseable, wrong name, missing the cluster SAN...).
    #[error("{}: {reason}", path.display())]
    BadCert {
        /// The certificate file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A private key that is PEM but that `ring` cannot use.
    #[error("{}: unusable private key: {reason}", path.display())]
    BadKey {
        /// The key file.
        path: PathBuf,
        /// What `rustls` said.
        reason: String,
    },
    /// A certificate past its end date.
    #[error("{} expired on {not_after} (now {now}); {renew}", path.display())]
    Expired {
        /// The certificate file.
        path: PathBuf,
        /// The certificate's end date.
        not_after: String,
        /// The time of the check.
        now: String,
        /// How to replace the certificate.
        renew: String,
    },
    /// A certificate whose start date is still ahead (or this clock is behind).
    #[error("{} is not valid before {not_before} (now {now}); check this machine's clock", path.display())]
    NotYetValid {
        /// The certificate file.
        path: PathBuf,
        /// The certificate's start date.
        not_before: String,
        /// The time of the check.
        now: String,
    },
    /// A node certificate that the cluster CA did not sign.
    #[error(
        "{} is not signed by the cluster CA in {} ({reason}); \
         it belongs to another cluster or the CA was re-created",
        cert.display(),
        ca.display()
    )]
    NotSignedByCa {
        /// The node certificate file.
        cert: PathBuf,
        /// The CA certificate file.
        ca: PathBuf,
        /// What the verifier said.
        reason: String,
    },
    /// A private key that is not the key of the certificate next to it.
    #[error("{} does not match the certificate {}", key.display(), cert.display())]
    KeyMismatch {
        /// The key file.
        key: PathBuf,
        /// The certificate file.
        cert: PathBuf,
    },
    /// Generating or signing a certificate failed. Files written before the
    /// failure are left in place.
    #[error("generating the certificate for {name}: {source}")]
    Generate {
        /// The node (or `ca`) the certificate was for.
        name: String,
        /// What `rcgen` said.
        source: rcgen::Error,
    },
    /// An id another issued name has: two members would have one
    /// identity. Nothing was signed.
    #[error(
        "cannot issue node {name:?} with id {id}: node {other:?} has it (ids are never shared)"
    )]
    IdTaken {
        /// The refused name.
        name: String,
        /// The issued name with the id.
        other: String,
        /// The id.
        id: NodeId,
    },
    /// A different id for a name issued before. Nothing was signed.
    #[error("node {name:?} was issued with id {id}, not {wanted}: a node's id never changes")]
    IdFixed {
        /// The name.
        name: String,
        /// Its id.
        id: NodeId,
        /// The id asked for.
        wanted: NodeId,
    },
    /// A name this CA never issued (nothing to revoke).
    #[error("node {name:?} was never issued a certificate by this CA")]
    NotIssued {
        /// The name.
        name: String,
    },
    /// A revoked name: never issued again.
    #[error(
        "node {name:?} was revoked (`coopcache cluster revoke`): its name is never issued again"
    )]
    Revoked {
        /// The name.
        name: String,
    },
    /// The register of issued names (`issued-names`) is unreadable or full.
    #[error("{}: {reason}", path.display())]
    BadRegister {
        /// The register.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Building a TLS configuration from loaded keys failed.
    #[error("building the TLS configuration for {name}: {source}")]
    Config {
        /// The node.
        name: String,
        /// What `rustls` said.
        source: rustls::Error,
    },
}

/// Creates a cluster in `dir`: the directory (mode 0700 on Unix), the CA
/// and a certificate for each of `names`, each valid for `valid_days`.
///
/// All names are checked before anything is written. Refuses (naming the
/// file) if `dir` already has `ca.key` or `ca.pem`.
pub fn init_cluster(dir: &Path, names: &[String], valid_days: u32) -> Result<(), TlsError> {
    for name in names {
        check_name(name)?;
    }
    check_days("ca", valid_days)?;
    create_dir(dir)?;
    for file in [CA_KEY_FILE, CA_CERT_FILE] {
        let path = dir.join(file);
        if path.exists() {
            return Err(TlsError::CaExists { path });
        }
    }
    create_ca(dir, CA_VALID_DAYS.max(valid_days))?;
    for name in names {
        issue(dir, name, valid_days)?;
    }
    Ok(())
}

/// Issues (or renews) node `name`'s certificate and key, signed by the CA in
/// `dir`, valid from now for `valid_days` (but never past the CA's end).
///
/// `name` must match `[A-Za-z0-9._-]{1,64}`. `NAME.key` is written with
/// mode 0600; both files are replaced atomically, one after the other.
pub fn issue(dir: &Path, name: &str, valid_days: u32) -> Result<(), TlsError> {
    issue_as(dir, name, None, valid_days)
}

/// Like [`issue`], asking for node id `id` if `name` is new (refused if
/// another name has it, or if `name` was issued with another).
pub fn issue_as(
    dir: &Path,
    name: &str,
    id: Option<NodeId>,
    valid_days: u32,
) -> Result<(), TlsError> {
    check_name(name)?;
    check_days(name, valid_days)?;
    let ca = CaSigner::load(dir)?;
    let now = OffsetDateTime::now_utc();
    let not_after = (now + Duration::days(i64::from(valid_days))).min(ca.not_after);
    let id = crate::issued::assign(dir, name, id)?;
    issue_signed(dir, name, id, &ca, now - BACKDATE, not_after)
}

/// Like [`issue`], with an explicit validity period, which may lie in the
/// past or the future (for renewal schedules and tests of expiry).
pub fn issue_with_validity(
    dir: &Path,
    name: &str,
    not_before: OffsetDateTime,
    not_after: OffsetDateTime,
) -> Result<(), TlsError> {
    check_name(name)?;
    let ca = CaSigner::load(dir)?;
    let id = crate::issued::assign(dir, name, None)?;
    issue_signed(dir, name, id, &ca, not_before, not_after)
}

/// Whether `dir` holds a cluster: its CA certificate `ca.pem` exists.
pub fn has_cluster(dir: &Path) -> bool {
    dir.join(CA_CERT_FILE).is_file()
}

/// Checks a node name: `[A-Za-z0-9._-]{1,64}`, not starting with `.` (no
/// hidden files) and not `ca` (the CA's files).
pub fn check_name(name: &str) -> Result<(), TlsError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.chars().all(allowed)
        && !name.starts_with('.')
        && name != "ca";
    match ok {
        true => Ok(()),
        false => Err(TlsError::BadName {
            name: name.to_owned(),
        }),
    }
}

/// The URI prefix of the subject alternative name that carries a node's
/// id in its certificate: `urn:coopcache:node:7`.
pub const ID_URI: &str = "urn:coopcache:node:";

/// The id of a node whose certificate carries none (issued before ids were
/// in certificates): the first four bytes (little-endian) of the BLAKE3
/// hash of its name, which every peer recomputes from the same signed name
/// (the id such nodes took by default).
pub fn node_id(name: &str) -> NodeId {
    let h = blake3::hash(name.as_bytes());
    let b = h.as_bytes();
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// The node name and id in a verified peer's certificate chain: the name
/// as [`peer_name`] finds it, the id from the [`ID_URI`] alternative
/// name (or [`node_id`] of the name in a certificate without one). `None`
/// if there is no name, or an id URI that is not a `u32`.
pub fn peer_identity(certs: &[CertificateDer<'_>]) -> Option<(String, NodeId)> {
    let (_, cert) = x509_parser::parse_x509_certificate(certs.first()?).ok()?;
    let name = name_of(&cert)?;
    let uri = match cert.subject_alternative_name() {
        Ok(Some(san)) => san.value.general_names.iter().find_map(|n| match n {
            GeneralName::URI(u) => u.strip_prefix(ID_URI),
            _ => None,
        }),
        Ok(None) => None,
        Err(_) => return None,
    };
    let id = match uri {
        Some(digits) if digits.bytes().all(|b| b.is_ascii_digit()) => digits.parse().ok()?,
        Some(_) => return None,
        None => node_id(&name),
    };
    Some((name, id))
}

/// The id in certificate file `path` if it is node `name`'s.
pub(crate) fn cert_file_id(path: &Path, name: &str) -> Option<NodeId> {
    let certs = read_certs(path, "").ok()?;
    peer_identity(&certs).and_then(|(n, id)| (n == name).then_some(id))
}

/// The node name in a verified peer's certificate chain (as returned by
/// `peer_certificates()`): the end-entity certificate's common name, or
/// else its DNS name that is not [`SERVER_NAME`]. `None` if the chain is
/// empty or unparseable or names no node.
pub fn peer_name(certs: &[CertificateDer<'_>]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(certs.first()?).ok()?;
    name_of(&cert)
}

/// [`peer_name`] of a parsed certificate.
fn name_of(cert: &X509Certificate<'_>) -> Option<String> {
    if let Some(cn) = cert.subject().iter_common_name().next() {
        return cn.as_str().ok().map(str::to_owned);
    }
    let san = cert.subject_alternative_name().ok()??;
    san.value.general_names.iter().find_map(|n| match n {
        GeneralName::DNSName(d) if *d != SERVER_NAME => Some((*d).to_owned()),
        _ => None,
    })
}

/// A node's TLS identity: its name and the configurations for accepting
/// and making mutual-TLS connections within its cluster.
#[derive(Debug, Clone)]
pub struct Identity {
    /// The node's name (its certificate's common name).
    pub name: String,
    /// The node's id, from its certificate ([`peer_identity`]): every
    /// member reads it from the certificate a link presents, so no frame
    /// can claim it.
    pub id: NodeId,
    /// Accepts only clients with a certificate from the cluster CA.
    pub server: Arc<rustls::ServerConfig>,
    /// Trusts only the cluster CA and presents the node's certificate;
    /// connect with server name [`SERVER_NAME`].
    pub client: Arc<rustls::ClientConfig>,
    /// SHA-256 of the cluster CA's certificate (DER): names the cluster
    /// in discovery announcements without proving anything, and is the
    /// fingerprint a join token pins.
    pub cluster: [u8; 32],
    /// Accepts joiners (no client certificate, only the join protocol's
    /// ALPN): presents the node's certificate followed by the CA's, so a
    /// joiner holding only the CA's fingerprint can check the chain.
    pub join: Arc<rustls::ServerConfig>,
    /// The key directory, if it holds `ca.key`: this node then signs the
    /// certificates of joiners with valid tokens (`crate::join`).
    pub signer: Option<PathBuf>,
    /// The cluster CA's certificate, which signs revocation lists.
    pub ca: CertificateDer<'static>,
    /// The key directory the identity was loaded from (where a revocation
    /// list is kept).
    pub dir: PathBuf,
}

impl Identity {
    /// Loads node `name`'s identity from `dir` (`ca.pem`, `NAME.pem`,
    /// `NAME.key`), checking that the files exist and are PEM, that both
    /// certificates are valid now, that the CA signed the node certificate
    /// for `name`, and that the key matches it.
    pub fn load(dir: &Path, name: &str) -> Result<Identity, TlsError> {
        check_name(name)?;
        let now = OffsetDateTime::now_utc();
        let ca_path = dir.join(CA_CERT_FILE);
        let ca = read_certs(&ca_path, &init_hint(dir))?.swap_remove(0);
        check_dates(&ca_path, &ca, now, &new_cluster_hint(dir))?;
        let cert_path = dir.join(format!("{name}.pem"));
        let chain = read_certs(&cert_path, &issue_hint(dir, name))?;
        check_dates(&cert_path, &chain[0], now, &issue_hint(dir, name))?;
        verify_chain(&ca, &ca_path, &chain, &cert_path)?;
        check_issued_to(&chain, name, &cert_path)?;
        let (_, id) = peer_identity(&chain).ok_or_else(|| TlsError::BadCert {
            path: cert_path.clone(),
            reason: format!("its node id ({ID_URI}...) is not a number"),
        })?;
        let key_path = dir.join(format!("{name}.key"));
        let key = read_key(&key_path, &issue_hint(dir, name))?;
        check_key(&chain, &key, &key_path, &cert_path)?;
        let config_error = |source| TlsError::Config {
            name: name.to_owned(),
            source,
        };
        let cluster: [u8; 32] = Sha256::digest(ca.as_ref()).into();
        let roots = Arc::new(root_store(&ca, &ca_path)?);
        let server = server_config(roots.clone(), chain.clone(), key.clone_key());
        let mut join_chain = chain.clone();
        join_chain.push(ca.clone());
        let join = join_server_config(join_chain, key.clone_key());
        let client = client_config(roots, chain, key);
        Ok(Identity {
            name: name.to_owned(),
            id,
            server: Arc::new(server.map_err(config_error)?),
            client: Arc::new(client.map_err(config_error)?),
            cluster,
            join: Arc::new(join.map_err(config_error)?),
            signer: dir.join(CA_KEY_FILE).is_file().then(|| dir.to_owned()),
            ca,
            dir: dir.to_owned(),
        })
    }
}

/// *ring*'s provider, with AES-128-GCM preferred for the links' records:
/// four fewer rounds than AES-256 (about a quarter of the cost of every
/// block a peer sends, measured with `coopcache bench stream`), and a
/// 128-bit key is ample for traffic keys renewed with every connection.
/// The other suites stay, in *ring*'s order, for any peer that lacks it.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    use rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256;
    let mut p = rustls::crypto::ring::default_provider();
    p.cipher_suites
        .retain(|s| s.suite() != TLS13_AES_128_GCM_SHA256.suite());
    p.cipher_suites.insert(0, TLS13_AES_128_GCM_SHA256);
    Arc::new(p)
}

fn server_config(
    roots: Arc<RootCertStore>,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<rustls::ServerConfig, rustls::Error> {
    let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider())
        .build()
        .map_err(|e| rustls::Error::General(e.to_string()))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)?;
    // The link's protocol version is agreed here (`crate::version`).
    config.alpn_protocols = crate::version::alpn_protocols();
    Ok(config)
}

/// The join protocol's server side: no client certificate (a joiner has
/// none yet), only TLS 1.3, only the join ALPN.
fn join_server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<rustls::ServerConfig, rustls::Error> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![JOIN_ALPN.to_vec()];
    Ok(config)
}

/// The ALPN protocol a joiner asks for: a member's listener hands such a
/// connection to the join protocol, every other one to mutual TLS.
pub const JOIN_ALPN: &[u8] = b"coopcache-join/1";

fn client_config(
    roots: Arc<RootCertStore>,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<rustls::ClientConfig, rustls::Error> {
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)?;
    config.alpn_protocols = crate::version::alpn_protocols();
    Ok(config)
}

pub(crate) fn root_store(
    ca: &CertificateDer<'static>,
    ca_path: &Path,
) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    roots.add(ca.clone()).map_err(|e| TlsError::BadCert {
        path: ca_path.to_owned(),
        reason: format!("not usable as a trust anchor: {e}"),
    })?;
    Ok(roots)
}

/// Checks that `chain` leads to `ca`, as both a TLS server and a TLS client
/// would check it (signature, `SERVER_NAME`, both key purposes).
pub(crate) fn verify_chain(
    ca: &CertificateDer<'static>,
    ca_path: &Path,
    chain: &[CertificateDer<'static>],
    cert_path: &Path,
) -> Result<(), TlsError> {
    let roots = Arc::new(root_store(ca, ca_path)?);
    let as_error = |e: rustls::Error| chain_error(e, ca_path, cert_path);
    let server_name = ServerName::try_from(SERVER_NAME)
        .map_err(|e| as_error(rustls::Error::General(e.to_string())))?;
    let now = UnixTime::now();
    let (end_entity, intermediates) = (&chain[0], &chain[1..]);
    let as_server = WebPkiServerVerifier::builder_with_provider(roots.clone(), provider())
        .build()
        .map_err(|e| as_error(rustls::Error::General(e.to_string())))?;
    as_server
        .verify_server_cert(end_entity, intermediates, &server_name, &[], now)
        .map_err(as_error)?;
    let as_client = WebPkiClientVerifier::builder_with_provider(roots, provider())
        .build()
        .map_err(|e| as_error(rustls::Error::General(e.to_string())))?;
    as_client
        .verify_client_cert(end_entity, intermediates, now)
        .map_err(as_error)?;
    Ok(())
}

fn chain_error(e: rustls::Error, ca_path: &Path, cert_path: &Path) -> TlsError {
    use CertificateError::{BadSignature, UnknownIssuer};
    match e {
        rustls::Error::InvalidCertificate(UnknownIssuer | BadSignature) => {
            TlsError::NotSignedByCa {
                cert: cert_path.to_owned(),
                ca: ca_path.to_owned(),
                reason: e.to_string(),
            }
        }
        e => TlsError::BadCert {
            path: cert_path.to_owned(),
            reason: format!("not a valid cluster node certificate: {e}"),
        },
    }
}

/// Refuses a certificate file renamed from another node's.
pub(crate) fn check_issued_to(
    chain: &[CertificateDer<'static>],
    name: &str,
    cert_path: &Path,
) -> Result<(), TlsError> {
    match peer_name(chain) {
        Some(found) if found == name => Ok(()),
        found => Err(TlsError::BadCert {
            path: cert_path.to_owned(),
            reason: format!(
                "issued to node {}, not {name}",
                found.as_deref().unwrap_or("(none)")
            ),
        }),
    }
}

fn check_key(
    chain: &[CertificateDer<'static>],
    key: &PrivateKeyDer<'static>,
    key_path: &Path,
    cert_path: &Path,
) -> Result<(), TlsError> {
    match CertifiedKey::from_der(chain.to_vec(), key.clone_key(), &provider()) {
        Ok(_) => Ok(()),
        Err(rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch)) => {
            Err(TlsError::KeyMismatch {
                key: key_path.to_owned(),
                cert: cert_path.to_owned(),
            })
        }
        Err(e) => Err(TlsError::BadKey {
            path: key_path.to_owned(),
            reason: e.to_string(),
        }),
    }
}

fn parse_x509<'a>(path: &Path, der: &'a [u8]) -> Result<X509Certificate<'a>, TlsError> {
    x509_parser::parse_x509_certificate(der)
        .map(|(_, cert)| cert)
        .map_err(|e| TlsError::BadCert {
            path: path.to_owned(),
            reason: format!("not an X.509 certificate: {e}"),
        })
}

/// The dates are checked here, before the chain, so that an expired
/// certificate is reported as expired rather than as untrusted.
fn check_dates(
    path: &Path,
    der: &CertificateDer<'_>,
    now: OffsetDateTime,
    renew: &str,
) -> Result<(), TlsError> {
    let cert = parse_x509(path, der)?;
    let validity = cert.validity();
    let now_text = x509_parser::time::ASN1Time::from(now).to_string();
    if now > validity.not_after.to_datetime() {
        return Err(TlsError::Expired {
            path: path.to_owned(),
            not_after: validity.not_after.to_string(),
            now: now_text,
            renew: renew.to_owned(),
        });
    }
    if now < validity.not_before.to_datetime() {
        return Err(TlsError::NotYetValid {
            path: path.to_owned(),
            not_before: validity.not_before.to_string(),
            now: now_text,
        });
    }
    Ok(())
}

fn init_hint(dir: &Path) -> String {
    format!(
        "create the cluster with `coopcache cluster init --dir {}`",
        dir.display()
    )
}

fn new_cluster_hint(dir: &Path) -> String {
    format!(
        "a cluster CA cannot be renewed: move {} away and create a new cluster \
         with `coopcache cluster init --dir {}`",
        dir.display(),
        dir.display()
    )
}

fn issue_hint(dir: &Path, name: &str) -> String {
    format!(
        "issue it with `coopcache cluster issue {name} --dir {}` where ca.key is, \
         and copy {name}.pem and {name}.key here",
        dir.display()
    )
}

fn read(path: &Path, hint: &str) -> Result<Vec<u8>, TlsError> {
    fs::read(path).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => TlsError::Missing {
            path: path.to_owned(),
            hint: hint.to_owned(),
        },
        _ => TlsError::Io {
            path: path.to_owned(),
            source,
        },
    })
}

/// The certificates of a PEM file, at least one.
fn read_certs(path: &Path, hint: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(path, hint)?;
    let not_pem = |reason: String| TlsError::NotPem {
        path: path.to_owned(),
        expected: "CERTIFICATE",
        reason,
    };
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| not_pem(pem_reason(e, "CERTIFICATE")))?;
    match certs.is_empty() {
        true => Err(not_pem("no CERTIFICATE section".to_owned())),
        false => Ok(certs),
    }
}

fn read_key(path: &Path, hint: &str) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read(path, hint)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| TlsError::NotPem {
        path: path.to_owned(),
        expected: "PRIVATE KEY",
        reason: pem_reason(e, "PRIVATE KEY"),
    })
}

/// The PEM parser's error in words (its own `Display` prints lines as bytes).
fn pem_reason(e: rustls_pki_types::pem::Error, expected: &str) -> String {
    use rustls_pki_types::pem::Error;
    match e {
        Error::MissingSectionEnd { end_marker } => {
            format!("no {} line", String::from_utf8_lossy(&end_marker))
        }
        Error::IllegalSectionStart { line } => {
            format!("bad BEGIN line {:?}", String::from_utf8_lossy(&line))
        }
        Error::NoItemsFound => format!("no {expected} section"),
        e => e.to_string(),
    }
}

fn check_days(name: &str, valid_days: u32) -> Result<(), TlsError> {
    match valid_days {
        0 => Err(TlsError::BadValidity {
            name: name.to_owned(),
            reason: "valid_days must be at least 1".to_owned(),
        }),
        _ => Ok(()),
    }
}

pub(crate) fn create_dir(dir: &Path) -> Result<(), TlsError> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|source| TlsError::Io {
        path: dir.to_owned(),
        source,
    })
}

fn generate_error(name: &str) -> impl FnOnce(rcgen::Error) -> TlsError + '_ {
    move |source| TlsError::Generate {
        name: name.to_owned(),
        source,
    }
}

fn ca_params(not_before: OffsetDateTime, not_after: OffsetDateTime) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = common_name_dn(CA_COMMON_NAME);
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.not_before = not_before;
    params.not_after = not_after;
    params
}

fn common_name_dn(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    name
}

/// Writes `ca.key` (refusing to replace one) and then `ca.pem`.
fn create_ca(dir: &Path, valid_days: u32) -> Result<(), TlsError> {
    let now = OffsetDateTime::now_utc();
    let params = ca_params(now - BACKDATE, now + Duration::days(i64::from(valid_days)));
    let key = KeyPair::generate().map_err(generate_error("ca"))?;
    let cert = params.self_signed(&key).map_err(generate_error("ca"))?;
    write_ca_file(
        &dir.join(CA_KEY_FILE),
        key.serialize_pem().as_bytes(),
        0o600,
    )?;
    write_ca_file(&dir.join(CA_CERT_FILE), cert.pem().as_bytes(), 0o644)
}

/// The CA loaded from a key directory, ready to sign.
pub(crate) struct CaSigner {
    pub(crate) cert: CertificateDer<'static>,
    cert_path: PathBuf,
    pub(crate) issuer: Issuer<'static, KeyPair>,
    pub(crate) not_after: OffsetDateTime,
}

/// The CA of `dir`, to sign with (revocation lists, `crate::revocation`).
pub(crate) fn ca_signer(dir: &Path) -> Result<CaSigner, TlsError> {
    CaSigner::load(dir)
}

/// The first certificate of PEM `bytes`, if any.
pub(crate) fn first_cert(bytes: &[u8]) -> Option<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(bytes).next()?.ok()
}

impl CaSigner {
    /// The issuer is rebuilt from the CA's common name and key; a CA whose
    /// subject has more than a common name is caught by the check of every
    /// issued certificate against `ca.pem`.
    fn load(dir: &Path) -> Result<CaSigner, TlsError> {
        let cert_path = dir.join(CA_CERT_FILE);
        let cert = read_certs(&cert_path, &init_hint(dir))?.swap_remove(0);
        check_dates(
            &cert_path,
            &cert,
            OffsetDateTime::now_utc(),
            &new_cluster_hint(dir),
        )?;
        let key_path = dir.join(CA_KEY_FILE);
        let key_pem =
            String::from_utf8(read(&key_path, &init_hint(dir))?).map_err(|e| TlsError::NotPem {
                path: key_path.clone(),
                expected: "PRIVATE KEY",
                reason: e.to_string(),
            })?;
        let key = KeyPair::from_pem(&key_pem).map_err(|e| TlsError::NotPem {
            path: key_path.clone(),
            expected: "PRIVATE KEY",
            reason: e.to_string(),
        })?;
        let parsed = parse_x509(&cert_path, &cert)?;
        let common_name = parsed
            .subject()
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .ok_or_else(|| TlsError::BadCert {
                path: cert_path.clone(),
                reason: "the CA certificate has no common name".to_owned(),
            })?;
        let validity = parsed.validity();
        let not_after = validity.not_after.to_datetime();
        let mut params = ca_params(validity.not_before.to_datetime(), not_after);
        params.distinguished_name = common_name_dn(common_name);
        Ok(CaSigner {
            issuer: Issuer::new(params, key),
            not_after,
            cert_path,
            cert,
        })
    }
}

fn node_params(
    name: &str,
    id: NodeId,
    not_before: OffsetDateTime,
    not_after: OffsetDateTime,
) -> Result<CertificateParams, TlsError> {
    if not_before >= not_after {
        return Err(TlsError::BadValidity {
            name: name.to_owned(),
            reason: format!("not_before {not_before} is not before not_after {not_after}"),
        });
    }
    let mut params = CertificateParams::default();
    params.distinguished_name = common_name_dn(name);
    params.subject_alt_names = vec![dns_san(SERVER_NAME)?];
    let is_dns = DnsName::try_from(name).is_ok() && name.parse::<IpAddr>().is_err();
    if is_dns && name != SERVER_NAME {
        params.subject_alt_names.push(dns_san(name)?);
    }
    let uri = format!("{ID_URI}{id}")
        .try_into()
        .map_err(generate_error(name))?;
    params.subject_alt_names.push(SanType::URI(uri));
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    params.use_authority_key_identifier_extension = true;
    params.not_before = not_before;
    params.not_after = not_after;
    Ok(params)
}

fn dns_san(name: &str) -> Result<SanType, TlsError> {
    name.try_into()
        .map(SanType::DnsName)
        .map_err(generate_error(name))
}

/// Signs a new key for `name`, checks the result against `ca.pem` and only
/// then replaces `NAME.key` and `NAME.pem`.
fn issue_signed(
    dir: &Path,
    name: &str,
    id: NodeId,
    ca: &CaSigner,
    not_before: OffsetDateTime,
    not_after: OffsetDateTime,
) -> Result<(), TlsError> {
    let params = node_params(name, id, not_before, not_after)?;
    let key = KeyPair::generate().map_err(generate_error(name))?;
    let cert = params
        .signed_by(&key, &ca.issuer)
        .map_err(generate_error(name))?;
    let cert_path = dir.join(format!("{name}.pem"));
    let chain = [cert.der().clone()];
    // A certificate for another period cannot be verified now; it is built
    // the same way, so checking the current ones is enough.
    if (not_before..=not_after).contains(&OffsetDateTime::now_utc()) {
        verify_chain(&ca.cert, &ca.cert_path, &chain, &cert_path)?;
    }
    crate::revocation::record_serial(dir, name, cert.der())?;
    replace(
        &dir.join(format!("{name}.key")),
        key.serialize_pem().as_bytes(),
        0o600,
    )?;
    replace(&cert_path, cert.pem().as_bytes(), 0o644)
}

/// Creates `path` with `mode` (on Unix), failing if it exists.
fn create_new(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Creates one of the CA's files, refusing to replace one.
fn write_ca_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), TlsError> {
    create_new(path, bytes, mode).map_err(|source| match source.kind() {
        io::ErrorKind::AlreadyExists => TlsError::CaExists {
            path: path.to_owned(),
        },
        _ => TlsError::Io {
            path: path.to_owned(),
            source,
        },
    })
}

/// Replaces `path` atomically: writes a fresh temporary file beside it
/// (created with `mode`, so a key is never readable by others), then renames.
pub(crate) fn replace(path: &Path, bytes: &[u8], mode: u32) -> Result<(), TlsError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    match fs::remove_file(&tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            return Err(TlsError::Io {
                path: tmp,
                source: e,
            });
        }
        _ => {}
    }
    create_new(&tmp, bytes, mode).map_err(|source| TlsError::Io {
        path: tmp.clone(),
        source,
    })?;
    fs::rename(&tmp, path).map_err(|source| TlsError::Io {
        path: path.to_owned(),
        source,
    })
}

/// A joiner's certificate signing request whose signature checked out
/// (the joiner holds the private key of the public key it carries).
pub struct NodeRequest(rcgen::CertificateSigningRequestParams);

impl std::fmt::Debug for NodeRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NodeRequest")
    }
}

/// Parses a certificate signing request (DER) and checks its signature.
/// Only its public key is used: the name and every extension of the
/// certificate are the CA's choice ([`sign_request`]).
pub fn parse_request(der: &[u8]) -> Result<NodeRequest, rcgen::Error> {
    let der = rustls_pki_types::CertificateSigningRequestDer::from(der);
    rcgen::CertificateSigningRequestParams::from_der(&der).map(NodeRequest)
}

/// Signs `request`'s public key as node `name`'s certificate with the CA
/// in `dir`, valid from now for `valid_days` (never past the CA's end),
/// checked against `ca.pem`; returns it and the CA's certificate. The CA
/// key is read here and never leaves this function.
pub fn sign_request(
    dir: &Path,
    name: &str,
    request: NodeRequest,
    valid_days: u32,
) -> Result<(CertificateDer<'static>, CertificateDer<'static>), TlsError> {
    check_name(name)?;
    check_days(name, valid_days)?;
    let ca = CaSigner::load(dir)?;
    let now = OffsetDateTime::now_utc();
    let not_after = (now + Duration::days(i64::from(valid_days))).min(ca.not_after);
    let id = crate::issued::assign(dir, name, None)?;
    let mut request = request.0;
    request.params = node_params(name, id, now - BACKDATE, not_after)?;
    let cert = request
        .signed_by(&ca.issuer)
        .map_err(generate_error(name))?;
    let chain = [cert.der().clone()];
    let cert_path = dir.join(format!("{name}.pem"));
    verify_chain(&ca.cert, &ca.cert_path, &chain, &cert_path)?;
    let [cert] = chain;
    crate::revocation::record_serial(dir, name, &cert)?;
    Ok((cert, ca.cert))
}

/// The SHA-256 of the CA certificate in `dir` (its DER): the fingerprint
/// a join token carries.
pub fn ca_fingerprint(dir: &Path) -> Result<[u8; 32], TlsError> {
    let ca = read_certs(&dir.join(CA_CERT_FILE), &init_hint(dir))?.swap_remove(0);
    Ok(Sha256::digest(ca.as_ref()).into())
}

/// Checks that `key` (PEM) is the key of `chain`'s first certificate.
pub(crate) fn key_matches(
    chain: &[CertificateDer<'static>],
    key: &PrivateKeyDer<'static>,
    key_path: &Path,
    cert_path: &Path,
) -> Result<(), TlsError> {
    check_key(chain, key, key_path, cert_path)
}
