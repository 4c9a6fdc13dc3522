//! Why a link failed, in words an operator can act on, and how often to
//! say so: a peer that stays unreachable is reported once a minute (with
//! the failures since), not on every retry of the backoff.

use super::LinkError;
use std::time::{Duration, Instant};

/// How often an unreachable peer is reported at WARN.
pub const REPORT_EVERY: Duration = Duration::from_secs(60);

/// What an operator should look at, for a failed dial or handshake.
pub fn cause(e: &LinkError) -> &'static str {
    match e {
        LinkError::Timeout("connecting") => "timed out connecting (host down or port filtered?)",
        LinkError::Timeout(super::DIALLING) => {
            "timed out on every address the name resolves to (hosts down or ports filtered?)"
        }
        LinkError::Timeout(_) => "timed out in the handshake (not a coopcache peer port?)",
        LinkError::Refused(_) => "refused by the cluster's rules",
        LinkError::Myself(_) => "this node's own address: no peer there yet",
        LinkError::Frame(_) => "spoke something other than coopcache's protocol",
        LinkError::Io(io) => match tls_error(io) {
            Some(tls) => tls_cause(tls),
            None => match io.kind() {
                std::io::ErrorKind::ConnectionRefused => {
                    "connection refused (nothing listening there?)"
                }
                std::io::ErrorKind::TimedOut => "timed out",
                std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset => {
                    "closed by the peer during the handshake (did it refuse our certificate?)"
                }
                _ => "network error",
            },
        },
    }
}

fn tls_error(io: &std::io::Error) -> Option<&rustls::Error> {
    io.get_ref()?.downcast_ref::<rustls::Error>()
}

fn tls_cause(e: &rustls::Error) -> &'static str {
    use rustls::{AlertDescription as A, CertificateError as C, Error as E};
    match e {
        E::InvalidCertificate(C::UnknownIssuer | C::BadSignature) => {
            "its certificate is from another cluster's CA"
        }
        E::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => {
            "its certificate is not a coopcache node certificate (wrong name)"
        }
        E::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            "its certificate has expired"
        }
        E::InvalidCertificate(_) => "its certificate is invalid",
        E::AlertReceived(A::UnknownCA | A::BadCertificate | A::CertificateUnknown) => {
            "it refused this node's certificate (another cluster's CA?)"
        }
        E::AlertReceived(A::CertificateExpired) => "it says this node's certificate has expired",
        E::AlertReceived(_) => "it ended the TLS handshake",
        E::InvalidMessage(_) => "not TLS (not a coopcache peer port?)",
        _ => "TLS failed",
    }
}

/// Failures since the last report, said at most once per period: a peer
/// that stays unreachable once a minute ([`REPORT_EVERY`]), noise on the
/// peer port once per `NOISE_EVERY` (10 s).
#[derive(Debug)]
pub struct Throttle {
    every: Duration,
    failures: u64,
    last_report: Option<Instant>,
}

impl Throttle {
    /// Reports at most once per `every`.
    pub fn new(every: Duration) -> Throttle {
        Throttle {
            every,
            failures: 0,
            last_report: None,
        }
    }

    /// Counts a failure at `now`; returns how many failed since the last
    /// report when this one should be reported.
    pub fn failed(&mut self, now: Instant) -> Option<u64> {
        self.failures += 1;
        if self
            .last_report
            .is_some_and(|t| now.duration_since(t) < self.every)
        {
            return None;
        }
        self.last_report = Some(now);
        Some(std::mem::take(&mut self.failures))
    }

    /// It works again: returns whether failures were reported since (so
    /// that the recovery is worth saying too).
    pub fn up(&mut self) -> bool {
        let reported = self.last_report.is_some();
        *self = Throttle::new(self.every);
        reported
    }
}

/// Failed inbound connections, all of them together (their tasks share
/// it): a scanner or a misconfigured client on the peer port is said once
/// per `NOISE_EVERY` (10 s) with how many there were, not 50 times a second.
#[derive(Debug)]
pub struct Noise(std::sync::Mutex<Throttle>);

/// How often failed inbound connections are reported at WARN.
pub(super) const NOISE_EVERY: Duration = Duration::from_secs(10);

impl Default for Noise {
    fn default() -> Self {
        Noise(std::sync::Mutex::new(Throttle::new(NOISE_EVERY)))
    }
}

impl Noise {
    /// [`Throttle::failed`] under the lock.
    pub fn failed(&self, now: Instant) -> Option<u64> {
        let mut throttle = self.0.lock().unwrap_or_else(|p| p.into_inner());
        throttle.failed(now)
    }
}

/// Says a failed connection: at WARN with its cause and the count when
/// `failures` says it is due, at DEBUG otherwise.
pub(super) fn say(addr: &dyn std::fmt::Display, e: &LinkError, failures: Option<u64>, what: &str) {
    match failures {
        Some(failures) => tracing::warn!(%addr, cause = cause(e), error = %e, failures, "{what}"),
        None => tracing::debug!(%addr, error = %e, "{what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_peer_is_reported_once_a_minute_with_the_count() {
        let t0 = crate::clock::now();
        let mut notes = Throttle::new(REPORT_EVERY);
        assert_eq!(notes.failed(t0), Some(1), "the first failure is said");
        for s in 1..60 {
            assert_eq!(notes.failed(t0 + Duration::from_secs(s)), None);
        }
        assert_eq!(notes.failed(t0 + Duration::from_secs(60)), Some(60));
        assert!(notes.up(), "a reported outage's end is said too");
        assert_eq!(notes.failed(t0 + Duration::from_secs(61)), Some(1));
        let mut quiet = Throttle::new(REPORT_EVERY);
        assert!(!quiet.up());
    }

    #[test]
    fn inbound_noise_is_reported_every_ten_seconds_with_the_count() {
        let t0 = crate::clock::now();
        let noise = Noise::default();
        assert_eq!(noise.failed(t0), Some(1));
        for ms in 1..500 {
            assert_eq!(noise.failed(t0 + Duration::from_millis(ms * 20)), None);
        }
        assert_eq!(noise.failed(t0 + NOISE_EVERY), Some(500));
    }

    #[test]
    fn causes_name_what_to_check() {
        let refused = LinkError::Io(std::io::ErrorKind::ConnectionRefused.into());
        assert!(cause(&refused).contains("refused"));
        assert!(cause(&LinkError::Timeout("connecting")).contains("timed out connecting"));
        assert!(cause(&LinkError::Timeout(super::super::DIALLING)).contains("every address"));
        let foreign = LinkError::Io(std::io::Error::other(rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer,
        )));
        assert!(cause(&foreign).contains("another cluster"));
        let refused_us = LinkError::Io(std::io::Error::other(rustls::Error::AlertReceived(
            rustls::AlertDescription::UnknownCA,
        )));
        assert!(cause(&refused_us).contains("refused this node's certificate"));
    }
}
