//! The join protocol's two messages, each `length: u32 BE` then a body
//! that starts `"COOJ"`, version 1:
//!
//! ```text
//! request:  "COOJ" 1 | secret [32] | name: len u8, UTF-8 | CSR: len u16, DER
//! answer:   "COOJ" 1 | 0 | certificate: len u16, DER | CA certificate: len u16, DER
//!           "COOJ" 1 | code u8 (1..) | detail: len u16, UTF-8
//! ```
//!
//! Lengths are checked against [`MAX_MESSAGE`] before anything is
//! allocated; trailing bytes, unknown codes and bad UTF-8 are errors.

use super::table::Refusal;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The first bytes of every message body.
pub const MAGIC: [u8; 4] = *b"COOJ";

/// The protocol's version.
pub const VERSION: u8 = 1;

/// The largest message body either side reads (a P-256 CSR is about 250
/// bytes, a certificate about 600).
pub const MAX_MESSAGE: usize = 16 << 10;

/// Longest detail text in a refusal, in bytes.
const MAX_DETAIL: usize = 1024;

/// A joiner's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The token's secret.
    pub secret: [u8; 32],
    /// The name the joiner asks for.
    pub name: String,
    /// Its certificate signing request (DER).
    pub csr: Vec<u8>,
}

/// Why the CA node said no, as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denial {
    /// The token was refused.
    Token(Refusal),
    /// This node does not hold the cluster's CA key.
    NoCa,
    /// The request was malformed (the detail says how).
    BadRequest(String),
    /// The CA node failed (its table or its key); the detail says how.
    Internal(String),
}

/// The CA node's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The joiner's certificate and the CA's (DER).
    Issued {
        /// The node certificate.
        cert: Vec<u8>,
        /// The CA certificate.
        ca: Vec<u8>,
    },
    /// No certificate.
    Denied(Denial),
}

/// A message that does not parse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("malformed join message: {0}")]
pub struct Malformed(pub &'static str);

/// Reads one message body, at most [`MAX_MESSAGE`] bytes.
pub async fn read_message<R: AsyncRead + Unpin>(r: &mut R) -> std::io::Result<Vec<u8>> {
    let len = r.read_u32().await? as usize;
    if len == 0 || len > MAX_MESSAGE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("join message of {len} bytes (expected 1 to {MAX_MESSAGE})"),
        ));
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).await?;
    Ok(body)
}

/// Writes one message body.
pub async fn write_message<W: AsyncWrite + Unpin>(w: &mut W, body: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(body.len()).map_err(|_| std::io::Error::other("message too long"))?;
    w.write_u32(len).await?;
    w.write_all(body).await?;
    w.flush().await
}

/// A cursor over a body that refuses to read past its end.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.0.len() < n {
            return Err(Malformed("truncated"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<usize, Malformed> {
        let b = self.take(2)?;
        Ok(usize::from(u16::from_be_bytes([b[0], b[1]])))
    }

    fn header(&mut self) -> Result<(), Malformed> {
        if self.take(4)? != MAGIC {
            return Err(Malformed("bad magic (not a coopcache join message)"));
        }
        match self.u8()? {
            VERSION => Ok(()),
            _ => Err(Malformed("unknown join protocol version")),
        }
    }

    fn text(&mut self, len: usize) -> Result<String, Malformed> {
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| Malformed("text is not UTF-8"))
    }

    fn end(&self) -> Result<(), Malformed> {
        match self.0.is_empty() {
            true => Ok(()),
            false => Err(Malformed("trailing bytes")),
        }
    }
}

fn put_u16(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = bytes.len().min(usize::from(u16::MAX));
    out.extend_from_slice(&(len as u16).to_be_bytes());
    out.extend_from_slice(&bytes[..len]);
}

fn head() -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.push(VERSION);
    out
}

impl Request {
    /// The request's body.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = head();
        out.extend_from_slice(&self.secret);
        let name = &self.name.as_bytes()[..self.name.len().min(255)];
        out.push(name.len() as u8);
        out.extend_from_slice(name);
        put_u16(&mut out, &self.csr);
        out
    }

    /// Parses a request's body.
    pub fn decode(body: &[u8]) -> Result<Request, Malformed> {
        let mut c = Cursor(body);
        c.header()?;
        let secret = c.take(32)?.try_into().map_err(|_| Malformed("truncated"))?;
        let len = usize::from(c.u8()?);
        let name = c.text(len)?;
        let len = c.u16()?;
        let csr = c.take(len)?.to_vec();
        c.end()?;
        Ok(Request { secret, name, csr })
    }
}

const TOKEN_UNKNOWN: u8 = 1;
const TOKEN_USED: u8 = 2;
const TOKEN_EXPIRED: u8 = 3;
const NAME_TAKEN: u8 = 4;
const NO_CA: u8 = 5;
const BAD_REQUEST: u8 = 6;
const INTERNAL: u8 = 7;

