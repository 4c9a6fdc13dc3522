//! C2Cfs close-to-open consistency (c2cfs-collective-caching-close-to-open.txt,
//! section 3): what a file's manager keeps and what an opener decides from
//! it, as pure state machines that the simulator and the daemon drive.
//!
//! Per file the manager keeps a commit timestamp ([`Tcommit`]) and the set
//! of nodes holding the latest version ([`ValidCopies`], the paper's
//! `CVMap`), in a [`CommitTable`]. An open asks for both ([`Opened`]) and
//! decides where its bytes come from ([`Opened::source`]): its own copy if
//! its `Tlocal` equals `Tcommit`, else a valid peer, else the origin, which
//! is always safe. A reader that fetched the latest version says so
//! ([`CommitTable::holding`]) and joins the valid set. A close writes
//! through to the origin first, then commits ([`CommitTable::commit`]):
//! `Tcommit` moves on, and the valid set becomes `{writer}` if no other
//! close came between the writer's open (`Topen`) and its close, else
//! empty, exactly as the paper says.
//!
//! [`exclusive`] runs this between the nodes of a live cluster in `exclusive`
//! mode: each node manages the files rendezvous hashing gives it, and asks
//! the origin for versions itself rather than trusting a peer's.
//!
//! [`VersionCache`] is `shared` mode's: how long a node trusts a version
//! the origin gave it (`--attr-ttl`).
//!
//! [`locks`] is the file locks a manager keeps for its files' lockers
//! across the cluster (flock and POSIX record locks, with waiters and a
//! lease per node), which the paper leaves to the local file system.
//!
//! Two things the paper leaves to its central server and we cannot:
//!
//! - **Soft state.** A manager keeps a bounded table and may drop a file's
//!   entry; a new manager (the old one failed) starts empty. So `Tcommit`
//!   values are drawn from one counter per manager and carry the manager's
//!   epoch ([`Tcommit`]): a value a client still holds is never issued
//!   again, and an entry dropped and rebuilt can never revalidate an old
//!   copy. Rebuilding costs origin reads, never a stale read.
//! - **Versions.** Each entry records the origin's version of the latest
//!   commit (or of the first copy fetched since the entry began), so an
//!   opener in `shared` mode can compare it with the origin's own version:
//!   a writer outside the cluster changed the file if they differ.

mod commits;
pub mod exclusive;
pub mod listings;
pub mod locks;
mod source;
mod valid;
mod versions;

pub use commits::{CommitTable, Committed, Opened, Tcommit};
pub use source::Source;
pub use valid::{MAX_VALID, ValidCopies};
pub use versions::VersionCache;
