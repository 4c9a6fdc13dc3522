//! Hostile peers against a real 2-node cluster.
//!
//! - Mallory has a valid certificate from the cluster CA and speaks the
//!   frame protocol, but every block it serves is bad: flipped bits,
//!   truncated, padded, a stale version's bytes, another block's bytes
//!   (and, as a control that the attack path is live, honest bytes). It
//!   gets itself recorded as a holder by reading each block through the
//!   manager, so the manager forwards the next reader to it. It also
//!   pushes bad singlets (N-Chance recirculation) at the real nodes. Every
//!   bad block must be detected (`integrity_failures`) and no bad byte
//!   delivered or kept.
//! - Eve has a certificate from another CA: her handshakes fail both ways,
//!   none of her frames is processed, and she reads nothing.

mod certificate;
#[path = "../common/mod.rs"]
mod common;
mod hash;
mod mallory;
mod nchance;

use bytes::Bytes;
use common::*;
use coopcache_core::coop::{Addr, Level, Msg, NodeId};
use coopcache_node::block::{BlockId, file_id, manager_of};
use coopcache_node::frame::{PROTOCOL_VERSION, Wire, max_frame};
use coopcache_node::link::{read_frame, write_frame};
use coopcache_node::origin::FileVersion;
use coopcache_node::tls::{Identity, SERVER_NAME, init_cluster, issue};
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
pub(crate) const FILES: usize = 10;
pub(crate) const MALLORY: NodeId = 2;
