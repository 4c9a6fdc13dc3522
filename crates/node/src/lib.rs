//! The coopcache daemon (docs/ARCHITECTURE.md): the second driver of the
//! core's cooperation state machines, with real sockets, a real origin and
//! real bytes.
//!
//! - [`tls`]: the cluster CA, node certificates and mutual-TLS configs;
//!   [`join`]: joining with a one-time token instead of copied keys.
//! - [`origin`]: the slow shared storage behind the cluster (a directory,
//!   S3 or HTTP, through `object_store`).
//! - [`frame`]: the wire format (docs/PROTOCOL.md); [`link`]: connections.
//! - [`driver`]: the task that carries the core's node
//!   ([`coopcache_core::node::Node`]) and SWIM
//!   ([`coopcache_core::members::swim`]) with sockets, origin reads and
//!   [`clock`]; [`handle`]: starting a node and reading through it.
//! - [`discovery`]: finding members on one subnet by multicast.
//! - [`block`]: block ids and contents; [`budget`]: how many blocks fit
//!   the memory budget; [`seal`]: sealing a private origin's blocks
//!   before they are parked on peers.
//! - [`gateway`]: HTTP access, status and metrics; [`client`]: its client.
//! - [`quiescence`]: waiting until nodes in one process are at rest.

pub mod block;
pub mod budget;
pub mod client;
pub mod clock;
pub mod config;
pub mod dedup;
pub mod discovery;
pub mod disk;
pub mod driver;
pub mod frame;
pub mod gateway;
pub mod handle;
pub mod issued;
pub mod join;
pub mod link;
pub mod listing;
pub mod metrics;
pub mod origin;
pub mod pins;
pub mod quiescence;
pub mod revocation;
pub mod s3;
pub mod seal;
mod streams;
pub mod take_in;
pub mod tls;
pub mod version;
pub mod warm;

pub use handle::{
    NodeError, NodeHandle, NodeOptions, check_capacity, check_private, critical_paths,
    disk_index_bytes, start,
};
