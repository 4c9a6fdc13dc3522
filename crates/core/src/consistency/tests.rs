//! One test per rule (each fails if its rule is taken out of the checker),
//! the recorder's guards, and a long history.

use super::brute::brute_check;
use super::play::{ops, play};
use super::*;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;

const A: NodeId = 1;
const B: NodeId = 2;
const F: u64 = 7;

fn origin(block: u64) -> ContentId {
    ContentId(100 + block)
}

/// A recorder over file `F` of 4 blocks.
fn recorder() -> HistoryRecorder {
    let mut rec = HistoryRecorder::new();
    (0..4).for_each(|b| rec.origin(F, b, origin(b)));
    rec
}

/// `client` writes `writes` in one open and commits `version`, at `at`.
fn commit(rec: &mut HistoryRecorder, client: NodeId, writes: &[(u64, u64)], version: u64, at: u64) {
    let o = rec.open(client, F, at);
    writes
        .iter()
        .for_each(|&(b, c)| rec.write(o, b, ContentId(c), at));
    rec.close_start(o, at);
    rec.close_end(o, Some(Version(version)), at);
}

fn rule(h: &History, scope: Snapshot) -> Rule {
    let found = check_with(h, scope).unwrap_err();
    assert_eq!(Err(found.clone()), brute_check(h, scope));
    found.rule
}

fn ok(h: &History) {
    for scope in [Snapshot::PerOpen, Snapshot::PerRead] {
        assert_eq!(check_with(h, scope), Ok(()));
        assert_eq!(brute_check(h, scope), Ok(()));
    }
}

#[test]
fn a_writer_sees_its_own_writes() {
    let mut rec = recorder();
    let o = rec.open(A, F, 1);
    rec.write(o, 0, ContentId(1000), 2);
    rec.read(o, 0, &[ContentId(1000), origin(1)], 3);
    ok(&rec.finish());
}

#[test]
fn a_writer_missing_its_own_write_is_caught() {
    let mut rec = recorder();
    let o = rec.open(A, F, 1);
    rec.write(o, 0, ContentId(1000), 2);
    rec.read(o, 0, &[origin(0)], 3);
    let h = rec.finish();
    assert_eq!(
        rule(&h, Snapshot::PerOpen),
        Rule::OwnWrite {
            seen: origin(0),
            wrote: ContentId(1000)
        }
    );
}

#[test]
fn bytes_of_no_version_are_caught() {
    let aborted = |rec: &mut HistoryRecorder| {
        let w = rec.open(A, F, 1);
        rec.write(w, 0, ContentId(1000), 1);
        rec.close_start(w, 2);
        rec.close_end(w, None, 3);
        ContentId(1000)
    };
    let cases: [&dyn Fn(&mut HistoryRecorder) -> ContentId; 3] =
        [&|_| ContentId(9), &|_| origin(1), &aborted];
    for case in cases {
        let mut rec = recorder();
        let seen = case(&mut rec);
        let o = rec.open(B, F, 4);
        rec.read(o, 0, &[seen], 5);
        assert_eq!(
            rule(&rec.finish(), Snapshot::PerRead),
            Rule::NoVersion { seen }
        );
    }
}

#[test]
fn bytes_read_before_their_close_began_are_caught() {
    let mut rec = recorder();
    let w = rec.open(A, F, 1);
    rec.write(w, 0, ContentId(1000), 2);
    let r = rec.open(B, F, 3);
    rec.read(r, 0, &[ContentId(1000)], 4);
    rec.close_start(w, 5);
    rec.close_end(w, Some(Version(1)), 6);
    let seen = Versions {
        lo: Version(1),
        hi: Version(1),
    };
    assert_eq!(
        rule(&rec.finish(), Snapshot::PerRead),
        Rule::Future {
            seen,
            writer: A,
            by: w
        }
    );
}

#[test]
fn bytes_of_a_close_in_flight_may_be_seen() {
    let mut rec = recorder();
    let w = rec.open(A, F, 1);
    rec.write(w, 0, ContentId(1000), 2);
    rec.close_start(w, 3);
    let r = rec.open(B, F, 4);
    rec.read(r, 0, &[ContentId(1000), origin(1)], 5);
    rec.close_end(w, Some(Version(1)), 6);
    ok(&rec.finish());
}

