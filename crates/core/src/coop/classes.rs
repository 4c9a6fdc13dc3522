//! Size-class policies (`request-distribution-aware-cluster-caching.txt`):
//! documents fall into classes by size, and each class chooses how the
//! cluster caches it.
//!
//! A block's class travels in its key ([`SizeClassed`]), so a node deciding
//! what to do with a block it evicts long after the request that brought
//! it needs nothing but the key. For `u64` keys the class is the top three
//! bits ([`class_key`]).

use std::fmt;

/// What the cluster does with the blocks of one size class. Every option
/// changes one path and only that one.
///
/// The default is the cooperative-caching paper's behaviour (what N-Chance
/// does without class policies): cooperative lookup, evictions forwarded,
/// the manager keeps a copy of what it reads from the origin, no discard
/// cache and no replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClassPolicy {
    /// On a local miss, look for the block in peers' memory through the
    /// manager. Off: the manager serves the block from its own memory or
    /// the origin, never from a peer.
    pub cooperative: bool,
    /// Forward an evicted singlet to a peer (N-Chance). Off: drop it.
    pub forward_evictions: bool,
    /// Blocks a node lets go of (not forwarded) go to the manager's memory,
    /// the storage node's cache, instead of being lost: a discard (victim)
    /// cache.
    pub discard_cache: bool,
    /// The manager keeps no copy of a block it reads from the origin for a
    /// node (exclusive caching: no double buffering).
    pub exclusive: bool,
    /// Each node has a local replica on its own disk: a local miss reads it
    /// from there instead of asking the manager.
    pub replica: bool,
}

impl Default for ClassPolicy {
    fn default() -> Self {
        ClassPolicy {
            cooperative: true,
            forward_evictions: true,
            discard_cache: false,
            exclusive: false,
            replica: false,
        }
    }
}

/// One size class: documents below `below` bytes (and at or above the
/// previous class's bound), or every larger one for the last class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeClass {
    /// The class's name in reports.
    pub name: String,
    /// Exclusive upper bound in bytes; `None` for the last class.
    pub below: Option<u64>,
    /// What the cluster does with its blocks.
    pub policy: ClassPolicy,
}

/// Most classes a key can name (three bits).
pub const MAX_CLASSES: usize = 8;

/// A set of size classes with their policies: at least one, at most
/// [`MAX_CLASSES`], bounds strictly increasing, the last unbounded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassPolicies {
    classes: Vec<SizeClass>,
}

/// Why a list of classes is not a valid [`ClassPolicies`].
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[error("size class {index} (`{name}`): {problem}")]
pub struct ClassError {
    /// 0-based position of the offending class.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// What is wrong.
    pub problem: String,
}

impl ClassPolicies {
    /// Validates `classes`.
    pub fn new(classes: Vec<SizeClass>) -> Result<Self, ClassError> {
        let error = |index: usize, problem: String| ClassError {
            index,
            name: classes
                .get(index)
                .map_or_else(String::new, |c| c.name.clone()),
            problem,
        };
        if classes.is_empty() {
            return Err(error(0, "no classes given; expected at least one".into()));
        }
        if classes.len() > MAX_CLASSES {
            return Err(error(
                MAX_CLASSES,
                format!(
                    "{} classes given; expected at most {MAX_CLASSES}",
                    classes.len()
                ),
            ));
        }
        let last = classes.len() - 1;
        let mut previous = 0;
        for (i, c) in classes.iter().enumerate() {
            match (c.below, i == last) {
                (Some(_), true) => {
                    return Err(error(
                        i,
                        "the last class takes every larger size: give it no upper bound".into(),
                    ));
                }
                (None, false) => {
                    return Err(error(
                        i,
                        "every class but the last needs an upper bound".into(),
                    ));
                }
                (Some(b), false) if b <= previous => {
                    return Err(error(
                        i,
                        format!(
                            "upper bound {b} is not above the previous class's {previous}; expected increasing bounds"
                        ),
                    ));
                }
                (Some(b), false) => previous = b,
                (None, true) => {}
            }
        }
        Ok(ClassPolicies { classes })
    }

    /// One class taking every size, with the default policy: the cluster
    /// behaves exactly as without class policies.
    pub fn uniform() -> Self {
        ClassPolicies {
            classes: vec![SizeClass {
                name: "all".into(),
                below: None,
                policy: ClassPolicy::default(),
            }],
        }
    }

    /// WebStone's four classes (below 1 KiB, 1-10 KiB, 10-100 KiB, above
    /// 100 KiB: 50%, 35%, 14% and 1% of requests), each with `policy`.
    pub fn webstone(policy: ClassPolicy) -> Self {
        const BOUNDS: [Option<u64>; 4] = [Some(1 << 10), Some(10 << 10), Some(100 << 10), None];
        ClassPolicies {
            classes: BOUNDS
                .iter()
                .enumerate()
                .map(|(i, &below)| SizeClass {
                    name: format!("class{i}"),
                    below,
                    policy,
                })
                .collect(),
        }
    }

