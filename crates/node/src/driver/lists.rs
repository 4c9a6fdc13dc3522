//! Directory listings kept by their managers, as the driver carries them
//! (`coopcache_core::c2cfs::listings`): it hands the core this node's
//! listings and changes and the peers' listing frames, lists the origin
//! when the core asks (a task of its own, the answer back as an event),
//! and answers the callers. Whom to ask, what to keep, when a listing is
//! stale and whom to believe are the core's.

use super::*;
use crate::listing::DirListing;
use crate::origin::{DirEntry, EntryKind, tree::join};
use coopcache_core::c2cfs::listings::{ListAction, ListMsg};

/// Files stated at once while a manager fills in a listing's versions.
const STAT_AHEAD: usize = 16;

/// A caller of the listing machine, waiting for its answer.
pub(super) enum ListWaiter {
    /// A listing; `None`: list the origin.
    List(oneshot::Sender<Option<DirListing>>),
    /// A change; whether every member that could keep a listing of the
    /// directory dropped it.
    Changed(oneshot::Sender<bool>),
}

/// What the driver hears about listings.
pub enum ListEvent {
    /// This node lists `dir` (`exclusive` mode).
    List {
        /// The directory (`""`: the origin's root).
        dir: Arc<str>,
        /// The listing, or `None`: list the origin.
        reply: oneshot::Sender<Option<DirListing>>,
    },
    /// An entry of `dir` changed at the origin through this node (with
    /// `subtree`: `dir` itself was made, removed or moved).
    Changed {
        /// The directory.
        dir: Arc<str>,
        /// Every listing at or below it goes.
        subtree: bool,
        /// Whether the change was noted by every member concerned.
        reply: oneshot::Sender<bool>,
    },
    /// The origin's listing of `dir`, which the machine asked for.
    Listed {
        /// The directory.
        dir: Arc<str>,
        /// Its listing, or `None` if the origin failed.
        listing: Option<DirListing>,
    },
}

impl Driver {
    pub(super) fn on_list_event(&mut self, ev: ListEvent) {
        let now = self.clock.micros();
        match ev {
            ListEvent::List { dir, reply } => {
                let req = self.list_waiter(ListWaiter::List(reply));
                self.node.handle_list(req, dir, now);
            }
            ListEvent::Changed {
                dir,
                subtree,
                reply,
            } => {
                let req = self.list_waiter(ListWaiter::Changed(reply));
                self.node.handle_dir_changed(req, dir, subtree, now);
            }
            ListEvent::Listed { dir, listing } => self.node.handle_listed(&dir, listing, now),
        }
    }

    /// A peer's listing frame.
    pub(super) fn on_list_msg(&mut self, from: NodeId, msg: ListMsg<DirListing>) {
        *self.received.entry(from).or_default() += 1;
        let now = self.clock.micros();
        self.node.handle_message(from, Msg::List(msg), now);
    }

    /// Files `waiter` under a fresh request id. The machine answers every
    /// request (at once when over its own bound), so the table holds at
    /// most its requests in flight.
    fn list_waiter(&mut self, waiter: ListWaiter) -> u64 {
        self.next_list_req += 1;
        self.list_waiters.insert(self.next_list_req, waiter);
        self.next_list_req
    }

    /// Carries out what the listing machine decided.
    pub(super) fn apply_list(&mut self, action: ListAction<DirListing>) {
        match action {
            ListAction::Send { to, msg } => {
                if self.send(to, Wire::List(msg)) {
                    *self.sent.entry(to).or_default() += 1;
                }
            }
            ListAction::List { dir } => self.list_origin(dir),
            ListAction::Listed { req, listing } => {
                if let Some(ListWaiter::List(reply)) = self.list_waiters.remove(&req) {
                    let _ = reply.send(listing);
                }
            }
            ListAction::Noted { req, assured } => {
                if !assured {
                    tracing::debug!("a directory's change was not noted by every member");
                }
                if let Some(ListWaiter::Changed(reply)) = self.list_waiters.remove(&req) {
                    let _ = reply.send(assured);
                }
            }
            ListAction::Violation { from, why } => {
                let name = self.member_name(from);
                tracing::warn!(peer = %name, id = from, "refused a peer's listing message: {why}");
                self.metrics.violation(name, 1);
            }
        }
    }

    /// Lists `dir` at the origin on a task of its own, filling in the
    /// version of each file the listing gave none (a directory's), so a
    /// lister needs no stat; the answer comes back as
    /// [`ListEvent::Listed`]. A listing already too large to send is not
    /// filled in (the machine keeps or sends none such).
    fn list_origin(&mut self, dir: Arc<str>) {
        let origin = self.origin.clone();
        let events = self.events.clone();
        let metrics = self.metrics.clone();
        let max = self.cfg.block_size as usize;
        tokio::spawn(async move {
            let listing = match origin.list(&dir).await {
                Ok(entries) => Some(filled(&origin, &metrics, &dir, entries, max).await),
                Err(e) => {
                    tracing::debug!(%dir, error = %e, "a manager's listing failed");
                    None
                }
            };
            let _ = events
                .send(Event::Lists(ListEvent::Listed { dir, listing }))
                .await;
        });
    }
}

/// `dir`'s listing of `entries`, each file's version stated where the
/// listing gave none, unless it is over `max` bytes already. A file whose
/// stat fails keeps no version (its lister states it).
async fn filled(
    origin: &Origin,
    metrics: &Metrics,
    dir: &Arc<str>,
    entries: Vec<DirEntry>,
    max: usize,
) -> DirListing {
    use coopcache_core::c2cfs::listings::Listing;
    use futures::StreamExt;
    let bare = DirListing::new(dir.clone(), entries);
    if bare.bytes() > max {
        return bare;
    }
    let entries: Vec<DirEntry> = futures::stream::iter(bare.entries().iter().cloned())
        .map(|mut e| async move {
            if e.kind == EntryKind::File && e.version.is_none() {
                metrics.origin_stats.inc();
                e.version = origin.stat(&join(dir, &e.name)).await.ok();
            }
            e
        })
        .buffered(STAT_AHEAD)
        .collect()
        .await;
    DirListing::new(dir.clone(), entries)
}
