//! The checker: one pass over the writes learns which versions hold which
//! bytes of each block, one sweep over the events judges each read.

use super::{Commit, ContentId, History, Op, OpenId, Rule, Snapshot, Version, Versions, Violation};
use std::collections::HashMap;

type Map<K, V> = HashMap<K, V, foldhash::fast::FixedState>;
/// Per (file, block, bytes), the versions holding them.
type HolderMap = Map<(u64, u64, ContentId), Holders>;

/// Checks `history` with one version per open ([`Snapshot::PerOpen`]).
pub fn check(history: &History) -> Result<(), Violation> {
    check_with(history, Snapshot::PerOpen)
}

/// Checks every read of `history` against the module doc's rules, rule 5
/// with `scope`, and returns the first block read that broke one.
pub fn check_with(history: &History, scope: Snapshot) -> Result<(), Violation> {
    let (holders, newest) = holders(history);
    let mut sweep = Sweep {
        history,
        scope,
        holders,
        newest,
        closed: Map::default(),
        opens: Vec::with_capacity(history.opens.len()),
        writes: Map::default(),
    };
    for (event, e) in history.events.iter().enumerate() {
        let (open, at) = (e.open, e.at);
        let (client, file) = history.opens[open.0];
        match e.op {
            Op::Open { .. } => sweep.open(file),
            Op::Read {
                first,
                ref contents,
            } => sweep
                .read(open, first, contents)
                .map_err(|(block, rule)| Violation {
                    event,
                    at,
                    client,
                    file,
                    open,
                    block,
                    rule,
                })?,
            Op::Write { block, content } => _ = sweep.writes.insert((open, block), content),
            Op::CloseStart => sweep.opens[open.0].closing = true,
            Op::CloseEnd(Some(version)) => {
                if sweep.closed.get(&file).is_none_or(|c| c.version < version) {
                    sweep.closed.insert(
                        file,
                        Commit {
                            version,
                            client,
                            at,
                            event,
                        },
                    );
                }
            }
            Op::CloseEnd(None) => {}
        }
    }
    Ok(())
}

/// Which versions hold some bytes of a block, and which open wrote them.
#[derive(Clone, Copy, Debug)]
struct Holders {
    versions: Versions,
    writer: Option<OpenId>,
}

#[derive(Clone, Copy, Debug)]
struct OpenState {
    /// The newest close that returned before the open began: `L(o)`.
    floor: Option<Commit>,
    /// The versions every block read so far in the open may come from.
    scope: Versions,
    closing: bool,
}

struct Sweep<'h> {
    history: &'h History,
    scope: Snapshot,
    holders: HolderMap,
    newest: Map<u64, Version>,
    /// Per file, the newest version whose close has returned.
    closed: Map<u64, Commit>,
    opens: Vec<OpenState>,
    /// Each open's last write to each block, so far.
    writes: Map<(OpenId, u64), ContentId>,
}

impl Sweep<'_> {
    fn open(&mut self, file: u64) {
        let floor = self.closed.get(&file).copied();
        let scope = self.above_floor(file, floor);
        self.opens.push(OpenState {
            floor,
            scope,
            closing: false,
        });
    }

    /// Versions `L(o)..=newest` of `file`.
    fn above_floor(&self, file: u64, floor: Option<Commit>) -> Versions {
        let lo = floor.map_or(Version(0), |c| c.version);
        Versions {
            lo,
            hi: self.newest.get(&file).copied().unwrap_or_default(),
        }
    }

    /// Judges a read's blocks in order; the first that breaks a rule fails.
    fn read(
        &mut self,
        open: OpenId,
        first: u64,
        contents: &[ContentId],
    ) -> Result<(), (u64, Rule)> {
        let state = self.opens[open.0];
        let mut scope = match self.scope {
            Snapshot::PerOpen => state.scope,
            Snapshot::PerRead => self.above_floor(self.history.opens[open.0].1, state.floor),
        };
        for (block, &seen) in (first..).zip(contents) {
            scope = self
                .block(open, state.floor, scope, block, seen)
                .map_err(|rule| (block, rule))?;
        }
        if self.scope == Snapshot::PerOpen {
            self.opens[open.0].scope = scope;
        }
        Ok(())
    }

    /// Rules 1 to 5 for one block; returns the scope narrowed to it.
    fn block(
        &self,
        open: OpenId,
        floor: Option<Commit>,
        scope: Versions,
        block: u64,
        seen: ContentId,
    ) -> Result<Versions, Rule> {
        if let Some(&wrote) = self.writes.get(&(open, block)) {
            return if wrote == seen {
                Ok(scope)
            } else {
                Err(Rule::OwnWrite { seen, wrote })
            };
        }
        let file = self.history.opens[open.0].1;
        let Some(&Holders { versions, writer }) = self.holders.get(&(file, block, seen)) else {
            return Err(Rule::NoVersion { seen });
        };
        if let Some(by) = writer
            && !self.opens[by.0].closing
        {
            return Err(Rule::Future {
                seen: versions,
                writer: self.history.opens[by.0].0,
                by,
            });
        }
        if let Some(required) = floor
            && versions.hi < required.version
        {
            return Err(Rule::Stale {
                seen: versions,
                required,
            });
        }
        let torn = Rule::Torn {
            seen: versions,
            allowed: scope,
            scope: self.scope,
        };
        versions.meet(scope).ok_or(torn)
    }
}

/// For each (file, block, bytes) of the origin or of a committed write, the
/// versions holding those bytes; and each file's newest version.
fn holders(history: &History) -> (HolderMap, Map<u64, Version>) {
    let mut committed = vec![None; history.opens.len()];
    let mut last_write = Map::default();
    let mut newest: Map<u64, Version> = Map::default();
    for e in &history.events {
        match e.op {
            Op::Write { block, content } => _ = last_write.insert((e.open, block), content),
            Op::CloseEnd(Some(version)) => {
                committed[e.open.0] = Some(version);
                let n = newest.entry(history.opens[e.open.0].1).or_default();
                *n = (*n).max(version);
            }
            _ => {}
        }
    }
    // Per block, each version that wrote it: (version, bytes, writer).
    let mut writes: Map<(u64, u64), Vec<_>> = Map::default();
    for (&key, &content) in &history.origin {
        writes
            .entry(key)
            .or_default()
            .push((Version(0), content, None));
    }
    for (&(open, block), &content) in &last_write {
        if let Some(version) = committed[open.0] {
            let key = (history.opens[open.0].1, block);
            writes
                .entry(key)
                .or_default()
                .push((version, content, Some(open)));
        }
    }
    let mut holders = Map::default();
    for ((file, block), mut list) in writes {
        list.sort_unstable_by_key(|w| w.0);
        let newest = newest.get(&file).copied().unwrap_or_default();
        for (i, &(lo, content, writer)) in list.iter().enumerate() {
            // Held until the next version that wrote the block.
            let hi = list.get(i + 1).map_or(newest, |next| Version(next.0.0 - 1));
            holders.insert(
                (file, block, content),
                Holders {
                    versions: Versions { lo, hi },
                    writer,
                },
            );
        }
    }
    (holders, newest)
}
