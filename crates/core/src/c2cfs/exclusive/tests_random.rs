//! Random interleavings on three nodes, checked for close-to-open: an open
//! is never answered with a version older than one whose commit completed
//! before the open began. The origin's versions are increasing integers.
//!
//! Messages between two nodes stay in order (a link), links interleave
//! freely, stats answer with any version the origin held while they were
//! in flight, and members change only while the cluster is quiet (a view
//! change that two nodes see at different times is the residual risk the
//! module doc describes, outside what this checks). Nothing is lost, and
//! time moves on only while no message or stat is in flight, so no timeout
//! fires on a request that would still be answered.

use super::harness::{Cluster, STABLE};
use crate::c2cfs::Tcommit;
use crate::coop::NodeId;
use rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::HashMap;
use std::sync::Arc;

struct Run {
    c: Cluster,
    rng: Pcg64Mcg,
    files: Vec<Arc<str>>,
    /// Per file, the newest version whose commit completed.
    completed: HashMap<Arc<str>, u64>,
    /// Opens in flight: file, the version they must see at least, opener.
    opens: HashMap<u64, (Arc<str>, u64, NodeId)>,
    /// Commits in flight: file, the version written.
    commits: HashMap<u64, (Arc<str>, u64)>,
    /// The `Topen` each node's last open of each file found.
    topens: HashMap<(NodeId, Arc<str>), Tcommit>,
    /// Whether node 3 is a member.
    three_in: bool,
    next_req: u64,
    seed: u64,
}

impl Run {
    fn pick(&mut self, n: usize) -> usize {
        (self.rng.next_u64() % n as u64) as usize
    }

    fn node(&mut self) -> NodeId {
        let nodes = if self.three_in { 3 } else { 2 };
        self.pick(nodes) as NodeId + 1
    }

    fn file(&mut self) -> Arc<str> {
        let at = self.pick(self.files.len());
        self.files[at].clone()
    }

    fn open(&mut self) {
        let (n, f) = (self.node(), self.file());
        self.next_req += 1;
        let need = self.completed.get(&f).copied().unwrap_or(0);
        self.opens.insert(self.next_req, (f.clone(), need, n));
        let now = self.c.now;
        self.c.node(n).handle_open(self.next_req, f, now);
    }

    fn commit(&mut self) {
        let (n, f) = (self.node(), self.file());
        let v = self.c.write(&f);
        let topen = match self.pick(4) {
            0 => None,
            _ => self.topens.get(&(n, f.clone())).copied(),
        };
        self.next_req += 1;
        self.commits.insert(self.next_req, (f.clone(), v));
        let now = self.c.now;
        self.c.node(n).handle_commit(self.next_req, f, topen, now);
    }

    /// Delivers the oldest message of a random message's link.
    fn deliver(&mut self) {
        if self.c.wire.is_empty() {
            return;
        }
        let at = self.pick(self.c.wire.len());
        let link = (self.c.wire[at].0, self.c.wire[at].1);
        let first = (self.c.wire.iter())
            .position(|m| (m.0, m.1) == link)
            .expect("the message itself");
        let m = self.c.wire.remove(first).expect("there");
        self.c.wire.push_front(m);
        self.c.deliver_one();
    }

    /// Answers a random stat with a version the origin held meanwhile, or
    /// (rarely) a failure.
    fn stat(&mut self) {
        if self.c.stats.is_empty() {
            return;
        }
        let at = self.pick(self.c.stats.len());
        let s = &self.c.stats[at];
        let (low, high) = (s.issued_at.unwrap_or(0), self.c.origin[&s.path]);
        let result = match self.pick(20) {
            0 => Err(()),
            _ => Ok(low + self.rng.next_u64() % (high - low + 1)),
        };
        self.c.answer_stat(at, result);
    }

    fn quiet(&mut self) -> bool {
        self.c.wire.is_empty() && self.c.nodes.values().all(|n| n.is_quiet())
    }

    /// Time passes, or node 3 leaves or joins (every view at once).
    fn while_quiet(&mut self) {
        if !self.quiet() {
            return;
        }
        let now = self.c.now + self.rng.next_u64() % (2 * STABLE);
        self.c.advance(now);
        if self.pick(3) == 0 {
            self.three_in = !self.three_in;
            let members: &[NodeId] = if self.three_in { &[1, 2, 3] } else { &[1, 2] };
            for n in 1..=3 {
                self.c.node(n).set_members(members, now);
            }
            self.c.collect();
        }
    }

    /// Checks every completion so far.
    fn check(&mut self, step: usize) {
        let seed = self.seed;
        for (req, answer) in std::mem::take(&mut self.c.opened) {
            let (f, need, n) = self.opens.remove(&req).expect("an open of ours");
            let Some((t, v)) = answer else { continue };
            assert!(
                v >= need,
                "seed {seed} step {step}: node {n} opened {f} at version {v}, \
                 but a commit of version {need} completed before the open began"
            );
            assert!(
                v <= self.c.origin[&f],
                "seed {seed}: a version never written"
            );
            self.topens.insert((n, f), t);
        }
        for (req, _) in std::mem::take(&mut self.c.committed) {
            let (f, v) = self.commits.remove(&req).expect("a commit of ours");
            let done = self.completed.entry(f).or_insert(0);
            *done = (*done).max(v);
        }
    }
}

fn run(seed: u64, steps: usize) {
    let mut c = Cluster::new(&[1, 2, 3]);
    c.auto_stat = false;
    let files: Vec<Arc<str>> = (0..3).map(|i| format!("/r{i}").into()).collect();
    for f in &files {
        c.origin.insert(f.clone(), 1);
    }
    let mut r = Run {
        c,
        rng: Pcg64Mcg::seed_from_u64(seed),
        files,
        completed: HashMap::new(),
        opens: HashMap::new(),
        commits: HashMap::new(),
        topens: HashMap::new(),
        three_in: true,
        next_req: 0,
        seed,
    };
    for step in 0..steps {
        match r.pick(13) {
            0..=2 => r.open(),
            3..=4 => r.commit(),
            5..=8 => r.deliver(),
            9..=11 => r.stat(),
            _ => r.while_quiet(),
        }
        r.c.collect();
        r.check(step);
    }
    // Drain: every request completes.
    while !r.quiet() {
        r.deliver();
        r.stat();
        r.c.collect();
        r.check(steps);
    }
    assert!(
        r.opens.is_empty() && r.commits.is_empty(),
        "seed {seed}: stuck"
    );
    assert!(
        r.c.violations.is_empty(),
        "seed {seed}: {:?}",
        r.c.violations
    );
    // Every first block a manager served, its opener reads, at the version
    // the open was answered with, and no other (nothing times out here).
    let mut served: Vec<_> = (r.c.served.iter())
        .map(|(m, n, f, v)| (*m, *n, f.clone(), *v))
        .collect();
    let mut read: Vec<_> = (r.c.reads_first.iter())
        .map(|(n, f, v, m)| (*m, *n, f.clone(), *v))
        .collect();
    served.sort();
    read.sort();
    assert_eq!(served, read, "seed {seed}");
    assert!(served.iter().all(|(m, n, ..)| m != n), "seed {seed}");
}

#[test]
fn random_interleavings_keep_close_to_open() {
    let base = 0x5eed_c2cf;
    for i in 0..200 {
        run(base + i, 400);
    }
}
