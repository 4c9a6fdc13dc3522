//! The joiner's side: TLS pinned to the token's CA fingerprint, the
//! request, and the checked certificate written into the data directory.

use super::JoinError;
use super::token::{JoinToken, hex};
use super::wire::{Answer, Denial, Request, read_message, write_message};
use crate::tls::{self, CA_CERT_FILE, JOIN_ALPN, SERVER_NAME};
use base64::Engine;
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpStream;

/// Time allowed to connect and complete the TLS handshake, and again for
/// the answer.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Trusts a server whose chain ends in a CA certificate with the pinned
/// SHA-256 and whose node certificate that CA signed for
/// [`SERVER_NAME`]. No system roots. Remembers a mismatching fingerprint,
/// so the joiner can say what it saw.
#[derive(Debug)]
struct PinnedCa {
    fingerprint: [u8; 32],
    provider: Arc<CryptoProvider>,
    mismatch: Mutex<Option<Option<[u8; 32]>>>,
}

impl PinnedCa {
    fn refuse(&self, found: Option<[u8; 32]>) -> rustls::Error {
        if let Ok(mut m) = self.mismatch.lock() {
            *m = Some(found);
        }
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)
    }
}

impl ServerCertVerifier for PinnedCa {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some((ca, between)) = intermediates.split_last() else {
            return Err(self.refuse(None));
        };
        let found: [u8; 32] = Sha256::digest(ca.as_ref()).into();
        if found != self.fingerprint {
            return Err(self.refuse(Some(found)));
        }
        let mut roots = RootCertStore::empty();
        roots.add(ca.clone().into_owned())?;
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), self.provider.clone())
            .build()
            .map_err(|e| rustls::Error::General(e.to_string()))?
            .verify_server_cert(end_entity, between, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Obtains node `name`'s certificate from the first of `addresses` that
/// issues one, with `token`, and writes `NAME.key` (0600), `NAME.pem` and
/// `ca.pem` into `dir` (created 0700). Returns the address that issued it.
///
/// The key pair is made here and never sent. A refusal of the token (used,
/// expired, unknown) or a server of another CA ends the attempt at once;
/// an unreachable address or a member without the CA key passes to the
/// next address.
pub async fn enroll(
    addresses: &[String],
    token: &JoinToken,
    dir: &Path,
    name: &str,
) -> Result<String, JoinError> {
    tls::check_name(name)?;
    check_existing_ca(dir, token)?;
    let key = KeyPair::generate().map_err(|source| tls::TlsError::Generate {
        name: name.to_owned(),
        source,
    })?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    params.distinguished_name = dn;
    let csr = params
        .serialize_request(&key)
        .map_err(|source| tls::TlsError::Generate {
            name: name.to_owned(),
            source,
        })?;
    let request = Request {
        secret: token.secret,
        name: name.to_owned(),
        csr: csr.der().to_vec(),
    };
    let mut last = JoinError::NoAddress;
    for addr in addresses {
        match ask(addr, token, &request).await {
            Ok((cert, ca)) => {
                install(dir, name, &key, cert, ca, token, addr)?;
                return Ok(addr.clone());
            }
            Err(
                e @ (JoinError::Unreachable { .. }
                | JoinError::Refused {
                    denial: Denial::NoCa,
                    ..
                }),
            ) => {
                tracing::info!(%addr, error = %e, "no certificate from this address; trying the next");
                last = e;
            }
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// A data directory that holds a CA already must hold the token's.
fn check_existing_ca(dir: &Path, token: &JoinToken) -> Result<(), JoinError> {
    if !tls::has_cluster(dir) {
        return Ok(());
    }
    let found = tls::ca_fingerprint(dir)?;
    match found == token.fingerprint {
        true => Ok(()),
        false => Err(JoinError::OtherCluster {
            path: dir.join(CA_CERT_FILE),
            expected: hex(&token.fingerprint),
            found: hex(&found),
        }),
    }
}

fn client_config(verifier: Arc<PinnedCa>) -> Result<rustls::ClientConfig, rustls::Error> {
    let mut config = rustls::ClientConfig::builder_with_provider(tls::provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![JOIN_ALPN.to_vec()];
    Ok(config)
}

/// One attempt at `addr`: the certificate and the CA's, or why not.
async fn ask(
    addr: &str,
    token: &JoinToken,
    request: &Request,
) -> Result<(Vec<u8>, Vec<u8>), JoinError> {
    let unreachable = |reason: String| JoinError::Unreachable {
        addr: addr.to_owned(),
        reason,
    };
    let protocol = |reason: String| JoinError::Protocol {
        addr: addr.to_owned(),
        reason,
    };
    let tcp = match tokio::time::timeout(TIMEOUT, TcpStream::connect(addr)).await {
        Ok(Ok(tcp)) => tcp,
        Ok(Err(e)) => return Err(unreachable(e.to_string())),
        Err(_) => return Err(unreachable(format!("no connection within {TIMEOUT:?}"))),
    };
    let verifier = Arc::new(PinnedCa {
        fingerprint: token.fingerprint,
        provider: tls::provider(),
        mismatch: Mutex::new(None),
    });
    let handshake_error = |reason: String| JoinError::Handshake {
        addr: addr.to_owned(),
        reason,
    };
    let config = client_config(verifier.clone()).map_err(|e| handshake_error(e.to_string()))?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let server_name =
        ServerName::try_from(SERVER_NAME).map_err(|e| handshake_error(e.to_string()))?;
    let handshake = tokio::time::timeout(TIMEOUT, connector.connect(server_name, tcp)).await;
    let mut tls = match handshake {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            let mismatch = verifier.mismatch.lock().ok().and_then(|m| *m);
            return Err(match mismatch {
                Some(found) => JoinError::WrongCa {
                    addr: addr.to_owned(),
                    expected: hex(&token.fingerprint),
                    found: found.map(|f| hex(&f)),
                },
                None => handshake_error(e.to_string()),
            });
        }
        Err(_) => return Err(handshake_error(format!("no handshake within {TIMEOUT:?}"))),
    };
    if tls.get_ref().1.alpn_protocol() != Some(JOIN_ALPN) {
        return Err(protocol(
            "it does not serve joins (a coopcache node older than join tokens?)".into(),
        ));
    }
    let exchange = async {
        write_message(&mut tls, &request.encode()).await?;
        read_message(&mut tls).await
    };
    let body = match tokio::time::timeout(TIMEOUT, exchange).await {
        Ok(Ok(body)) => body,
        Ok(Err(e)) => return Err(protocol(e.to_string())),
        Err(_) => return Err(protocol(format!("no answer within {TIMEOUT:?}"))),
    };
    match Answer::decode(&body).map_err(|e| protocol(e.to_string()))? {
        Answer::Issued { cert, ca } => Ok((cert, ca)),
        Answer::Denied(denial) => Err(JoinError::Refused {
            addr: addr.to_owned(),
            denial,
        }),
    }
}

/// Checks what came back (the pinned CA, a chain to it, the name, the
/// key) and only then writes the key, the certificate and the CA.
fn install(
    dir: &Path,
    name: &str,
    key: &KeyPair,
    cert: Vec<u8>,
    ca: Vec<u8>,
    token: &JoinToken,
    addr: &str,
) -> Result<(), JoinError> {
    let found: [u8; 32] = Sha256::digest(&ca).into();
    if found != token.fingerprint {
        // The handshake checked the CA, so this is a confused server.
        return Err(JoinError::Protocol {
            addr: addr.to_owned(),
            reason: format!(
                "it returned a CA certificate with SHA-256 {}, not the token's {}; nothing was written",
                hex(&found),
                hex(&token.fingerprint)
            ),
        });
    }
    let (ca, chain) = (CertificateDer::from(ca), [CertificateDer::from(cert)]);
    let (ca_path, cert_path) = (dir.join(CA_CERT_FILE), dir.join(format!("{name}.pem")));
    let key_path = dir.join(format!("{name}.key"));
    tls::verify_chain(&ca, &ca_path, &chain, &cert_path)?;
    tls::check_issued_to(&chain, name, &cert_path)?;
    let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    tls::key_matches(&chain, &key_der, &key_path, &cert_path)?;
    tls::create_dir(dir)?;
    tls::replace(&key_path, key.serialize_pem().as_bytes(), 0o600)?;
    tls::replace(&cert_path, pem("CERTIFICATE", &chain[0]).as_bytes(), 0o644)?;
    // Last: a directory with ca.pem is a cluster's (`tls::has_cluster`).
    tls::replace(&ca_path, pem("CERTIFICATE", &ca).as_bytes(), 0o644)?;
    Ok(())
}

/// DER as PEM, 64 characters a line.
fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}
