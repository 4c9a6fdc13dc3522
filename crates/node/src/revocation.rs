//! Revoked certificates: `coopcache cluster revoke NAME` on the CA's
//! directory signs a certificate revocation list (X.509 CRL, RFC 5280)
//! naming every certificate the CA issued to `NAME`, and the cluster
//! honours it within a probe period.
//!
//! The CRL is the CA's signed word, so it needs no trusted carrier: the
//! node holding `ca.key` reads `revoked.crl` when it changes (checked every
//! [`POLL`]) and sends it to every member in a `Revoked` frame; a member
//! takes a CRL only if the cluster CA signed it and its number is above
//! the one it holds, keeps it in its key directory (so a restart honours
//! it), passes it on to its members and to every member that links to it
//! later, and closes and refuses every link whose certificate it names.
//! A member that was away gets it from the first member it links to.
//!
//! The serial numbers of the certificates issued to each name are kept
//! in `issued-serials` beside `ca.key`, one `NAME HEX` line per
//! certificate; a revoked name is never issued again.

use crate::join::token::hex;
use crate::tls::{self, TlsError};
use bytes::Bytes;
use rcgen::{CertificateRevocationListParams, KeyIdMethod, RevokedCertParams, SerialNumber};
use rustls_pki_types::CertificateDer;
use std::collections::HashSet;
use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;
use time::OffsetDateTime;

/// The CRL's file, in a key directory.
pub const CRL_FILE: &str = "revoked.crl";

/// The serials of issued certificates, beside `ca.key`.
pub const SERIALS_FILE: &str = "issued-serials";

/// How often the CA node looks at its CRL file.
pub const POLL: Duration = Duration::from_secs(1);

/// The largest CRL a member takes (a `Revoked` frame must also fit the
/// smallest frame, 4 KiB blocks plus 1 KiB): about 60 revoked certificates.
pub const MAX_CRL: usize = 4096;

/// A verified CRL: its number, the serials it revokes, its DER.
#[derive(Clone, Debug, Default)]
pub struct Revocations {
    /// The CRL number; 0 before any CRL.
    pub number: u64,
    serials: HashSet<Vec<u8>>,
    /// The CRL as the CA signed it, to pass on.
    pub der: Bytes,
}

/// Why a CRL was not taken.
#[derive(Debug, thiserror::Error)]
pub enum CrlError {
    /// Larger than [`MAX_CRL`].
    #[error("a CRL of {0} bytes, more than {MAX_CRL}")]
    TooLarge(usize),
    /// Not a CRL.
    #[error("not a certificate revocation list: {0}")]
    Parse(String),
    /// Not signed by the cluster CA.
    #[error("not signed by the cluster CA: {0}")]
    Signature(String),
    /// No CRL number, or one past 64 bits.
    #[error("the CRL carries no usable number")]
    Number,
}

impl Revocations {
    /// Parses `der` and checks it was signed by `ca` (DER).
    pub fn verified(der: &[u8], ca: &CertificateDer<'_>) -> Result<Revocations, CrlError> {
        if der.len() > MAX_CRL {
            return Err(CrlError::TooLarge(der.len()));
        }
        let (_, crl) =
            x509_parser::parse_x509_crl(der).map_err(|e| CrlError::Parse(e.to_string()))?;
        let (_, ca) = x509_parser::parse_x509_certificate(ca.as_ref())
            .map_err(|e| CrlError::Parse(e.to_string()))?;
        crl.verify_signature(ca.public_key())
            .map_err(|e| CrlError::Signature(e.to_string()))?;
        let number = crl
            .crl_number()
            .and_then(|n| u64::try_from(n.clone()).ok())
            .ok_or(CrlError::Number)?;
        let serials = crl
            .iter_revoked_certificates()
            .map(|r| trim(r.raw_serial()).to_vec())
            .collect();
        Ok(Revocations {
            number,
            serials,
            der: Bytes::copy_from_slice(der),
        })
    }

    /// Whether the end-entity certificate of `chain` is revoked.
    pub fn revokes(&self, chain: &[CertificateDer<'_>]) -> bool {
        if self.serials.is_empty() {
            return false;
        }
        let Some(first) = chain.first() else {
            return false;
        };
        match x509_parser::parse_x509_certificate(first.as_ref()) {
            Ok((_, cert)) => self.serials.contains(trim(cert.raw_serial())),
            // Unparseable: the handshake would not have got here.
            Err(_) => true,
        }
    }

    /// Certificates revoked.
    pub fn len(&self) -> usize {
        self.serials.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.serials.is_empty()
    }
}

/// A serial's content bytes without the sign byte DER may put first.
fn trim(raw: &[u8]) -> &[u8] {
    match raw {
        [0, rest @ ..] if !rest.is_empty() => rest,
        _ => raw,
    }
}

/// The CRL kept in key directory `dir`, if there is one the CA `ca`
/// signed (a bad one is reported and ignored: the next good one replaces
/// it).
pub fn load(dir: &Path, ca: &CertificateDer<'_>) -> Option<Revocations> {
    let path = dir.join(CRL_FILE);
    let der = fs::read(&path).ok()?;
    match Revocations::verified(&der, ca) {
        Ok(r) => Some(r),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "ignored a revocation list");
            None
        }
    }
}

