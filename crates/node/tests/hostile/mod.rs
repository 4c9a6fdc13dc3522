//! Hostile peers against a real 2-node cluster.
//!
//! - Mallory has a valid certificate from the cluster CA and speaks the
//!   frame protocol, but every block it serves is bad: flipped bits,
//!   truncated, padded, a stale version's bytes, another block's bytes
//!   (and, as a control that the attack path is live, honest bytes). It
//!   gets itself recorded as a block's first holder by reading it first
//!   (and recording its digest honestly, as the manager asks), so the
//!   manager forwards the next readers to it. It also pushes bad singlets
//!   (N-Chance recirculation) and placements at the real nodes. Every bad
//!   block must be detected (`integrity_failures`) and no bad byte
//!   delivered or kept.
//! - `roles`: Mallory sends each message from a role she does not hold
//!   (the forged record, read and invalidation of the attack that once
//!   made every node serve her bytes, and every other rule): each is
//!   refused and counted against her (`protocol_violations`), and every
//!   node goes on serving the origin's bytes.
//! - `commits`: C2Cfs `exclusive` mode. Mallory's answers to opens,
//!   commits and forgets sent to another node are refused and counted
//!   against her; her commits and forgets (a member may send them) cost
//!   the file's manager a stat of the origin and never set a version; an
//!   opener refuses her answer that carries another path's version.
//! - Eve has a certificate from another CA: her handshakes fail both ways,
//!   none of her frames is processed, and she reads nothing.

mod certificate;
mod commits;
use crate::common;
mod hash;
mod mallory;
mod nchance;
mod roles;

use bytes::Bytes;
use common::*;
use coopcache_core::c2cfs::exclusive::CommitMsg;
use coopcache_core::coop::{Level, NodeId};
use coopcache_core::protocol::{Content, PeerMsg, Recorded};
use coopcache_node::block::{Block, BlockId, first_block, manager_of};
use coopcache_node::frame::{PROTOCOL_VERSION, Wire, max_frame};
use coopcache_node::link::{read_frame, write_frame};
use coopcache_node::origin::{FileVersion, PathVersion};
use coopcache_node::tls::{Identity, SERVER_NAME, init_cluster, issue_as};
use mallory::*;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

pub(crate) const BLOCK_SIZE: u32 = 4096;
pub(crate) const BLOCKS_PER_FILE: u32 = 8;
/// Files per attacked cluster: enough that, whatever ids their versions get,
/// a few are managed by each member (each of 16 misses Mallory with
/// probability 2/3).
pub(crate) const FILES: usize = 16;
pub(crate) const MALLORY: NodeId = 9;
