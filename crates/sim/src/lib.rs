//! coopcache's simulator: trace readers and the replay driver.
//!
//! - [`trace`]: streaming readers for the trace formats, transparent
//!   decompression, and composition of several traces into one.
//! - [`replay`]: replays a trace through many caches in parallel with the
//!   same policy code the daemon runs.
//! - [`interval`]: reporting intervals of a replay, in requests or in
//!   trace time.
//! - [`mrc`]: LRU miss-ratio curves from one stack-distance pass, exact
//!   or sampled (SHARDS).
//! - [`stats`]: a trace's statistics (sizes, reuse, popularity) from one
//!   pass.
//! - [`local`]: a local-policy study's runs and rows, as `coopcache sim`
//!   reports them.
//! - [`c2cfs`]: traces with writes through close-to-open consistency
//!   (NFS's, and C2Cfs's in shared and exclusive mode).
//! - [`protocol`]: the live protocol (the daemon's own code) simulated over an
//!   in-order network and a virtual clock.
#![forbid(unsafe_code)]

pub mod attr;
pub mod c2cfs;
mod chunks;
pub mod class_file;
pub mod convert;
pub mod coop;
pub mod disks;
pub mod error;
pub mod faults;
pub mod interval;
pub mod live_replay;
pub mod local;
pub mod mrc;
pub mod protocol;
pub mod replay;
pub mod size;
pub mod stats;
pub mod trace;
pub mod workload;

pub use error::{OptionError, TraceError};