impl Answer {
    /// The answer's body.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = head();
        let (code, detail) = match self {
            Answer::Issued { cert, ca } => {
                out.push(0);
                put_u16(&mut out, cert);
                put_u16(&mut out, ca);
                return out;
            }
            Answer::Denied(Denial::Token(Refusal::Unknown)) => (TOKEN_UNKNOWN, String::new()),
            Answer::Denied(Denial::Token(Refusal::Used { by })) => (TOKEN_USED, by.clone()),
            Answer::Denied(Denial::Token(Refusal::Expired { at })) => {
                (TOKEN_EXPIRED, at.to_string())
            }
            Answer::Denied(Denial::Token(Refusal::NameTaken { name })) => {
                (NAME_TAKEN, name.clone())
            }
            Answer::Denied(Denial::NoCa) => (NO_CA, String::new()),
            Answer::Denied(Denial::BadRequest(d)) => (BAD_REQUEST, d.clone()),
            Answer::Denied(Denial::Internal(d)) => (INTERNAL, d.clone()),
        };
        out.push(code);
        let mut end = detail.len().min(MAX_DETAIL);
        while !detail.is_char_boundary(end) {
            end -= 1;
        }
        put_u16(&mut out, &detail.as_bytes()[..end]);
        out
    }

    /// Parses an answer's body.
    pub fn decode(body: &[u8]) -> Result<Answer, Malformed> {
        let mut c = Cursor(body);
        c.header()?;
        let code = c.u8()?;
        if code == 0 {
            let len = c.u16()?;
            let cert = c.take(len)?.to_vec();
            let len = c.u16()?;
            let ca = c.take(len)?.to_vec();
            c.end()?;
            return Ok(Answer::Issued { cert, ca });
        }
        let len = c.u16()?;
        if len > MAX_DETAIL {
            return Err(Malformed("refusal detail too long"));
        }
        let detail = c.text(len)?;
        c.end()?;
        let denial = match code {
            TOKEN_UNKNOWN => Denial::Token(Refusal::Unknown),
            TOKEN_USED => Denial::Token(Refusal::Used { by: detail }),
            TOKEN_EXPIRED => Denial::Token(Refusal::Expired {
                at: detail.parse().map_err(|_| Malformed("bad expiry"))?,
            }),
            NAME_TAKEN => Denial::Token(Refusal::NameTaken { name: detail }),
            NO_CA => Denial::NoCa,
            BAD_REQUEST => Denial::BadRequest(detail),
            INTERNAL => Denial::Internal(detail),
            _ => return Err(Malformed("unknown answer code")),
        };
        Ok(Answer::Denied(denial))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers() -> Vec<Answer> {
        vec![
            Answer::Issued {
                cert: vec![1, 2, 3],
                ca: vec![4; 700],
            },
            Answer::Denied(Denial::Token(Refusal::Unknown)),
            Answer::Denied(Denial::Token(Refusal::Used { by: "b".into() })),
            Answer::Denied(Denial::Token(Refusal::Expired { at: 17 })),
            Answer::Denied(Denial::Token(Refusal::NameTaken { name: "c".into() })),
            Answer::Denied(Denial::NoCa),
            Answer::Denied(Denial::BadRequest("x".into())),
            Answer::Denied(Denial::Internal("y".into())),
        ]
    }

    #[test]
    fn messages_roundtrip() {
        let r = Request {
            secret: [5; 32],
            name: "b".into(),
            csr: vec![9; 300],
        };
        assert_eq!(Request::decode(&r.encode()).unwrap(), r);
        for a in answers() {
            assert_eq!(Answer::decode(&a.encode()).unwrap(), a);
        }
    }

    /// Every truncation, every byte flipped and a trailing byte: an error
    /// or a message, never a panic; truncations and trailers always errors.
    #[test]
    fn any_bytes_give_a_message_or_an_error_never_a_panic() {
        let r = Request {
            secret: [5; 32],
            name: "b".into(),
            csr: vec![9; 40],
        };
        let mut bodies = vec![r.encode()];
        bodies.extend(answers().iter().map(Answer::encode));
        for body in bodies {
            for end in 0..body.len() {
                assert!(
                    Request::decode(&body[..end]).is_err() || Answer::decode(&body[..end]).is_err()
                );
                let _ = Answer::decode(&body[..end]);
            }
            let mut longer = body.clone();
            longer.push(0);
            assert!(Request::decode(&longer).is_err() && Answer::decode(&longer).is_err());
            for i in 0..body.len() {
                for v in [0u8, 1, 0x7f, 0xff] {
                    let mut b = body.clone();
                    b[i] = v;
                    let _ = (Request::decode(&b), Answer::decode(&b));
                }
            }
        }
    }
}
