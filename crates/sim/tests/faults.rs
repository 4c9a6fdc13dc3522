//! The live protocol under seeded faults (issue 13): the CI share of the
//! soak `coopcache sim faults` runs at length (docs/reliability.md). Each
//! seed draws a cluster, an algorithm and fault rates; the harness checks
//! every invariant after every step and names the first one broken with
//! the command that replays it.
//!
//! `FAULT_SEEDS` and `FAULT_OPS` scale it (defaults 1,000 and 10,000).

use coopcache_core::coop::AlgorithmKind;
use coopcache_sim::faults::{
    FaultKind, Mode, RunConfig, Summary, replay_command, run_seed, run_seeds,
};

/// The algorithms a live node runs, as the core says.
fn live() -> impl Iterator<Item = AlgorithmKind> {
    AlgorithmKind::ALL.into_iter().filter(|k| k.live().is_ok())
}

/// `seeds` seeds from `first` of every live algorithm, each with
/// `cfg(algorithm)`: no failure, and reads served.
fn every_live_algorithm_clean(first: u64, seeds: u64, cfg: impl Fn(AlgorithmKind) -> RunConfig) {
    for algorithm in live() {
        let summary = run_seeds(first, seeds, &cfg(algorithm), |_| {});
        assert!(
            summary.failures.is_empty(),
            "{}: {:?}",
            algorithm.name(),
            summary.failures
        );
        assert!(summary.counts.reads_ok > 0, "{}", algorithm.name());
    }
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn base(mode: Mode) -> RunConfig {
    RunConfig {
        seed: 0,
        ops: env("FAULT_OPS", 10_000),
        mode,
        algorithm: None,
        nodes: None,
        trace: false,
    }
}

/// Runs the CI seeds in `mode` and fails with each broken seed's report.
fn soak(mode: Mode) -> Summary {
    let base = base(mode);
    let seeds = env("FAULT_SEEDS", 1_000);
    let summary = run_seeds(0, seeds, &base, |_| {});
    let c = &summary.counts;
    eprintln!(
        "{seeds} seeds ({mode}): {} reads, {} steps, {} right, {} failed, {} lost, {} tolerated, {} refused; \
         exclusive opens {} answered, {} not, {} first blocks served, {} commits",
        c.ops,
        c.steps,
        c.reads_ok,
        c.reads_failed,
        c.reads_lost,
        c.wrong_tolerated,
        c.refused,
        c.opens_answered,
        c.opens_unanswered,
        c.first_served,
        c.commits
    );
    let report: Vec<String> = summary
        .failures
        .iter()
        .map(|(seed, f)| {
            let cfg = RunConfig {
                seed: *seed,
                ..base.clone()
            };
            format!("seed {seed}: {f}\n  replay: {}", replay_command(&cfg))
        })
        .collect();
    assert!(
        report.is_empty(),
        "{} of {seeds} seeds broke an invariant:\n{}",
        report.len(),
        report.join("\n")
    );
    summary
}

#[test]
fn safety_seeds_keep_every_invariant() {
    let s = soak(Mode::Safety);
    // The seeds exercise what they claim to: every fault kind struck,
    // honest nodes refused liars' messages for their role, and hosts kept
    // private owners' identical blocks once (unification).
    for kind in FaultKind::ALL {
        assert!(
            s.counts.faults[kind as usize] > 0,
            "no {} fault in the CI seeds",
            kind.name()
        );
    }
    assert!(s.counts.refused > 0);
    // The membership is the real SWIM detector: it changed views under the
    // faults, and honest nodes screened the liars' gossip.
    assert!(
        s.counts.member_changes > 0,
        "no membership change in the CI seeds"
    );
    assert!(s.counts.screened > 0, "no gossip screened in the CI seeds");
    assert!(s.counts.unified > 0, "no block unified in the CI seeds");
    assert!(s.counts.reads_ok > s.counts.ops / 2);
    exercises_exclusive_mode(&s);
}

/// C2Cfs `exclusive` mode ran in the seeds: opens answered by managers
/// (most of them) and by none, first blocks served with the answer,
/// writes committed, and directory listings answered by their managers
/// and by none (every one of them answered in time: a request overdue is
/// a violation).
fn exercises_exclusive_mode(s: &Summary) {
    let c = &s.counts;
    assert!(c.opens_answered > c.opens_unanswered, "{c:?}");
    assert!(c.opens_unanswered > 0, "{c:?}");
    assert!(c.first_served > 0, "{c:?}");
    assert!(c.commits > 0, "{c:?}");
    assert!(c.listings_answered > 0, "{c:?}");
    assert!(c.listings_unanswered > 0, "{c:?}");
}

#[test]
fn liveness_seeds_finish_every_read_in_time() {
    let s = soak(Mode::Liveness);
    assert!(s.counts.reads_ok > s.counts.ops / 2);
    exercises_exclusive_mode(&s);
}

/// Seeds whose partitions cut every node off from every other for longer
/// than SWIM's suspicion timeout: each declared all its peers down, foca
/// went idle and never announced again, and the cluster stayed apart
/// after the partitions healed, until the membership learned to dial its
/// seeds and lost members back (`members/membership/rejoin.rs`).
#[test]
fn a_cluster_cut_apart_entirely_comes_back_together() {
    for seed in [7358, 7741, 7830, 9160] {
        let (outcome, _) = run_seed(&RunConfig {
            seed,
            ops: 10_000,
            ..base(Mode::Safety)
        });
        assert!(
            outcome.failure.is_none(),
            "seed {seed}: {:?}",
            outcome.failure
        );
    }
}

#[test]
fn a_seed_replays_event_for_event() {
    for seed in [3, 17, 40] {
        let cfg = RunConfig {
            seed,
            ops: 2_000,
            trace: true,
            ..base(Mode::Safety)
        };
        let (a, trace_a) = run_seed(&cfg);
        let (b, trace_b) = run_seed(&cfg);
        assert_eq!(a, b, "seed {seed}");
        assert_eq!(trace_a, trace_b, "seed {seed}");
        assert!(trace_a.is_some_and(|t| t.len() > 2_000));
        let other = run_seed(&RunConfig {
            seed: seed + 1,
            ..cfg
        })
        .0;
        assert_ne!(a.fingerprint, other.fingerprint);
    }
}

/// The same protocol and invariants at 64 nodes (issue 44): every live
/// algorithm, one seed each (the soak at this size is `coopcache sim
/// faults --nodes 64`, docs/reliability.md; 1,000 nodes do not run yet).
#[test]
fn sixty_four_nodes_keep_every_invariant_under_faults() {
    every_live_algorithm_clean(0, 1, |algorithm| RunConfig {
        algorithm: Some(algorithm),
        nodes: Some(64),
        ops: env("FAULT_OPS_64", 2_000),
        ..base(Mode::Safety)
    });
}

#[test]
fn every_live_algorithm_runs_under_faults() {
    every_live_algorithm_clean(1_000, 40, |algorithm| RunConfig {
        algorithm: Some(algorithm),
        ops: 5_000,
        ..base(Mode::Safety)
    });
}

#[test]
fn the_replay_command_names_the_seed_and_settings() {
    let cfg = RunConfig {
        seed: 12345,
        ops: 777,
        mode: Mode::Liveness,
        algorithm: Some(AlgorithmKind::NChance),
        nodes: None,
        trace: false,
    };
    assert_eq!(
        replay_command(&cfg),
        "coopcache sim faults --seed 12345 --ops 777 --mode liveness --algorithm nchance --trace"
    );
}
