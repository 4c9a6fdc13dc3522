//! Quiescence of nodes running in one process (tests, benchmarks, a
//! replay request by request): every node waits on nothing and every
//! protocol message any node sent has been received by its peer.

use crate::NodeHandle;
use crate::driver::Status;
use crate::handle::NodeError;
use std::sync::Arc;
use std::time::Duration;

/// Waits until `nodes` are at quiescence, polling their status back to
/// back (a message crosses loopback in tens of microseconds; a timer would
/// wait milliseconds). Returns each node's status at that moment, or an
/// error naming what was still moving after `within`.
pub async fn quiescence(
    nodes: &[Arc<NodeHandle>],
    within: Duration,
) -> Result<Vec<Status>, NodeError> {
    let deadline = crate::clock::now() + within;
    loop {
        let mut all = Vec::with_capacity(nodes.len());
        for node in nodes {
            all.push(node.status().await?);
        }
        match moving(&all) {
            None => return Ok(all),
            Some(what) if crate::clock::now() > deadline => {
                return Err(NodeError::NotQuiet(format!(
                    "not at quiescence after {within:?}: {what}"
                )));
            }
            Some(_) => tokio::task::yield_now().await,
        }
    }
}

/// What keeps `all` from quiescence, if anything.
fn moving(all: &[Status]) -> Option<String> {
    if let Some(s) = all.iter().find(|s| !s.quiet) {
        return Some(format!("node {} is waiting on a peer or a read", s.id));
    }
    for s in all {
        for (&peer, &sent) in &s.sent {
            let Some(to) = all.iter().find(|t| t.id == peer) else {
                continue; // not one of ours: nothing to compare
            };
            let got = to.received.get(&s.id).copied().unwrap_or(0);
            if got != sent {
                return Some(format!(
                    "node {peer} has received {got} of the {sent} messages node {} sent it",
                    s.id
                ));
            }
        }
    }
    None
}
