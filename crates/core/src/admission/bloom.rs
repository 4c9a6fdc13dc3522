//! Second-hit admission: cache an object only when it is requested again.

use super::Admission;
use crate::policy::BlockKey;
use hashbrown::HashSet;

/// Admits an object on a miss only if it was requested before: one-hit
/// wonders never enter the cache. The CDN practice of a Bloom filter in
/// front of the cache (Maggs and Sitaraman, "Algorithmic nuggets in content
/// delivery", SIGCOMM CCR 2015), as libCacheSim's `bloomfilter` admissioner
/// defines it: despite the name, an exact set of every id seen on a miss,
/// never cleared, so nothing is admitted falsely and no window forgets.
///
/// Suits CDN and web traces where most objects are requested once; on
/// block traces with little one-hit traffic it only delays every object's
/// first caching by a request. Memory grows with the distinct objects
/// missed, as libCacheSim's.
#[derive(Clone, Debug)]
pub struct SecondHit<K> {
    seen: HashSet<K, foldhash::fast::FixedState>,
}

impl<K> Default for SecondHit<K> {
    fn default() -> Self {
        SecondHit {
            seen: HashSet::with_hasher(foldhash::fast::FixedState::default()),
        }
    }
}

impl<K: BlockKey> SecondHit<K> {
    /// Ids seen so far.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Whether no id has been seen.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

impl<K: BlockKey> Admission<K> for SecondHit<K> {
    /// The first miss of an id records it and refuses; later ones admit.
    #[inline]
    fn admit(&mut self, key: K, _: u32) -> bool {
        !self.seen.insert(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_from_the_second_request_on() {
        let mut a = SecondHit::default();
        assert!(!a.admit(1u64, 10));
        assert!(!a.admit(2u64, 10));
        assert!(a.admit(1u64, 10));
        assert!(a.admit(1u64, 10));
        assert_eq!(a.len(), 2);
    }
}
