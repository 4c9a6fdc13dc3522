//! The daemon's clock: the one place that reads the time. The protocol
//! takes microseconds since the node started (so does the version cache), SWIM
//! takes instants; both come from here, so a test or a harness that drives
//! the core with another clock replaces one thing.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The time since a node started.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: Instant,
}

impl Clock {
    /// A clock starting now.
    pub fn start() -> Clock {
        Clock { start: now() }
    }

    /// Microseconds since the start: the protocol's time.
    pub fn micros(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    /// The instant `micros` after the start (far in the future for
    /// `u64::MAX`).
    pub fn at(&self, micros: u64) -> Instant {
        let far = Duration::from_secs(86_400 * 365);
        self.start + Duration::from_micros(micros).min(far)
    }
}

/// The current instant.
pub fn now() -> Instant {
    Instant::now()
}

/// Microseconds since the Unix epoch: a restarted node's SWIM incarnation,
/// which must grow across restarts (so not the monotonic clock).
pub fn unix_micros() -> u64 {
    wall()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_micros() as u64)
}

/// Seconds since the Unix epoch: when a join token expires (it must mean
/// the same on every machine and across restarts).
pub fn unix_secs() -> u64 {
    unix_micros() / 1_000_000
}

/// The wall clock: times shown to users and clients (an S3 upload's
/// start, a part's modification).
pub fn wall() -> SystemTime {
    SystemTime::now()
}
