//! The CA node's side: a member's listener hands it every connection whose
//! TLS ClientHello asks for [`JOIN_ALPN`](crate::tls::JOIN_ALPN). Every
//! member answers (a node without `ca.key` says so, so a joiner that found
//! it by discovery tries the next); only a node holding the CA key signs.

use super::table::{self, Refusal};
use super::wire::{Answer, Denial, Request, read_message, write_message};
use crate::tls::{self, Identity};
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

/// Time allowed for the request to arrive after the handshake, and again
/// for the answer to be written.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a certificate issued to a joiner is valid.
pub const ISSUED_DAYS: u32 = 365;

/// Unix seconds now, from the node's clock.
pub fn unix_now() -> u64 {
    crate::clock::unix_secs()
}

/// What became of one join request, for the log.
#[derive(Debug)]
pub enum Outcome {
    /// A certificate was issued to the name.
    Issued(String),
    /// Refused, with the answer sent.
    Denied(Denial),
}

/// Serves one join request on an established TLS stream: reads it, decides
/// and answers; the connection then ends. Errors are the connection's
/// (timeouts, malformed framing); refusals are answers.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    tls: &mut S,
    identity: &Identity,
) -> std::io::Result<Outcome> {
    let body = tokio::time::timeout(REQUEST_TIMEOUT, read_message(tls))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no join request"))??;
    let (answer, name) = match Request::decode(&body) {
        Ok(request) => {
            let name = request.name.clone();
            (decide(identity.signer.as_deref(), request).await, name)
        }
        Err(e) => (
            Answer::Denied(Denial::BadRequest(e.to_string())),
            String::new(),
        ),
    };
    let outcome = match &answer {
        Answer::Issued { .. } => Outcome::Issued(name),
        Answer::Denied(d) => Outcome::Denied(d.clone()),
    };
    let write = async {
        write_message(tls, &answer.encode()).await?;
        tls.shutdown().await
    };
    tokio::time::timeout(REQUEST_TIMEOUT, write)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "writing the answer"))??;
    Ok(outcome)
}

/// Checks the request, redeems the token and signs: in that order, so a
/// malformed request or a taken name leaves the token unused, and a token
/// is marked used on disk before any certificate exists.
async fn decide(signer: Option<&Path>, request: Request) -> Answer {
    let Some(dir) = signer else {
        return Answer::Denied(Denial::NoCa);
    };
    if let Err(e) = tls::check_name(&request.name) {
        return Answer::Denied(Denial::BadRequest(e.to_string()));
    }
    let csr = match tls::parse_request(&request.csr) {
        Ok(csr) => csr,
        Err(e) => {
            return Answer::Denied(Denial::BadRequest(format!(
                "certificate signing request: {e}"
            )));
        }
    };
    let dir = dir.to_owned();
    let name = request.name;
    // The table's lock and file I/O, and signing, block: off the runtime.
    let result = tokio::task::spawn_blocking(move || {
        match table::redeem(&dir, &request.secret, &name, unix_now()) {
            Err(e) => Answer::Denied(Denial::Internal(e.to_string())),
            Ok(Err(refusal)) => Answer::Denied(Denial::Token(refusal)),
            Ok(Ok(())) => match tls::sign_request(&dir, &name, csr, ISSUED_DAYS) {
                Ok((cert, ca)) => Answer::Issued {
                    cert: cert.to_vec(),
                    ca: ca.to_vec(),
                },
                Err(e) => Answer::Denied(Denial::Internal(format!(
                    "the token was used but signing failed: {e}"
                ))),
            },
        }
    })
    .await;
    result.unwrap_or_else(|e| Answer::Denied(Denial::Internal(e.to_string())))
}

