//! Every target's committed corpus, and seeded mutations of each seed,
//! through the target's function: what CI runs instead of libFuzzer (which
//! needs nightly Rust, cargo-fuzz and an instrumented build of every
//! dependency: most of ten minutes on a fresh 2-core machine before the
//! first input). It finds what a seed or a few bytes off a seed find
//! (the mutations are libFuzzer's simplest: flipped bits, bytes set to
//! extremes, cuts, repeats, insertions), not what coverage guidance
//! finds; the campaigns `scripts/fuzz.sh long` runs are recorded in
//! docs/reliability.md.
//!
//! A failing input is written to `fuzz/artifacts/TARGET/replay-*`, where
//! `cargo fuzz run TARGET FILE` replays it under libFuzzer.

use crate::targets::ALL;
use rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// Mutations tried per seed (115 seeds: about 2 s in all in the ci profile).
const MUTATIONS: usize = 4000;

/// The generator's seed; `FUZZ_REPLAY_SEED` picks another.
const SEED: u64 = 0x5eed_c0de;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut seeds: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (every target needs seeds)", dir.display()))
        .map(|entry| {
            let path = entry.expect("a corpus entry").path();
            let bytes = std::fs::read(&path).expect("a seed");
            (path, bytes)
        })
        .collect();
    seeds.sort();
    seeds
}

/// One of libFuzzer's simple mutations of `seed`.
fn mutate(seed: &[u8], rng: &mut Pcg64Mcg) -> Vec<u8> {
    let mut out = seed.to_vec();
    let at = |rng: &mut Pcg64Mcg, len: usize| (rng.next_u64() % (len as u64 + 1)) as usize;
    for _ in 0..=rng.next_u64() % 3 {
        let len = out.len();
        match rng.next_u64() % 6 {
            0 if len > 0 => {
                let i = at(rng, len - 1);
                out[i] ^= 1 << (rng.next_u64() % 8);
            }
            1 if len > 0 => {
                let i = at(rng, len - 1);
                out[i] = [0, 0xff, 0x7f, 0x80][(rng.next_u64() % 4) as usize];
            }
            2 => out.truncate(at(rng, len)),
            3 if len > 0 => {
                let (a, b) = (at(rng, len), at(rng, len));
                let piece = out[a.min(b)..a.max(b)].to_vec();
                let i = at(rng, out.len());
                out.splice(i..i, piece);
            }
            4 => {
                let i = at(rng, len);
                let n = 1 + rng.next_u64() % 8;
                let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                out.splice(i..i, bytes);
            }
            _ if len > 0 => {
                let i = at(rng, len - 1);
                out[i] = out[i].wrapping_add(1 + (rng.next_u64() % 16) as u8);
            }
            _ => {}
        }
    }
    out
}

/// Runs `input` through `run`; on a panic keeps the input and says where.
fn check(target: &str, run: fn(&[u8]), input: &[u8], what: &str) {
    if catch_unwind(AssertUnwindSafe(|| run(input))).is_ok() {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("artifacts")
        .join(target);
    let kept = std::fs::create_dir_all(&dir).and_then(|()| {
        let path = dir.join(format!("replay-{}", input_name(input)));
        std::fs::write(&path, input).map(|()| path)
    });
    match kept {
        Ok(path) => panic!("{target}: {what} failed; input kept in {}", path.display()),
        Err(e) => panic!("{target}: {what} failed (input not kept: {e}): {input:?}"),
    }
}

/// A file name for an input: its length and a hash of its bytes.
fn input_name(input: &[u8]) -> String {
    let hash = input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    format!("{}-{hash:016x}", input.len())
}

fn seed() -> u64 {
    match std::env::var("FUZZ_REPLAY_SEED") {
        Ok(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("FUZZ_REPLAY_SEED={s}: expected an integer")),
        Err(_) => SEED,
    }
}

#[test]
fn every_target_has_a_corpus_and_a_binary() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (target, _) in ALL {
        assert!(!corpus(target).is_empty(), "{target}: no seeds");
        let bin = dir.join("fuzz_targets").join(format!("{target}.rs"));
        let text = std::fs::read_to_string(&bin).expect("its libFuzzer entry");
        assert!(
            text.contains(&format!("targets::{target}::run")),
            "{} does not run targets::{target}",
            bin.display()
        );
    }
    let bins = std::fs::read_dir(dir.join("fuzz_targets")).unwrap().count();
    assert_eq!(bins, ALL.len(), "a fuzz_targets/ file missing from ALL");
}

#[test]
fn every_seed_and_its_mutations_pass_every_target() {
    let seed = seed();
    eprintln!("mutations seeded with {seed} (FUZZ_REPLAY_SEED)");
    let mut total = 0;
    for (target, run) in ALL {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        for (path, bytes) in corpus(target) {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            check(target, *run, &bytes, &format!("seed {name}"));
            for i in 0..MUTATIONS {
                let input = mutate(&bytes, &mut rng);
                check(
                    target,
                    *run,
                    &input,
                    &format!("mutation {i} of seed {name}"),
                );
            }
            total += 1 + MUTATIONS;
        }
    }
    eprintln!("{total} inputs through {} targets", ALL.len());
}
