//! A WebStone-like static web workload on a two-node cluster
//! (`request-distribution-aware-cluster-caching.txt`, section 4.1).

use super::{parse_fraction, parse_param, size_sample, unknown_key};
use crate::error::OptionError;
use crate::trace::{Op, Request};
use coopcache_core::coop::class_key;
use rand::Rng;
use rand::prelude::Distribution;
use rand_distr::Zipf;
use rand_pcg::Pcg64;
use rand_pcg::rand_core::SeedableRng;
use std::sync::Arc;

/// WebStone's four size classes: bounds, and its default request shares.
pub const WEBSTONE_BOUNDS: [u64; 3] = [1 << 10, 10 << 10, 100 << 10];

/// Static documents in WebStone's four size classes (below 1 KiB, 1-10
/// KiB, 10-100 KiB, above 100 KiB), requested in its proportions (50%,
/// 35%, 14%, 1%), each class's documents by Zipf popularity, dispatched
/// round-robin to the serving nodes as the paper's router does. A document
/// is read whole, block by block; each block is one request whose `size`
/// is the bytes of the document in it, and whose id carries the document's
/// class ([`class_key`]), so size-class policies can tell.
///
/// The defaults make about 0.94 GB of documents (the paper's "around 1 GB
/// of data"): 20,000 of 100 B to 1 KiB, 20,000 of 1-10 KiB, 5,000 of
/// 10-100 KiB and 1,000 of 100 KiB to 2 MiB, sizes log-uniform within a
/// class. `size_sample=PATH` draws each class's sizes from the Tencent
/// photo sample's instead (a class with no sample size keeps log-uniform).
#[derive(Clone, Debug, PartialEq)]
pub struct WebStone {
    /// Serving nodes (the paper's two).
    pub clients: u32,
    /// Block requests to generate (documents are cut at the end).
    pub requests: u64,
    /// Documents per class.
    pub docs: [u32; 4],
    /// Fraction of requests per class (normalised).
    pub shares: [f64; 4],
    /// Zipf exponent of popularity within a class.
    pub alpha: f64,
    /// Smallest class-0 and largest class-3 document, bytes.
    pub min_size: u64,
    /// Largest document, bytes.
    pub max_size: u64,
    /// Block size: documents are read in blocks of this many bytes.
    pub block_size: u64,
    /// Real sizes to draw from (key `size_sample=PATH`).
    pub size_sample: Option<Arc<[u64]>>,
    /// Seed of every random choice.
    pub seed: u64,
}

impl Default for WebStone {
    fn default() -> Self {
        WebStone {
            clients: 2,
            requests: 2_000_000,
            docs: [20_000, 20_000, 5_000, 1_000],
            shares: [0.50, 0.35, 0.14, 0.01],
            alpha: 1.0,
            min_size: 100,
            max_size: 2 << 20,
            block_size: 4 << 10,
            size_sample: None,
            seed: 1,
        }
    }
}

const KEYS: &str = "clients, requests, docs0..docs3, share0..share3, alpha, min_size, max_size, \
                    block_size, size_sample, seed";