#[test]
fn a_read_after_a_close_returned_must_see_it() {
    let mut rec = recorder();
    commit(&mut rec, A, &[(0, 1000)], 1, 1);
    let r = rec.open(B, F, 2);
    rec.read(r, 0, &[origin(0)], 3);
    let found = check(&rec.finish()).unwrap_err();
    let seen = Versions {
        lo: Version(0),
        hi: Version(0),
    };
    let required = Commit {
        version: Version(1),
        client: A,
        at: 1,
        event: 3,
    };
    let stale = Rule::Stale { seen, required };
    assert_eq!(
        found,
        Violation {
            event: 5,
            at: 3,
            client: B,
            file: F,
            open: r,
            block: 0,
            rule: stale
        }
    );
    assert_eq!(
        found.to_string(),
        "event 5 (t=3): client 2, open #1 of file 7, block 0: read v0, but needs v1 or newer: \
         client 1's close committed it and returned at t=1 (event 3), before this open began"
    );
}

#[test]
fn the_newest_returned_close_sets_the_floor() {
    let mut rec = recorder();
    commit(&mut rec, A, &[(0, 1000)], 1, 1);
    commit(&mut rec, A, &[(0, 1001)], 2, 2);
    let r = rec.open(B, F, 3);
    rec.read(r, 0, &[ContentId(1001)], 4);
    rec.read(r, 0, &[ContentId(1000)], 5);
    let found = check_with(&rec.finish(), Snapshot::PerRead).unwrap_err();
    assert_eq!(found.event, 10, "v2 is fine, v1 is not");
    assert!(matches!(
        found.rule,
        Rule::Stale {
            required: Commit {
                version: Version(2),
                ..
            },
            ..
        }
    ));
}

/// Closes return out of commit order: v2's returns first, then v1's. The
/// floor stays v2.
#[test]
fn a_close_returning_late_does_not_lower_the_floor() {
    let mut rec = recorder();
    let (w1, w2) = (rec.open(A, F, 1), rec.open(B, F, 1));
    rec.write(w1, 0, ContentId(1000), 2);
    rec.write(w2, 0, ContentId(1001), 2);
    rec.close_start(w1, 3);
    rec.close_start(w2, 3);
    rec.close_end(w2, Some(Version(2)), 4);
    rec.close_end(w1, Some(Version(1)), 5);
    let r = rec.open(A, F, 6);
    rec.read(r, 0, &[ContentId(1000)], 7);
    let required = Commit {
        version: Version(2),
        client: B,
        at: 4,
        event: 6,
    };
    let seen = Versions {
        lo: Version(1),
        hi: Version(1),
    };
    assert_eq!(
        rule(&rec.finish(), Snapshot::PerRead),
        Rule::Stale { seen, required }
    );
}

#[test]
fn an_open_before_the_close_returned_may_read_the_old_version() {
    let mut rec = recorder();
    let w = rec.open(A, F, 1);
    rec.write(w, 0, ContentId(1000), 1);
    rec.close_start(w, 2);
    let r = rec.open(B, F, 3);
    rec.close_end(w, Some(Version(1)), 3);
    rec.read(r, 0, &[origin(0)], 4);
    ok(&rec.finish());
}

/// B opens, reads block 0 of v0; A commits v1 over blocks 0 and 1; B reads
/// block 1 of v1: two versions in one open, though each read is whole.
#[test]
fn an_open_straddling_a_commit_tears_per_open_but_not_per_read() {
    let mut rec = recorder();
    let r = rec.open(B, F, 1);
    rec.read(r, 0, &[origin(0)], 2);
    commit(&mut rec, A, &[(0, 1000), (1, 1001)], 1, 3);
    rec.read(r, 1, &[ContentId(1001)], 4);
    let h = rec.finish();
    let seen = Versions {
        lo: Version(1),
        hi: Version(1),
    };
    let allowed = Versions {
        lo: Version(0),
        hi: Version(0),
    };
    assert_eq!(
        rule(&h, Snapshot::PerOpen),
        Rule::Torn {
            seen,
            allowed,
            scope: Snapshot::PerOpen
        }
    );
    assert_eq!(check_with(&h, Snapshot::PerRead), Ok(()));
}

#[test]
fn a_read_call_mixing_versions_is_torn() {
    let mut rec = recorder();
    let r = rec.open(B, F, 1);
    commit(&mut rec, A, &[(0, 1000), (1, 1001)], 1, 2);
    rec.read(r, 0, &[origin(0), ContentId(1001)], 3);
    let h = rec.finish();
    assert!(matches!(
        rule(&h, Snapshot::PerRead),
        Rule::Torn {
            scope: Snapshot::PerRead,
            ..
        }
    ));
}

/// Block 0 read before v1 committed is also v1's block 0 (v1 did not
/// change it), so the open is v1 throughout: no reader could tell.
#[test]
fn blocks_a_commit_left_alone_belong_to_it() {
    let mut rec = recorder();
    let r = rec.open(B, F, 1);
    rec.read(r, 0, &[origin(0)], 2);
    commit(&mut rec, A, &[(1, 1001)], 1, 3);
    rec.read(r, 1, &[ContentId(1001)], 4);
    ok(&rec.finish());
}