    /// The classes, smallest first.
    pub fn classes(&self) -> &[SizeClass] {
        &self.classes
    }

    /// Whether every class has the default policy (nothing changes).
    pub fn is_default(&self) -> bool {
        self.classes
            .iter()
            .all(|c| c.policy == ClassPolicy::default())
    }

    /// The class of a document of `bytes`.
    pub fn class_of_size(&self, bytes: u64) -> usize {
        self.classes
            .iter()
            .position(|c| c.below.is_none_or(|b| bytes < b))
            .unwrap_or(self.classes.len() - 1)
    }

    /// The policy of `block`'s class (a class number beyond the last takes
    /// the last class's).
    #[inline]
    pub fn policy<K: SizeClassed>(&self, block: &K) -> ClassPolicy {
        let i = block.size_class().min(self.classes.len() - 1);
        self.classes[i].policy
    }
}

impl Default for ClassPolicies {
    fn default() -> Self {
        ClassPolicies::uniform()
    }
}

impl fmt::Display for ClassPolicies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.classes.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            let p = c.policy;
            let on = |b: bool| if b { "on" } else { "off" };
            write!(
                f,
                "{}: cooperative {}, forward {}, discard {}, exclusive {}, replica {}",
                c.name,
                on(p.cooperative),
                on(p.forward_evictions),
                on(p.discard_cache),
                on(p.exclusive),
                on(p.replica)
            )?;
        }
        Ok(())
    }
}

/// A block key that knows its size class.
pub trait SizeClassed {
    /// The class number, 0 for the smallest.
    fn size_class(&self) -> usize;
}

/// Bits of a `u64` key below the class.
const CLASS_SHIFT: u32 = 61;

impl SizeClassed for u64 {
    #[inline]
    fn size_class(&self) -> usize {
        (self >> CLASS_SHIFT) as usize
    }
}

/// The `u64` key of `id` (below 2^61) in size class `class`, or `None` if
/// either does not fit.
pub fn class_key(class: usize, id: u64) -> Option<u64> {
    (class < MAX_CLASSES && id >> CLASS_SHIFT == 0).then_some(((class as u64) << CLASS_SHIFT) | id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, below: Option<u64>) -> SizeClass {
        SizeClass {
            name: name.into(),
            below,
            policy: ClassPolicy::default(),
        }
    }

    #[test]
    fn webstone_classes_split_at_1k_10k_100k() {
        let c = ClassPolicies::webstone(ClassPolicy::default());
        let of = |b| c.class_of_size(b);
        assert_eq!(
            [
                of(0),
                of(1023),
                of(1024),
                of(10239),
                of(10240),
                of(102_399),
                of(102_400),
                of(u64::MAX)
            ],
            [0, 0, 1, 1, 2, 2, 3, 3]
        );
        assert!(c.is_default());
    }

    #[test]
    fn keys_carry_their_class() {
        let k = class_key(3, 12345).unwrap();
        assert_eq!(k.size_class(), 3);
        assert_eq!(k & ((1 << 61) - 1), 12345);
        assert_eq!(class_key(8, 1), None);
        assert_eq!(class_key(0, 1 << 61), None);
        let mut c = ClassPolicies::webstone(ClassPolicy::default());
        c.classes[3].policy.replica = true;
        assert!(c.policy(&k).replica);
        assert!(!c.policy(&class_key(2, 1).unwrap()).replica);
        // Beyond the last class: the last class's policy.
        assert!(c.policy(&class_key(7, 1).unwrap()).replica);
    }

    #[test]
    fn malformed_class_lists_are_refused_naming_the_class() {
        let err = ClassPolicies::new(vec![]).unwrap_err().to_string();
        assert!(err.contains("at least one"), "{err}");
        let err = ClassPolicies::new(vec![
            class("a", Some(10)),
            class("b", Some(5)),
            class("c", None),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("class 1 (`b`)") && err.contains("increasing"),
            "{err}"
        );
        let err = ClassPolicies::new(vec![class("a", None), class("b", None)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("`a`") && err.contains("upper bound"), "{err}");
        let err = ClassPolicies::new(vec![class("a", Some(1))])
            .unwrap_err()
            .to_string();
        assert!(err.contains("last class"), "{err}");
        let many = (0..9)
            .map(|i| class("x", (i < 8).then_some(i + 1)))
            .collect();
        assert!(ClassPolicies::new(many).is_err());
        assert!(ClassPolicies::new(vec![class("a", Some(1)), class("b", None)]).is_ok());
    }
}
