//! A size-class policy file (`--classes FILE`, TOML) parsed by
//! `class_file::parse_class_policies`. Beyond not panicking: an accepted
//! file gives 1 to `MAX_CLASSES` classes with strictly increasing bounds
//! and the last unbounded, and every size falls in a class whose bound it
//! is below.

use coopcache_core::coop::MAX_CLASSES;
use coopcache_sim::class_file::parse_class_policies;
use std::path::Path;

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(policies) = parse_class_policies(text, Path::new("fuzz.toml")) else {
        return;
    };
    let classes = policies.classes();
    assert!((1..=MAX_CLASSES).contains(&classes.len()));
    assert!(classes.last().is_some_and(|c| c.below.is_none()));
    let bounds: Vec<u64> = classes.iter().filter_map(|c| c.below).collect();
    assert_eq!(
        bounds.len(),
        classes.len() - 1,
        "an unbounded class before the last"
    );
    assert!(bounds.windows(2).all(|w| w[0] < w[1]), "bounds {bounds:?}");
    let _ = policies.to_string();
    for size in [0, 1, 1023, 1024, 10 << 10, 100 << 10, u64::MAX]
        .into_iter()
        .chain(bounds.iter().flat_map(|&b| [b.saturating_sub(1), b]))
    {
        let c = &classes[policies.class_of_size(size)];
        assert!(c.below.is_none_or(|b| size < b), "{size} in {}", c.name);
    }
}
