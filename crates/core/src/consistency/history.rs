//! Recording a history: the recorder checks that the harness uses it in a
//! well-formed way, so the checker only ever judges the system under test.

use super::{ContentId, Event, Op, OpenId, Version};
use crate::coop::NodeId;
use std::collections::{HashMap, HashSet};

/// A recorded history: the events in order, who made each open, and the
/// origin's content. Built only by a [`HistoryRecorder`], so it is well
/// formed: stamps never decrease, reads and writes happen in open opens,
/// contents are unique per block and each file's versions are `1..=n`.
#[derive(Clone, Debug, Default)]
pub struct History {
    pub(super) events: Vec<Event>,
    /// Per open: the client and the file.
    pub(super) opens: Vec<(NodeId, u64)>,
    /// Version 0: the content of (file, block) at the origin.
    pub(super) origin: HashMap<(u64, u64), ContentId>,
}

impl History {
    /// The events in the order they were recorded.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The client and file of `open`; panics if `open` is not this
    /// history's.
    pub fn open_of(&self, open: OpenId) -> (NodeId, u64) {
        self.opens[open.0]
    }
}

/// Where an open is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Open,
    Closing,
    Closed,
}

/// Builds a [`History`] from a harness's calls (the module doc says when
/// to make each call).
///
/// # Panics
///
/// Every method panics on a call that makes the history malformed (a bug in
/// the harness, not in the system under test), naming the call: a stamp
/// earlier than the last one, a read or write in an open that is closing or
/// closed, a close started twice or ended before it started, a content id
/// used twice for one block, a version committed twice or as 0;
/// [`finish`](Self::finish) panics if a file's versions have a gap.
#[derive(Debug, Default)]
pub struct HistoryRecorder {
    history: History,
    phases: Vec<Phase>,
    last_at: u64,
    contents: HashSet<(u64, u64, ContentId)>,
    committed: HashSet<(u64, Version)>,
}

impl HistoryRecorder {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares version 0 of `block` of `file`: the origin's content. Can
    /// be called at any time, once per block.
    pub fn origin(&mut self, file: u64, block: u64, content: ContentId) {
        let old = self.history.origin.insert((file, block), content);
        assert!(
            old.is_none(),
            "origin content of file {file} block {block} declared twice"
        );
        self.claim(file, block, content);
    }

    /// `client` begins opening `file`.
    pub fn open(&mut self, client: NodeId, file: u64, at: u64) -> OpenId {
        let open = OpenId(self.history.opens.len());
        self.history.opens.push((client, file));
        self.phases.push(Phase::Open);
        self.push(open, at, Op::Open { client, file });
        open
    }

    /// A read in `open` of blocks `first..` returned `contents`.
    pub fn read(&mut self, open: OpenId, first: u64, contents: &[ContentId], at: u64) {
        self.expect(open, Phase::Open, "read in");
        let contents = contents.to_vec();
        self.push(open, at, Op::Read { first, contents });
    }

    /// `open` wrote `content` to `block`.
    pub fn write(&mut self, open: OpenId, block: u64, content: ContentId, at: u64) {
        self.expect(open, Phase::Open, "write in");
        self.claim(self.history.opens[open.0].1, block, content);
        self.push(open, at, Op::Write { block, content });
    }

    /// The close of `open` begins.
    pub fn close_start(&mut self, open: OpenId, at: u64) {
        self.expect(open, Phase::Open, "start closing");
        self.phases[open.0] = Phase::Closing;
        self.push(open, at, Op::CloseStart);
    }

    /// The close of `open` returned, having committed version `committed`
    /// of the file (`None`: it committed nothing).
    pub fn close_end(&mut self, open: OpenId, committed: Option<Version>, at: u64) {
        self.expect(open, Phase::Closing, "end the close of");
        self.phases[open.0] = Phase::Closed;
        if let Some(version) = committed {
            let file = self.history.opens[open.0].1;
            assert!(
                version.0 > 0,
                "{open} committed {version}: versions start at 1"
            );
            let fresh = self.committed.insert((file, version));
            assert!(fresh, "{open} committed {version} of file {file} twice");
        }
        self.push(open, at, Op::CloseEnd(committed));
    }

    /// The history, once every committed version of every file is in.
    pub fn finish(self) -> History {
        let mut newest: HashMap<u64, (u64, u64)> = HashMap::new();
        for &(file, version) in &self.committed {
            let (count, max) = newest.entry(file).or_default();
            *count += 1;
            *max = (*max).max(version.0);
        }
        for (file, (count, max)) in newest {
            assert_eq!(
                count, max,
                "file {file} has a gap in its versions 1..={max}"
            );
        }
        self.history
    }

    fn expect(&self, open: OpenId, phase: Phase, what: &str) {
        let now = self.phases.get(open.0);
        assert!(
            now == Some(&phase),
            "cannot {what} {open}: it is {now:?}, not {phase:?}"
        );
    }

    fn claim(&mut self, file: u64, block: u64, content: ContentId) {
        let fresh = self.contents.insert((file, block, content));
        assert!(fresh, "{content} used twice for file {file} block {block}");
    }

    fn push(&mut self, open: OpenId, at: u64, op: Op) {
        let last = self.last_at;
        assert!(
            at >= last,
            "{op:?} of {open} at t={at} is stamped before the last event (t={last})"
        );
        self.last_at = at;
        self.history.events.push(Event { open, at, op });
    }
}