#[test]
#[should_panic(expected = "used twice")]
fn the_recorder_refuses_reused_contents() {
    let mut rec = recorder();
    let o = rec.open(A, F, 1);
    rec.write(o, 2, origin(2), 1);
}

#[test]
#[should_panic(expected = "gap")]
fn the_recorder_refuses_a_gap_in_versions() {
    let mut rec = recorder();
    commit(&mut rec, A, &[], 2, 1);
    rec.finish();
}

#[test]
#[should_panic(expected = "cannot read in")]
fn the_recorder_refuses_reads_in_a_closing_open() {
    let mut rec = recorder();
    let o = rec.open(A, F, 1);
    rec.close_start(o, 2);
    rec.read(o, 0, &[origin(0)], 3);
}

/// The random histories of the property test break every rule and none.
#[test]
fn random_histories_cover_every_rule() {
    let mut runner = TestRunner::deterministic();
    let mut seen = [0; 6];
    for _ in 0..3000 {
        let ops = ops().new_tree(&mut runner).unwrap().current();
        let kind = match check(&play(&ops)) {
            Ok(()) => 0,
            Err(v) => match v.rule {
                Rule::OwnWrite { .. } => 1,
                Rule::NoVersion { .. } => 2,
                Rule::Future { .. } => 3,
                Rule::Stale { .. } => 4,
                Rule::Torn { .. } => 5,
            },
        };
        seen[kind] += 1;
    }
    assert!(
        seen[0] > 300 && seen.iter().all(|&n| n > 10),
        "ok, then each rule: {seen:?}"
    );
}

/// A long history (the fault harness's size): 8 clients over 4 files of 16
/// blocks, each open reading the snapshot of its file at open. Valid; then
/// with one late read given the origin's bytes of a rewritten block, caught
/// as stale at that read.
#[test]
fn a_long_history_is_checked_whole() {
    let (h, _) = long_history(None);
    assert!(h.events().len() > 20_000);
    assert_eq!(check_with(&h, Snapshot::PerOpen), Ok(()));
    let (h, tampered) = long_history(Some(19_000));
    let found = check(&h).unwrap_err();
    assert_eq!(Some(found.event), tampered);
    assert!(
        matches!(
            found.rule,
            Rule::Stale {
                seen: Versions { lo: Version(0), .. },
                ..
            }
        ),
        "{found}"
    );
}

/// The history of [`a_long_history_is_checked_whole`], and the index of the
/// read made stale on purpose at or after event `tamper`.
fn long_history(tamper: Option<usize>) -> (History, Option<usize>) {
    let mut rng = Pcg64Mcg::seed_from_u64(13);
    let mut rec = HistoryRecorder::new();
    let origin = |f: usize, b: usize| ContentId((f * 16 + b) as u64);
    let mut files: Vec<Vec<ContentId>> = (0..4)
        .map(|f| (0..16).map(|b| origin(f, b)).collect())
        .collect();
    (0..64).for_each(|i| rec.origin(i / 16, i % 16, origin(i as usize / 16, i as usize % 16)));
    let (mut next, mut versions, mut events, mut tampered) = (64, [0; 4], 0, None);
    while events < 20_000 {
        let f = rng.next_u32() as usize % 4;
        let o = rec.open(rng.next_u32() % 8, f as u64, events as u64);
        events += 1;
        let mut mine: Vec<Option<ContentId>> = vec![None; 16];
        for _ in 0..rng.next_u32() % 6 {
            let b = rng.next_u32() as usize % 16;
            if rng.next_u32() % 4 == 0 {
                next += 1;
                rec.write(o, b as u64, ContentId(next), events as u64);
                mine[b] = Some(ContentId(next));
            } else {
                let mut seen = mine[b].unwrap_or(files[f][b]);
                if tamper.is_some_and(|t| events >= t)
                    && tampered.is_none()
                    && seen != origin(f, b)
                    && mine[b].is_none()
                {
                    (seen, tampered) = (origin(f, b), Some(events));
                }
                rec.read(o, b as u64, &[seen], events as u64);
            }
            events += 1;
        }
        rec.close_start(o, events as u64);
        let committed = mine.iter().any(Option::is_some).then(|| {
            versions[f] += 1;
            (0..16).for_each(|b| files[f][b] = mine[b].unwrap_or(files[f][b]));
            Version(versions[f])
        });
        rec.close_end(o, committed, events as u64 + 1);
        events += 2;
    }
    (rec.finish(), tampered)
}