/// Logs a join's outcome on the CA node.
pub fn log(peer: &std::net::SocketAddr, outcome: &Outcome) {
    match outcome {
        Outcome::Issued(name) => {
            tracing::info!(%peer, node = %name, "join token redeemed: issued a certificate")
        }
        Outcome::Denied(Denial::Token(r)) => {
            let why = match r {
                Refusal::Unknown => "unknown token".to_owned(),
                Refusal::Used { by } => format!("token already used by {by}"),
                Refusal::Expired { at } => format!("token expired at {}", super::token::utc(*at)),
                Refusal::NameTaken { name } => format!("name {name} issued already"),
            };
            tracing::warn!(%peer, "join refused: {why}")
        }
        Outcome::Denied(d) => tracing::warn!(%peer, denial = ?d, "join refused"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::join::wire::Malformed;
    use sha2::Digest;
    use tokio::io::AsyncWriteExt;

    fn ca_identity() -> (tempfile::TempDir, Identity) {
        let dir = tempfile::tempdir().unwrap();
        tls::init_cluster(dir.path(), &["a".to_owned()], 1).unwrap();
        let identity = Identity::load(dir.path(), "a").unwrap();
        assert!(identity.signer.is_some());
        (dir, identity)
    }

    fn csr(name: &str) -> Vec<u8> {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::default();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.serialize_request(&key).unwrap().der().to_vec()
    }

    /// Sends `bytes` as the joiner and returns the answer, if any.
    async fn exchange(identity: &Identity, bytes: Vec<u8>) -> Option<Result<Answer, Malformed>> {
        let (mut joiner, mut server) = tokio::io::duplex(64 << 10);
        // The server's end closes when it is done, as the connection would.
        let serving = async move { serve(&mut server, identity).await };
        let asking = async {
            joiner.write_all(&bytes).await.unwrap();
            joiner.shutdown().await.unwrap();
            let body = read_message(&mut joiner).await.ok()?;
            Some(Answer::decode(&body))
        };
        let (_, answer) = tokio::join!(serving, asking);
        answer
    }

    fn framed(body: &[u8]) -> Vec<u8> {
        let mut out = (body.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(body);
        out
    }

    #[tokio::test]
    async fn bad_requests_leave_the_token_unused_and_a_good_one_spends_it() {
        let (dir, identity) = ca_identity();
        let t = table::issue(dir.path(), 60, None, unix_now()).unwrap();
        let request = |name: &str, csr: Vec<u8>| Request {
            secret: t.secret,
            name: name.into(),
            csr,
        };
        // A length past the bound is refused before allocating: no answer.
        let huge = (u32::MAX).to_be_bytes().to_vec();
        assert!(exchange(&identity, huge).await.is_none());
        // Garbage, a bad name, a CSR that is not one: refusals, token unused.
        for body in [
            b"garbage".to_vec(),
            request("../x", csr("x")).encode(),
            request("b", vec![0x30, 0x03, 1, 2, 3]).encode(),
        ] {
            let answer = exchange(&identity, framed(&body)).await;
            assert!(
                matches!(answer, Some(Ok(Answer::Denied(Denial::BadRequest(_))))),
                "{answer:?}"
            );
        }
        let answer = exchange(&identity, framed(&request("b", csr("b")).encode())).await;
        let Some(Ok(Answer::Issued { cert, ca })) = answer else {
            panic!("{answer:?}");
        };
        assert_eq!(tls::peer_name(&[cert.into()]).as_deref(), Some("b"));
        let fingerprint: [u8; 32] = sha2::Sha256::digest(&ca).into();
        assert_eq!(fingerprint, tls::ca_fingerprint(dir.path()).unwrap());
        let again = exchange(&identity, framed(&request("c", csr("c")).encode())).await;
        assert!(
            matches!(
                again,
                Some(Ok(Answer::Denied(Denial::Token(Refusal::Used { .. }))))
            ),
            "{again:?}"
        );
    }

    #[tokio::test]
    async fn a_name_issued_through_a_token_is_never_issued_again() {
        let (dir, identity) = ca_identity();
        let first = table::issue(dir.path(), 1, None, unix_now()).unwrap();
        let request = |secret: [u8; 32]| Request {
            secret,
            name: "b".into(),
            csr: csr("b"),
        };
        let answer = exchange(&identity, framed(&request(first.secret).encode())).await;
        assert!(
            matches!(answer, Some(Ok(Answer::Issued { .. }))),
            "{answer:?}"
        );
        // The first token expires; a later change of the table prunes it,
        // and with it the table's record of the name.
        let later = unix_now() + 3600;
        let second = table::issue(dir.path(), 7200, None, later).unwrap();
        let table = std::fs::read_to_string(dir.path().join(table::TABLE_FILE)).unwrap();
        assert!(!table.contains("used:b"), "{table}");
        let again = exchange(&identity, framed(&request(second.secret).encode())).await;
        assert!(
            matches!(
                again,
                Some(Ok(Answer::Denied(Denial::Token(Refusal::NameTaken { .. }))))
            ),
            "a second key for `b`: {again:?}"
        );
    }
}
