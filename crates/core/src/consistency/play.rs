//! Small random histories for the property test: operations that a player
//! turns into well-formed recorder calls, with reads that are mostly right
//! and sometimes break each rule.

use super::*;
use proptest::prelude::*;
use std::collections::HashMap;

/// What a random history does next; picks index the opens in that phase.
#[derive(Clone, Debug)]
pub(super) enum Step {
    Open {
        client: u32,
        file: u64,
    },
    Read {
        pick: usize,
        first: u64,
        choices: Vec<u8>,
    },
    Write {
        pick: usize,
        block: u64,
    },
    /// A close begins; if it will commit, it takes the next version now,
    /// so close ends can return out of commit order.
    CloseStart {
        pick: usize,
        commit: bool,
    },
    CloseEnd {
        pick: usize,
    },
    /// A read of the bytes another open of the file wrote last (a dirty
    /// read unless that open has begun to close).
    Peek {
        pick: usize,
    },
    /// Both ends of a committing close at once.
    Close {
        pick: usize,
    },
    /// A whole write session: open, one write, committing close.
    Commit {
        client: u32,
        file: u64,
        block: u64,
    },
}

fn step() -> impl Strategy<Value = Step> {
    // Mostly file 0, so that opens meet.
    let file = || prop_oneof![3 => Just(0u64), 1 => Just(1u64)];
    let commit = || proptest::bool::weighted(0.8);
    prop_oneof![
        2 => (0u32..3, file()).prop_map(|(client, file)| Step::Open { client, file }),
        4 => (0usize..4, 0u64..2, prop::collection::vec(0u8..16, 1..3))
            .prop_map(|(pick, first, choices)| Step::Read { pick, first, choices }),
        3 => (0usize..4, 0u64..3).prop_map(|(pick, block)| Step::Write { pick, block }),
        1 => (0usize..4, commit()).prop_map(|(pick, commit)| Step::CloseStart { pick, commit }),
        1 => (0usize..4).prop_map(|pick| Step::CloseEnd { pick }),
        2 => (0usize..4).prop_map(|pick| Step::Peek { pick }),
        2 => (0usize..4).prop_map(|pick| Step::Close { pick }),
        2 => (0u32..3, file(), 0u64..3).prop_map(|(client, file, block)| Step::Commit { client, file, block }),
    ]
}

/// Histories of 4 to 14 operations, and whether the opens left at the end
/// close (else they stay open, or closing without committing, as if their
/// clients crashed; a committing close always ends).
pub(super) fn ops() -> impl Strategy<Value = (Vec<Step>, bool)> {
    (
        prop::collection::vec(step(), 4..15),
        proptest::bool::weighted(0.7),
    )
}

/// Plays `ops` into a well-formed history over 2 files of 3 blocks: reads
/// mostly return the newest committed bytes (or the open's own write), else
/// the block's latest write (committed or not), any bytes it ever held, or
/// bytes of none.
pub(super) fn play((ops, drain): &(Vec<Step>, bool)) -> History {
    let mut player = Player::default();
    for file in 0..2 {
        for block in 0..3 {
            let c = player.fresh();
            player.rec.origin(file, block, c);
            player.known.insert((file, block), vec![c]);
            player.newest.insert((file, block), c);
        }
    }
    for (i, step) in ops.iter().enumerate() {
        player.step(step, i as u64 / 2);
    }
    let end = ops.len() as u64;
    while *drain && !player.open.is_empty() {
        player.close_start(0, true, end);
    }
    while let Some(i) = player.closing.iter().position(|c| *drain || c.2.is_some()) {
        player.close_end(i, end);
    }
    player.rec.finish()
}

#[derive(Default)]
struct Player {
    rec: HistoryRecorder,
    next: u64,
    /// Every content ever given to each (file, block).
    known: HashMap<(u64, u64), Vec<ContentId>>,
    /// Each (file, block) as the latest committing close left it.
    newest: HashMap<(u64, u64), ContentId>,
    open: Vec<(OpenId, u64)>,
    closing: Vec<(OpenId, u64, Option<Version>)>,
    writes: HashMap<(OpenId, u64), ContentId>,
    /// Every write: open, file, block, bytes.
    log: Vec<(OpenId, u64, u64, ContentId)>,
    versions: HashMap<u64, u64>,
}

impl Player {
    fn fresh(&mut self) -> ContentId {
        self.next += 1;
        ContentId(self.next)
    }

    fn step(&mut self, step: &Step, at: u64) {
        let (opens, closings) = (self.open.len(), self.closing.len());
        match *step {
            Step::Open { client, file } => self.open.push((self.rec.open(client, file, at), file)),
            Step::Read {
                pick,
                first,
                ref choices,
            } if opens > 0 => self.read(self.open[pick % opens], first, choices, at),
            Step::Write { pick, block } if opens > 0 => {
                self.write(self.open[pick % opens], block, at)
            }
            Step::Peek { pick } if opens > 0 => {
                let (o, file) = self.open[pick % opens];
                let last = self.log.iter().rev().find(|w| w.0 != o && w.1 == file);
                if let Some(&(_, _, block, c)) = last {
                    self.rec.read(o, block, &[c], at);
                }
            }
            Step::CloseStart { pick, commit } if opens > 0 => {
                self.close_start(pick % opens, commit, at)
            }
            Step::CloseEnd { pick } if closings > 0 => self.close_end(pick % closings, at),
            Step::Close { pick } if opens > 0 => {
                self.close_start(pick % opens, true, at);
                self.close_end(closings, at);
            }
            Step::Commit {
                client,
                file,
                block,
            } => {
                self.open.push((self.rec.open(client, file, at), file));
                self.write(self.open[opens], block, at);
                self.close_start(opens, true, at);
                self.close_end(closings, at);
            }
            _ => {}
        }
    }

    fn read(&mut self, (o, file): (OpenId, u64), first: u64, choices: &[u8], at: u64) {
        let contents: Vec<ContentId> = (first..)
            .zip(choices)
            .map(|(block, &c)| {
                let good = self
                    .writes
                    .get(&(o, block))
                    .or(self.newest.get(&(file, block)));
                let any = &self.known[&(file, block)];
                match (c, good) {
                    (0..6, Some(&good)) => good,
                    (6..10, _) => any[any.len() - 1],
                    (15, _) => ContentId(1 << 40),
                    _ => any[c as usize % any.len()],
                }
            })
            .collect();
        self.rec.read(o, first, &contents, at);
    }

    fn write(&mut self, (o, file): (OpenId, u64), block: u64, at: u64) {
        let c = self.fresh();
        self.rec.write(o, block, c, at);
        self.writes.insert((o, block), c);
        self.known.entry((file, block)).or_default().push(c);
        self.log.push((o, file, block, c));
    }

    fn close_start(&mut self, i: usize, commit: bool, at: u64) {
        let (o, file) = self.open.remove(i);
        self.rec.close_start(o, at);
        let version = commit.then(|| {
            let n = self.versions.entry(file).or_default();
            *n += 1;
            Version(*n)
        });
        self.closing.push((o, file, version));
    }

    fn close_end(&mut self, i: usize, at: u64) {
        let (o, file, version) = self.closing.remove(i);
        if version.is_some() {
            for ((_, block), &c) in self.writes.iter().filter(|w| w.0.0 == o) {
                self.newest.insert((file, *block), c);
            }
        }
        self.rec.close_end(o, version, at);
    }
}
