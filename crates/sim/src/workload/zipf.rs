//! Every client reading one Zipf-popular set of blocks.

use super::{parse_fraction, parse_param, unknown_key};
use crate::error::OptionError;
use crate::trace::{Op, Request};
use rand::Rng;
use rand::prelude::Distribution;
use rand_distr::Zipf;
use rand_pcg::Pcg64;
use rand_pcg::rand_core::SeedableRng;

/// Clients taking turns to reference blocks from one Zipf popularity
/// distribution (exponent `alpha`) over `blocks` blocks: web and
/// content-serving workloads, where every node wants the same hot set.
#[derive(Clone, Debug, PartialEq)]
pub struct ZipfWorkload {
    /// Clients.
    pub clients: u32,
    /// Requests to generate.
    pub requests: u64,
    /// Distinct blocks.
    pub blocks: u32,
    /// Zipf exponent.
    pub alpha: f64,
    /// Fraction of references that are writes.
    pub write_fraction: f64,
    /// Seed of every random choice.
    pub seed: u64,
}

impl Default for ZipfWorkload {
    fn default() -> Self {
        ZipfWorkload {
            clients: 16,
            requests: 500_000,
            blocks: 200_000,
            alpha: 0.9,
            write_fraction: 0.0,
            seed: 1,
        }
    }
}

const KEYS: &str = "clients, requests, blocks, alpha, write_fraction, seed";

impl ZipfWorkload {
    /// Sets the parameter `key` from `value`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), OptionError> {
        match key {
            "clients" => self.clients = parse_param(key, value, "a number of clients")?,
            "requests" => self.requests = parse_param(key, value, "a number of requests")?,
            "blocks" => self.blocks = parse_param(key, value, "a number of blocks")?,
            "alpha" => self.alpha = parse_param(key, value, "a Zipf exponent")?,
            "write_fraction" => self.write_fraction = parse_fraction(key, value)?,
            "seed" => self.seed = parse_param(key, value, "an unsigned integer")?,
            _ => return Err(unknown_key("zipf", key, KEYS)),
        }
        Ok(())
    }

    /// The requests, round-robin over clients.
    pub fn generate(&self) -> impl Iterator<Item = Request> + Send + use<> {
        let p = self.clone();
        let mut rng = Pcg64::seed_from_u64(p.seed);
        let zipf = Zipf::new(f64::from(p.blocks.max(1)), p.alpha.max(0.0)).ok();
        let clients = p.clients.max(1);
        (0..p.requests).filter_map(move |n| {
            let id = zipf.as_ref()?.sample(&mut rng) as u64 - 1;
            let op = if rng.random_bool(p.write_fraction) {
                Op::Write
            } else {
                Op::Read
            };
            Some(Request {
                id,
                time: n,
                size: 8192,
                client: (n % u64::from(clients)) as u32,
                op,
            })
        })
    }
}
