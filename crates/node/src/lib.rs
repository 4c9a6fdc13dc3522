//! The coopcache daemon (DESIGN.md section 4): the second driver of the
//! core's cooperation state machines, with real sockets, a real origin and
//! real bytes.
//!
//! - [`tls`]: the cluster CA, node certificates and mutual-TLS configs.
//! - [`origin`]: the slow shared storage behind the cluster (a directory,
//!   S3 or HTTP, through `object_store`).

pub mod origin;
pub mod tls;
