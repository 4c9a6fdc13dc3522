//! A brute-force checker, the rules read straight off the module doc by
//! rescanning the whole history for every block read (no ranges, no sweep
//! state), and a property test that it and [`check_with`] agree on small
//! random histories, valid and not.

use super::play::{ops, play};
use super::*;
use proptest::prelude::*;

/// Every committed version of `file`, with the open that committed it.
fn commits(h: &History, file: u64) -> Vec<(Version, OpenId)> {
    let ends = h.events().iter().filter_map(|e| match e.op {
        Op::CloseEnd(Some(v)) if h.open_of(e.open).1 == file => Some((v, e.open)),
        _ => None,
    });
    ends.collect()
}

/// The last write of `open` to `block` among the first `before` events.
fn last_write(h: &History, open: OpenId, block: u64, before: usize) -> Option<ContentId> {
    let mut writes = h.events()[..before].iter().filter_map(|e| match e.op {
        Op::Write { block: b, content } if e.open == open && b == block => Some(content),
        _ => None,
    });
    writes.next_back()
}

/// Block `block` of version `version` of `file`, by replaying versions 1..=v.
fn content(h: &History, file: u64, version: u64, block: u64) -> Option<ContentId> {
    let mut bytes = h.origin.get(&(file, block)).copied();
    for v in 1..=version {
        let commits = commits(h, file);
        let (_, open) = commits
            .iter()
            .find(|c| c.0.0 == v)
            .expect("versions are 1..=n");
        bytes = last_write(h, *open, block, h.events().len()).or(bytes);
    }
    bytes
}

/// Where `open`'s first event satisfying `op` is, if any.
fn position(h: &History, open: OpenId, op: impl Fn(&Op) -> bool) -> Option<usize> {
    h.events().iter().position(|e| e.open == open && op(&e.op))
}

fn range(vs: &[u64]) -> Versions {
    let (lo, hi) = (vs.iter().min().unwrap(), vs.iter().max().unwrap());
    Versions {
        lo: Version(*lo),
        hi: Version(*hi),
    }
}

/// The blocks read in `open` before event `p`, or before block `k` of it,
/// that were not the open's own writes when read.
fn scope_blocks(
    h: &History,
    scope: Snapshot,
    open: OpenId,
    p: usize,
    k: usize,
) -> Vec<(u64, ContentId)> {
    let mut blocks = Vec::new();
    for (q, e) in h.events()[..=p].iter().enumerate() {
        if let Op::Read {
            first,
            ref contents,
        } = e.op
            && e.open == open
            && (q == p || scope == Snapshot::PerOpen)
        {
            let upto = if q == p { k } else { contents.len() };
            for (b, &x) in (first..).zip(&contents[..upto]) {
                if last_write(h, open, b, q).is_none() {
                    blocks.push((b, x));
                }
            }
        }
    }
    blocks
}

/// The rule block `block`, the `k`th of read `p` in `open`, breaks, if any.
fn judge(
    h: &History,
    scope: Snapshot,
    p: usize,
    open: OpenId,
    block: u64,
    seen: ContentId,
    k: usize,
) -> Option<Rule> {
    let (_, file) = h.open_of(open);
    if let Some(wrote) = last_write(h, open, block, p) {
        return (wrote != seen).then_some(Rule::OwnWrite { seen, wrote });
    }
    let n = commits(h, file).iter().map(|c| c.0.0).max().unwrap_or(0);
    let has: Vec<u64> = (0..=n)
        .filter(|&v| content(h, file, v, block) == Some(seen))
        .collect();
    if has.is_empty() {
        return Some(Rule::NoVersion { seen });
    }
    let seen_in = range(&has);
    // The producer: the committed open whose last write to the block is `seen`.
    let all = h.events().len();
    let producer = commits(h, file)
        .into_iter()
        .find(|&(_, o)| last_write(h, o, block, all) == Some(seen));
    if let Some((_, by)) = producer
        && position(h, by, |op| *op == Op::CloseStart).is_none_or(|s| s > p)
    {
        return Some(Rule::Future {
            seen: seen_in,
            writer: h.open_of(by).0,
            by,
        });
    }
    // The floor: the newest version whose close returned before the open.
    let opened = position(h, open, |op| matches!(op, Op::Open { .. })).unwrap();
    let floor = h.events()[..opened]
        .iter()
        .enumerate()
        .filter_map(|(event, e)| match e.op {
            Op::CloseEnd(Some(version)) if h.open_of(e.open).1 == file => Some(Commit {
                version,
                client: h.open_of(e.open).0,
                at: e.at,
                event,
            }),
            _ => None,
        });
    let floor = floor.max_by_key(|c| c.version);
    let l = floor.map_or(0, |c| c.version.0);
    if let Some(required) = floor
        && !has.iter().any(|&v| v >= l)
    {
        return Some(Rule::Stale {
            seen: seen_in,
            required,
        });
    }
    let earlier = scope_blocks(h, scope, open, p, k);
    let holds_all = |v: u64| {
        earlier
            .iter()
            .all(|&(b, x)| content(h, file, v, b) == Some(x))
    };
    let allowed: Vec<u64> = (l..=n).filter(|&v| holds_all(v)).collect();
    let one = allowed.iter().any(|v| has.contains(v));
    (!one).then(|| Rule::Torn {
        seen: seen_in,
        allowed: range(&allowed),
        scope,
    })
}

pub(super) fn brute_check(h: &History, scope: Snapshot) -> Result<(), Violation> {
    for (p, e) in h.events().iter().enumerate() {
        if let Op::Read {
            first,
            ref contents,
        } = e.op
        {
            for (k, (block, &seen)) in (first..).zip(contents).enumerate() {
                if let Some(rule) = judge(h, scope, p, e.open, block, seen, k) {
                    let (client, file) = h.open_of(e.open);
                    return Err(Violation {
                        event: p,
                        at: e.at,
                        client,
                        file,
                        open: e.open,
                        block,
                        rule,
                    });
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]
    /// The checker and the brute force agree, down to the violation, on
    /// random histories of 4 to 14 operations, in both snapshot scopes.
    #[test]
    fn checker_agrees_with_brute_force(ops in ops()) {
        let h = play(&ops);
        for scope in [Snapshot::PerOpen, Snapshot::PerRead] {
            prop_assert_eq!(check_with(&h, scope), brute_check(&h, scope), "{:?}", h.events());
        }
    }
}
