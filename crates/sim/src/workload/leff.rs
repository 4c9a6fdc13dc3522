//! A Leff-style workload: fixed per-client access probabilities.

use super::{parse_fraction, parse_param, unknown_key};
use crate::error::OptionError;
use crate::trace::{Op, Request};
use rand::Rng;
use rand::prelude::Distribution;
use rand_distr::Zipf;
use rand_pcg::Pcg64;
use rand_pcg::rand_core::SeedableRng;

/// The synthetic workload of Leff, Wolf and Yu ("Replication Algorithms in
/// a Remote Caching Architecture", IEEE TPDS 1993), on which the paper
/// validated its simulator (section 3): each client references objects
/// independently with fixed probabilities (the independent reference
/// model). A client's own partition draws `local_fraction` of its
/// references, the shared partition the rest; within a partition,
/// popularity is Zipf with exponent `skew`. Clients are equally active.
#[derive(Clone, Debug, PartialEq)]
pub struct Leff {
    /// Clients.
    pub clients: u32,
    /// Requests to generate.
    pub requests: u64,
    /// Objects (blocks) in each client's own partition.
    pub local_objects: u32,
    /// Objects in the partition every client shares.
    pub shared_objects: u32,
    /// Fraction of a client's references to its own partition.
    pub local_fraction: f64,
    /// Zipf exponent of popularity within a partition.
    pub skew: f64,
    /// Fraction of references that are writes.
    pub write_fraction: f64,
    /// Seed of every random choice.
    pub seed: u64,
}

impl Default for Leff {
    fn default() -> Self {
        Leff {
            clients: 16,
            requests: 500_000,
            local_objects: 4_000,
            shared_objects: 8_000,
            local_fraction: 0.7,
            skew: 0.8,
            write_fraction: 0.0,
            seed: 1,
        }
    }
}

const KEYS: &str =
    "clients, requests, local_objects, shared_objects, local_fraction, skew, write_fraction, seed";

impl Leff {
    /// Sets the parameter `key` from `value`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), OptionError> {
        match key {
            "clients" => self.clients = parse_param(key, value, "a number of clients")?,
            "requests" => self.requests = parse_param(key, value, "a number of requests")?,
            "local_objects" => self.local_objects = parse_param(key, value, "a number of objects")?,
            "shared_objects" => {
                self.shared_objects = parse_param(key, value, "a number of objects")?
            }
            "local_fraction" => self.local_fraction = parse_fraction(key, value)?,
            "skew" => self.skew = parse_param(key, value, "a Zipf exponent")?,
            "write_fraction" => self.write_fraction = parse_fraction(key, value)?,
            "seed" => self.seed = parse_param(key, value, "an unsigned integer")?,
            _ => return Err(unknown_key("leff", key, KEYS)),
        }
        Ok(())
    }

    /// The requests: round-robin over clients, each reference drawn from
    /// the client's fixed distribution.
    pub fn generate(&self) -> impl Iterator<Item = Request> + Send + use<> {
        let p = self.clone();
        let mut rng = Pcg64::seed_from_u64(p.seed);
        let local = Zipf::new(f64::from(p.local_objects.max(1)), p.skew.max(0.0)).ok();
        let shared = Zipf::new(f64::from(p.shared_objects.max(1)), p.skew.max(0.0)).ok();
        let clients = p.clients.max(1);
        (0..p.requests).filter_map(move |n| {
            let client = (n % u64::from(clients)) as u32;
            // Object ids: the shared partition first, then each client's.
            let id = if rng.random_bool(p.local_fraction) {
                let rank = local.as_ref()?.sample(&mut rng) as u64 - 1;
                u64::from(p.shared_objects) + u64::from(client) * u64::from(p.local_objects) + rank
            } else {
                shared.as_ref()?.sample(&mut rng) as u64 - 1
            };
            let op = if rng.random_bool(p.write_fraction) {
                Op::Write
            } else {
                Op::Read
            };
            Some(Request {
                id,
                time: n,
                size: 8192,
                client,
                op,
            })
        })
    }
}