/// Keeps `r` in key directory `dir` (replacing the file whole).
pub fn store(dir: &Path, r: &Revocations) -> Result<(), TlsError> {
    tls::replace(&dir.join(CRL_FILE), &r.der, 0o644)
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> TlsError + '_ {
    move |source| TlsError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Notes that the CA in `dir` issued certificate `cert` to `name`.
pub(crate) fn record_serial(
    dir: &Path,
    name: &str,
    cert: &CertificateDer<'_>,
) -> Result<(), TlsError> {
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert.as_ref()) else {
        return Ok(());
    };
    let path = dir.join(SERIALS_FILE);
    let mut options = fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&path).map_err(io_error(&path))?;
    let line = format!("{name} {}\n", hex(trim(parsed.raw_serial())));
    file.write_all(line.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(io_error(&path))
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || s.is_empty() {
        return None;
    }
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

/// The serials of every certificate issued to `name` by the CA in `dir`:
/// the register's, and that of `NAME.pem` in the directory.
fn serials_of(dir: &Path, name: &str) -> Result<Vec<Vec<u8>>, TlsError> {
    let path = dir.join(SERIALS_FILE);
    let mut out = Vec::new();
    match fs::read_to_string(&path) {
        Ok(text) => {
            for (i, line) in text.lines().enumerate() {
                let Some((n, serial)) = line.trim().split_once(' ') else {
                    continue;
                };
                let serial = unhex(serial.trim()).ok_or_else(|| TlsError::BadRegister {
                    path: path.clone(),
                    reason: format!("line {}: {line:?}: expected `NAME HEX`", i + 1),
                })?;
                if n == name {
                    out.push(serial);
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_error(&path)(e)),
    }
    if let Ok(pem) = fs::read(dir.join(format!("{name}.pem")))
        && let Some(cert) = tls::first_cert(&pem)
        && let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert.as_ref())
    {
        out.push(trim(parsed.raw_serial()).to_vec());
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// What [`revoke`] did.
#[derive(Debug)]
pub struct Revoked {
    /// The new CRL's number.
    pub number: u64,
    /// Certificates of the name it revokes.
    pub certificates: usize,
    /// Certificates it revokes in all.
    pub total: usize,
}

/// Revokes every certificate the CA in `dir` issued to `name`: writes a
/// new `revoked.crl` (the previous one's entries, these, the next number)
/// and bars the name from being issued again.
pub fn revoke(dir: &Path, name: &str) -> Result<Revoked, TlsError> {
    tls::check_name(name)?;
    if !crate::issued::contains(dir, name)? {
        return Err(TlsError::NotIssued {
            name: name.to_owned(),
        });
    }
    let ca = tls::ca_signer(dir)?;
    let previous = load(dir, &ca.cert).unwrap_or_default();
    let mine = serials_of(dir, name)?;
    let mut all: Vec<Vec<u8>> = previous.serials.iter().cloned().collect();
    all.extend(mine.iter().cloned());
    all.sort_unstable();
    all.dedup();
    let now = OffsetDateTime::now_utc();
    let params = CertificateRevocationListParams {
        this_update: now,
        next_update: ca.not_after.max(now + time::Duration::days(1)),
        crl_number: SerialNumber::from((previous.number + 1).to_be_bytes().to_vec()),
        issuing_distribution_point: None,
        revoked_certs: all
            .iter()
            .map(|s| RevokedCertParams {
                serial_number: SerialNumber::from(s.clone()),
                revocation_time: now,
                reason_code: None,
                invalidity_date: None,
            })
            .collect(),
        key_identifier_method: KeyIdMethod::Sha256,
    };
    let crl = params
        .signed_by(&ca.issuer)
        .map_err(|source| TlsError::Generate {
            name: name.to_owned(),
            source,
        })?;
    let r = Revocations::verified(crl.der(), &ca.cert).map_err(|e| TlsError::BadRegister {
        path: dir.join(CRL_FILE),
        reason: format!("the new revocation list does not verify: {e}"),
    })?;
    crate::issued::bar(dir, name)?;
    store(dir, &r)?;
    Ok(Revoked {
        number: r.number,
        certificates: mine.len(),
        total: r.len(),
    })
}

/// The CA node's watch on its revocation list: every [`POLL`], a changed
/// `revoked.crl` in `dir` goes to the driver (which checks it like any
/// peer's), until the node stops.
pub async fn watch_ca(
    dir: std::path::PathBuf,
    events: tokio::sync::mpsc::Sender<crate::driver::Event>,
) {
    let path = dir.join(CRL_FILE);
    let stamp = |m: &fs::Metadata| (m.modified().ok(), m.len());
    let mut seen = None;
    loop {
        if let Ok(meta) = tokio::fs::metadata(&path).await
            && seen != Some(stamp(&meta))
        {
            seen = Some(stamp(&meta));
            if let Ok(der) = tokio::fs::read(&path).await
                && events
                    .send(crate::driver::Event::Revoked(Bytes::from(der)))
                    .await
                    .is_err()
            {
                return;
            }
        }
        tokio::time::sleep(POLL).await;
    }
}
