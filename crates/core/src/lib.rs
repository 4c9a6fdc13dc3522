//! The sans-IO core of coopcache.
//!
//! Everything here is deterministic and free of I/O: no sockets, files,
//! clocks or async runtime. The simulator and the node daemon both drive
//! this code, so a policy or algorithm is written once and behaves the same
//! under a trace and in a live cluster (docs/ARCHITECTURE.md, section 1).
//!
//! - [`policy`]: local replacement policies behind one [`policy::Policy`]
//!   trait, one file each (the list: [`PolicyKind`]); [`admission`]:
//!   admission filters in front of them.
//! - [`attr`]: attribute caches: sub-caches by file type and size, each
//!   with its own block size, in the paper's notation.
//! - [`coop`]: the cooperative caching algorithms (Base, Direct, Greedy,
//!   Centrally Coordinated, N-Chance, Hash-Distributed, Weighted LRU, Best)
//!   as node and manager state machines exchanging messages.
//! - [`c2cfs`]: C2Cfs close-to-open consistency: a file manager's
//!   `Tcommit` and valid copies, and where an open reads from.
//! - [`members`]: a node's view of the cluster: whom it dials, which
//!   linked members are live, whom a peer's word makes it dial.
//! - [`node`]: one node's protocols (block reads, C2Cfs opens and
//!   commits, file locks) joined into the one machine the daemon carries.
//! - [`warm`]: warm-ups placed across the cluster: each file read on its
//!   manager.
//! - [`list`]: the slab-backed linked lists the policies are built on.
#![forbid(unsafe_code)]

pub mod admission;
pub mod attr;
pub mod c2cfs;
pub mod consistency;
pub mod coop;
pub mod error;
mod index;
pub mod list;
pub mod members;
pub mod node;
pub mod policy;
pub mod protocol;
mod queue;
pub mod warm;

pub use error::CapacityError;
pub use policy::{BlockKey, Capacity, Lookup, Policy, PolicyKind, PolicySpec, access};
