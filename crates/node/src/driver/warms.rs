//! Warm-ups placed on managers, as the driver carries them: it hands the
//! core (`coopcache_core::warm`) each file a warm-up of this node reaches
//! and each peer's request, and carries out the answers: frames, the
//! warm-up's file read here or counted as read elsewhere, a peer's file
//! handed to the warm server (`crate::warm::serve`) to read through this
//! node's cache. Where a file is read, whom to believe and when to give
//! up are the core's.

use super::*;
use coopcache_core::warm::{WarmAction, WarmMsg};

/// Where a warm-up's file was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Read it here.
    Here,
    /// Its manager read it into its cache: `bytes` bytes.
    Elsewhere {
        /// Bytes it read.
        bytes: u64,
    },
}

/// A peer's file for the warm server.
#[derive(Debug)]
pub struct ServeWarm {
    /// The member that asked.
    pub from: NodeId,
    /// Its nonce.
    pub nonce: u64,
    /// The file.
    pub path: Arc<str>,
}

/// What the driver hears about warm-ups.
pub enum WarmEvent {
    /// A warm-up of this node reaches `path`, of `size` bytes.
    Place {
        /// The file.
        path: Arc<str>,
        /// Its size.
        size: u64,
        /// Where it was read, or that it is to be read here.
        reply: oneshot::Sender<Placement>,
    },
    /// The warm server read (`Some(bytes)`) or could not read a peer's
    /// file.
    Served {
        /// The member that asked.
        from: NodeId,
        /// Its nonce.
        nonce: u64,
        /// Bytes read, if it was.
        bytes: Option<u64>,
    },
}

impl Driver {
    /// Where peers' files go to be read (the warm server's queue, as long
    /// as the core's bound on files served at once).
    pub fn serve_warms_to(&mut self, server: mpsc::Sender<ServeWarm>) {
        self.warm_server = Some(server);
    }

    pub(super) fn on_warm_event(&mut self, ev: WarmEvent) {
        let now = self.clock.micros();
        match ev {
            WarmEvent::Place { path, size, reply } => {
                self.next_warm_req += 1;
                let req = self.next_warm_req;
                // The core answers every call (at once, or by a deadline),
                // so this map holds at most the calls in flight.
                self.warm_waiters.insert(req, reply);
                self.node.handle_warm_call(req, path, size, now);
            }
            WarmEvent::Served { from, nonce, bytes } => {
                self.node.handle_warm_served(from, nonce, bytes, now);
            }
        }
    }

    /// A peer's warm-up frame.
    pub(super) fn on_warm_msg(&mut self, from: NodeId, msg: WarmMsg) {
        *self.received.entry(from).or_default() += 1;
        let now = self.clock.micros();
        self.node.handle_message(from, Msg::Warm(msg), now);
    }

    /// Carries out what warm-up placement decided.
    pub(super) fn apply_warm(&mut self, action: WarmAction) {
        match action {
            WarmAction::Send { to, msg } => {
                if self.send(to, Wire::Warm(msg)) {
                    *self.sent.entry(to).or_default() += 1;
                }
            }
            WarmAction::ReadHere { req } => self.answer_warm(req, Placement::Here),
            WarmAction::Placed { req, bytes, .. } => {
                self.answer_warm(req, Placement::Elsewhere { bytes });
            }
            WarmAction::Serve { from, nonce, path } => {
                let queued = self
                    .warm_server
                    .as_ref()
                    .is_some_and(|server| server.try_send(ServeWarm { from, nonce, path }).is_ok());
                if !queued {
                    // No server (a node built without one) or it is gone:
                    // the asker reads the file itself.
                    let now = self.clock.micros();
                    self.node.handle_warm_served(from, nonce, None, now);
                }
            }
            WarmAction::Violation { from, why } => {
                let name = self.member_name(from);
                tracing::warn!(peer = %name, id = from, "refused a peer's warm-up message: {why}");
                self.metrics.violation(name, 1);
            }
        }
    }

    fn answer_warm(&mut self, req: u64, placement: Placement) {
        if let Some(reply) = self.warm_waiters.remove(&req) {
            let _ = reply.send(placement);
        }
    }
}
