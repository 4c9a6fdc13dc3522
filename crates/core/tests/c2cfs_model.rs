//! C2Cfs's manager and opener rules against a model of the truth:
//! random opens, reads, overlapping writers and evictions on a few nodes
//! and files, with a table small enough to drop entries. Every read served
//! from a node's own copy or a peer's must return the latest committed
//! version (close-to-open), and every node a manager lists as valid must
//! hold it.

use std::collections::HashMap;

use coopcache_core::c2cfs::{CommitTable, Source, Tcommit};

const NODES: u32 = 4;
const FILES: u64 = 3;

/// A node's copy of a file: the contents it holds and its `Tlocal`, if
/// the manager confirmed it as the latest version.
#[derive(Clone, Copy)]
struct Copy {
    content: u64,
    tlocal: Option<Tcommit>,
}

/// An open writer: its `Topen`, and the contents its open saw (its copy is
/// those with its own writes on top: the origin's file only if no other
/// close came between).
struct Writer {
    node: u32,
    file: u64,
    topen: Tcommit,
    base: u64,
}

/// A reader that fetched but has not yet told the manager.
struct Reader {
    node: u32,
    file: u64,
    tlocal: Tcommit,
    content: u64,
}

/// Contents after writes `by` on top of `base`.
fn written(base: u64, by: u64) -> u64 {
    (base ^ by)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .rotate_left(17)
}

fn run(seed: u64, steps: usize, capacity: usize) -> (usize, usize) {
    let mut rng = seed | 1;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut table = CommitTable::<u64, u64>::new(seed, capacity).unwrap();
    // The origin's contents of each file (the truth).
    let mut origin = [0u64; FILES as usize];
    let mut copies: HashMap<(u32, u64), Copy> = HashMap::new();
    let mut writers: Vec<Writer> = Vec::new();
    let mut readers: Vec<Reader> = Vec::new();
    let (mut from_peers, mut local) = (0, 0);
    for step in 0..steps {
        let node = next(u64::from(NODES)) as u32;
        let file = next(FILES);
        match next(12) {
            // A read: open and fetch from where the rules say.
            0..=3 => {
                let opened = table.open(file);
                let mine = copies.get(&(node, file)).copied();
                let got = match opened.source(node, mine.and_then(|c| c.tlocal), None, step) {
                    Source::Local => {
                        local += 1;
                        mine.expect("a local source has a copy").content
                    }
                    Source::Peer(p) => {
                        from_peers += 1;
                        copies
                            .get(&(p, file))
                            .unwrap_or_else(|| panic!("step {step}: valid peer {p} holds no copy"))
                            .content
                    }
                    Source::Origin => origin[file as usize],
                };
                assert_eq!(
                    got, origin[file as usize],
                    "step {step}: node {node} read a stale version of file {file}"
                );
                readers.push(Reader {
                    node,
                    file,
                    tlocal: opened.tcommit,
                    content: got,
                });
            }
            // A reader that fetched tells the manager it holds the file,
            // maybe after other closes.
            4 | 5 if !readers.is_empty() => {
                let r = readers.swap_remove(next(readers.len() as u64) as usize);
                let tlocal = table.holding(r.file, r.node, r.tlocal, r.content);
                // A fetch the manager refused (a close came since) is not
                // the latest: it never replaces a copy the node has.
                let key = (r.node, r.file);
                if tlocal.is_some() || !copies.contains_key(&key) {
                    let copy = Copy {
                        content: r.content,
                        tlocal,
                    };
                    copies.insert(key, copy);
                }
            }
            // A writer opens.
            6 | 7 => {
                let topen = table.open(file).tcommit;
                let base = origin[file as usize];
                writers.push(Writer {
                    node,
                    file,
                    topen,
                    base,
                });
            }
            // A writer closes: its writes reach the origin on top of what
            // it has now, then the manager hears of it.
            8 | 9 if !writers.is_empty() => {
                let w = writers.swap_remove(next(writers.len() as u64) as usize);
                let id = step as u64 + 1;
                let f = w.file as usize;
                origin[f] = written(origin[f], id);
                let done = table.commit(w.file, w.node, w.topen, origin[f]);
                let copy = Copy {
                    content: written(w.base, id),
                    tlocal: done.valid.then_some(done.tcommit),
                };
                copies.insert((w.node, w.file), copy);
            }
            // An eviction.
            _ => {
                if copies.remove(&(node, file)).is_some() {
                    table.dropped(file, node);
                }
            }
        }
        for f in 0..FILES {
            let opened = table.open(f);
            for &n in opened.valid.as_slice() {
                let c = copies.get(&(n, f)).map(|c| c.content);
                assert_eq!(
                    c,
                    Some(origin[f as usize]),
                    "step {step}: node {n} listed valid for file {f}"
                );
            }
        }
    }
    (local, from_peers)
}

#[test]
fn random_histories_never_read_a_stale_copy() {
    let (mut local, mut peers) = (0, 0);
    for seed in 1..=200 {
        let (l, p) = run(seed, 400, 16);
        local += l;
        peers += p;
    }
    // The histories exercise both cache paths, not only the origin.
    assert!(local > 1000 && peers > 1000, "local {local}, peers {peers}");
}

#[test]
fn a_table_that_drops_entries_costs_origin_reads_never_stale_ones() {
    for seed in 1..=200 {
        run(seed, 400, 1);
    }
}
