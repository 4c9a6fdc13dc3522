//! Every policy at the edges of its knobs' ranges: whatever values the
//! command line accepts (`--policy 'name(knob=value)'`), a replay must
//! keep the capacity, not panic and not spin. A knob setting that makes
//! the eviction loop find no victim while the policy still asks for room
//! would hang `sim` on a user's input; this test fails on it instead.
//!
//! The knobs come from each policy's own table, so a policy that gains
//! knobs is covered without a change here. A setting a capacity cannot
//! hold (a share that rounds to nothing) may be refused at build time,
//! with a message; each setting must run at some capacity below, in blocks
//! or bytes, unless its knobs contradict each other (refused at any size,
//! with a message).

use coopcache_core::policy::{
    Capacity, Lookup, Policy, PolicyKind, PolicyParams, PolicySpec, PolicyVisitor,
};
use proptest::prelude::*;

/// More eviction steps for one request than any policy needs (CLOCK at
/// its widest counter goes round the cache 127 times): beyond this the
/// loop is taken to be spinning.
const MAX_EVICTIONS_PER_MISS: usize = 1 << 20;

const KEYS: u64 = 64;

/// The knob settings tried for `kind`: all at their minimum, all at their
/// maximum, and the two alternations.
fn settings(kind: PolicyKind) -> Vec<String> {
    let knobs = PolicyParams::defaults(kind).knobs();
    if knobs.is_empty() {
        return Vec::new();
    }
    let pick = |f: &dyn Fn(usize) -> bool| {
        let list: Vec<String> = knobs
            .iter()
            .enumerate()
            .map(|(i, k)| format!("{}={}", k.name, if f(i) { k.min } else { k.max }))
            .collect();
        format!("{}({})", kind.name(), list.join(","))
    };
    vec![
        pick(&|_| true),
        pick(&|_| false),
        pick(&|i| i % 2 == 0),
        pick(&|i| i % 2 == 1),
    ]
}

struct Replay<'a> {
    keys: &'a [u64],
    sized: bool,
}

impl PolicyVisitor<u64> for Replay<'_> {
    type Output = Result<(), String>;

    fn visit<P: Policy<u64> + Send + 'static>(self, mut policy: P) -> Self::Output {
        for &key in self.keys {
            let size = if self.sized { 1 + (key % 13) as u32 } else { 1 };
            if let Lookup::Miss(miss) = policy.lookup(key)
                && policy.admits(size, &miss)
            {
                let mut steps = 0;
                while policy.needs_room(&miss, size) {
                    steps += 1;
                    if steps > MAX_EVICTIONS_PER_MISS {
                        return Err(format!("no room found for {key} (size {size})"));
                    }
                    policy.evict(&miss, size);
                }
                policy.insert(key, size, miss);
            }
            if policy.used() > policy.capacity() {
                return Err(format!(
                    "{} cached in a cache of {}",
                    policy.used(),
                    policy.capacity()
                ));
            }
        }
        Ok(())
    }
}

/// Runs `keys` through `spec` at each capacity (in bytes if `sized`):
/// how many capacities the spec was built at, or why its knobs are refused.
fn replay(spec: &str, keys: &[u64], sized: bool) -> Result<Built, TestCaseError> {
    let parsed: PolicySpec = spec
        .parse()
        .map_err(|e| TestCaseError::fail(format!("{spec} does not parse: {e}")))?;
    let mut built = 0;
    // Byte caches also at 4 MiB: a floor knob in bytes (CLOCK-Pro's
    // `cold_floor` up to 1 MiB) needs a cache twice its size. Block caches
    // that large would cost the test its speed and never fill.
    let bytes_only: &[u64] = if sized { &[4 << 20] } else { &[] };
    for &units in [8u64, 30, 100, 400, 1000, 4000].iter().chain(bytes_only) {
        let capacity = if sized {
            Capacity::Bytes(units)
        } else {
            Capacity::Blocks(units as usize)
        };
        let outcome = match parsed.build(capacity, Replay { keys, sized }) {
            Ok(outcome) => outcome,
            // Knobs at the ends of their ranges can contradict each other
            // (CLOCK-Pro's `min_cold` above `max_cold`): refused at any
            // capacity, with a message naming the relation (an empty range).
            Err(e) if e.max == 0 => return Ok(Built::Contradictory(e.to_string())),
            Err(_) => continue,
        };
        built += 1;
        outcome.map_err(|e| TestCaseError::fail(format!("{spec} at {capacity:?}: {e}")))?;
    }
    Ok(Built::At(built))
}

/// How a setting fared.
enum Built {
    /// Built and replayed at this many capacities.
    At(usize),
    /// Refused for its knobs alone, with this message.
    Contradictory(String),
}

fn keys() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(0..KEYS, 1..600)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_knob_setting_keeps_capacity_and_ends(keys in keys()) {
        for kind in PolicyKind::ALL {
            for spec in settings(kind) {
                match (replay(&spec, &keys, false)?, replay(&spec, &keys, true)?) {
                    (Built::At(blocks), Built::At(bytes)) => {
                        prop_assert!(blocks + bytes > 0, "{} built at no capacity", spec);
                    }
                    (Built::Contradictory(why), _) | (_, Built::Contradictory(why)) => {
                        prop_assert!(why.contains(kind.name()), "{spec}: {why}");
                    }
                }
            }
        }
    }
}

/// The settings above exist: policies with knobs are found through their
/// tables.
#[test]
fn knobbed_policies_are_tried() {
    let knobbed = PolicyKind::ALL
        .into_iter()
        .filter(|&k| !settings(k).is_empty())
        .count();
    assert!(knobbed >= 8, "only {knobbed} policies with knobs");
}