impl WebStone {
    /// Sets the parameter `key` from `value`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), OptionError> {
        let class = |prefix: &str| {
            key.strip_prefix(prefix)
                .and_then(|d| d.parse::<usize>().ok())
                .filter(|&i| i < 4)
        };
        match key {
            "clients" => self.clients = parse_param(key, value, "a number of serving nodes")?,
            "requests" => self.requests = parse_param(key, value, "a number of block requests")?,
            "alpha" => self.alpha = parse_param(key, value, "a Zipf exponent")?,
            "min_size" => self.min_size = parse_param(key, value, "a number of bytes")?,
            "max_size" => self.max_size = parse_param(key, value, "a number of bytes")?,
            "block_size" => self.block_size = parse_param(key, value, "a number of bytes")?,
            "seed" => self.seed = parse_param(key, value, "an unsigned integer")?,
            "size_sample" => self.size_sample = Some(size_sample(key, value)?),
            _ => match (class("docs"), class("share")) {
                (Some(i), _) => self.docs[i] = parse_param(key, value, "a number of documents")?,
                (_, Some(i)) => self.shares[i] = parse_fraction(key, value)?,
                _ => return Err(unknown_key("web", key, KEYS)),
            },
        }
        let block_fits = (1..=u64::from(u32::MAX)).contains(&self.block_size);
        if !block_fits || self.min_size == 0 || self.min_size > self.max_size {
            return Err(OptionError {
                what: "workload setting",
                value: format!("{key}={value}"),
                expected: "a block size from 1 byte to 4 GiB and 0 < min_size <= max_size".into(),
            });
        }
        Ok(())
    }

    /// Each class's size range, `[lo, hi)`.
    fn range(&self, class: usize) -> (u64, u64) {
        let lo = if class == 0 {
            self.min_size
        } else {
            WEBSTONE_BOUNDS[class - 1]
        };
        let hi = WEBSTONE_BOUNDS.get(class).copied().unwrap_or(self.max_size);
        (lo.min(hi), hi.max(lo + 1))
    }

    /// Every document's size, class by class.
    fn sizes(&self, rng: &mut Pcg64) -> [Vec<u64>; 4] {
        std::array::from_fn(|class| {
            let (lo, hi) = self.range(class);
            let sample: Vec<u64> = self
                .size_sample
                .iter()
                .flat_map(|s| s.iter().copied())
                .filter(|s| (lo..hi).contains(s))
                .collect();
            (0..self.docs[class])
                .map(|_| {
                    if sample.is_empty() {
                        let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
                        (a + rng.random::<f64>() * (b - a))
                            .exp()
                            .clamp(lo as f64, (hi - 1) as f64) as u64
                    } else {
                        sample[rng.random_range(0..sample.len())]
                    }
                })
                .collect()
        })
    }

    /// Total bytes of the documents.
    pub fn total_bytes(&self) -> u64 {
        let mut rng = Pcg64::seed_from_u64(self.seed);
        self.sizes(&mut rng).iter().flatten().sum()
    }

    /// The block requests.
    pub fn generate(&self) -> impl Iterator<Item = Request> + Send + use<> {
        let p = self.clone();
        let mut rng = Pcg64::seed_from_u64(p.seed);
        let sizes = p.sizes(&mut rng);
        let popularity: Vec<Option<Zipf<f64>>> = (0..4)
            .map(|c| {
                (p.docs[c] > 0)
                    .then(|| Zipf::new(f64::from(p.docs[c]), p.alpha.max(0.0)).ok())
                    .flatten()
            })
            .collect();
        let shares: Vec<f64> = (0..4)
            .map(|c| {
                if popularity[c].is_some() {
                    p.shares[c].max(0.0)
                } else {
                    0.0
                }
            })
            .collect();
        let total_share: f64 = shares.iter().sum();
        // The documents of class c are numbered from first[c].
        let first: Vec<u64> = (0..4)
            .map(|c| p.docs[..c].iter().map(|&d| u64::from(d)).sum())
            .collect();
        let block = p.block_size.max(1);
        let clients = u64::from(p.clients.max(1));
        let mut pending: std::ops::Range<u64> = 0..0;
        let mut doc = (0usize, 0u64, 0u64);
        let mut documents = 0u64;
        let mut emitted = 0u64;
        std::iter::from_fn(move || {
            if emitted >= p.requests || total_share <= 0.0 {
                return None;
            }
            while pending.is_empty() {
                let mut pick = rng.random::<f64>() * total_share;
                let class = (0..4).find(|&c| {
                    pick -= shares[c];
                    pick < 0.0 && shares[c] > 0.0
                });
                let class =
                    class.unwrap_or_else(|| (0..4).rev().find(|&c| shares[c] > 0.0).unwrap_or(0));
                let d = popularity[class].as_ref()?.sample(&mut rng) as u64 - 1;
                let size = sizes[class][d as usize];
                doc = (class, first[class] + d, size);
                pending = 0..size.div_ceil(block).max(1);
                documents += 1;
            }
            let index = pending.next()?;
            let (class, id, size) = doc;
            emitted += 1;
            Some(Request {
                id: class_key(class, (id << 24) | index)?,
                time: documents - 1,
                size: (size - index * block).min(block) as u32,
                // Round-robin over the serving nodes, a document at a time.
                client: ((documents - 1) % clients) as u32,
                op: Op::Read,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coopcache_core::coop::{ClassPolicies, ClassPolicy, SizeClassed};

    #[test]
    fn classes_get_their_share_of_documents_and_about_a_gigabyte() {
        let w = WebStone {
            requests: 400_000,
            ..WebStone::default()
        };
        let total = w.total_bytes();
        assert!(
            (850e6..1050e6).contains(&(total as f64)),
            "{total} bytes of documents"
        );
        let classes = ClassPolicies::webstone(ClassPolicy::default());
        let (mut docs, mut last) = ([0u64; 4], None);
        for r in w.generate() {
            // The class in the key is the class of the document's size.
            let class = r.id.size_class();
            let doc = (r.id & ((1 << 61) - 1)) >> 24;
            if last != Some((doc, r.time)) {
                docs[class] += 1;
                last = Some((doc, r.time));
                assert_eq!(r.client as u64, r.time % 2, "round-robin");
            }
            let index = r.id & ((1 << 24) - 1);
            if index == 0 {
                let (lo, hi) = w.range(class);
                assert!(u64::from(r.size) <= w.block_size && hi > lo);
                assert!(classes.class_of_size(lo) == class);
            }
        }
        let n: u64 = docs.iter().sum();
        let share = |c: usize| docs[c] as f64 / n as f64;
        assert!((share(0) - 0.50).abs() < 0.02, "{docs:?}");
        assert!((share(1) - 0.35).abs() < 0.02, "{docs:?}");
        assert!((share(2) - 0.14).abs() < 0.02, "{docs:?}");
        assert!((share(3) - 0.01).abs() < 0.005, "{docs:?}");
    }

    #[test]
    fn bad_settings_name_the_key() {
        let mut w = WebStone::default();
        assert!(w.set("docs2", "10").is_ok());
        assert_eq!(w.docs[2], 10);
        let err = w.set("docs9", "1").unwrap_err().to_string();
        assert!(err.contains("docs9") && err.contains("share0"), "{err}");
        let err = w.set("share1", "1.5").unwrap_err().to_string();
        assert!(err.contains("share1=1.5"), "{err}");
        assert!(w.set("block_size", "0").is_err());
    }
}
