//! A Sprite-like multi-client file-system workload.

use super::{parse_fraction, parse_param, unknown_key};
use crate::error::OptionError;
use crate::trace::{Op, Request};
use rand::Rng;
use rand::distr::weighted::WeightedIndex;
use rand::prelude::Distribution;
use rand_distr::Zipf;
use rand_pcg::Pcg64;
use rand_pcg::rand_core::SeedableRng;

/// Clients reading and writing whole files, private and shared, in 8 KiB
/// blocks, standing in for the Sprite traces 5 and 6 the paper used (42
/// clients, about 700,000 block accesses over two days; Baker et al.,
/// SOSP 1991), which no longer exist.
///
/// Each step picks a client (by activity) and a file from one of four
/// kinds, then the client reads the file from its first block to its last,
/// one request per block (or writes it whole):
///
/// - **hot** private files: the client's current work, small enough in
///   total to live in its own cache;
/// - **warm** private files: the client's older projects and mail, far
///   larger than its cache and re-read now and then, so that only memory
///   pooled across the cluster can keep them;
/// - **shared** files: system programs, libraries and common projects,
///   read by every client;
/// - **cold** files: read once, never seen before (the trace's compulsory
///   misses).
///
/// Within a kind, files are picked by Zipf popularity. File sizes follow
/// Sprite's skew: most files are a block or two, a few are large. Users come
/// and go: the trace runs in phases, and in each phase a few clients are
/// active (drawn by their activity, so some are busy far more often than
/// others) while the rest sit idle with whatever their caches hold, as on
/// Sprite's 42 workstations.
///
/// The defaults are calibrated so that the paper's base case (16 MiB per
/// client, 128 MiB at the server, LRU, 4/7 warm-up) gives its Figure 5 Base
/// bar (a local miss rate of 22% and an origin rate of 15.7%) and the
/// algorithms rank as in its Figure 4; `docs/reproduction.md` has the
/// measured values and the command.
#[derive(Clone, Debug, PartialEq)]
pub struct SpriteLike {
    /// Clients (42 in the Sprite traces).
    pub clients: u32,
    /// Block requests to generate.
    pub requests: u64,
    /// Zipf exponent of client activity: client `k` (from 1) is drawn into a
    /// phase's active set with weight `1 / k^activity_skew`.
    pub activity_skew: f64,
    /// Clients active in each phase.
    pub active_clients: u32,
    /// File accesses per phase.
    pub phase_steps: u32,
    /// Hot private files per client.
    pub hot_files: u32,
    /// Zipf exponent of hot-file popularity.
    pub hot_skew: f64,
    /// Largest hot file, in blocks: a client's current work is mostly small
    /// files (large ones are programs, shared, or data read now and then).
    pub hot_max_blocks: u16,
    /// Warm private files per client.
    pub warm_files: u32,
    /// Zipf exponent of warm-file popularity.
    pub warm_skew: f64,
    /// Files shared by all clients.
    pub shared_files: u32,
    /// Zipf exponent of shared-file popularity.
    pub shared_skew: f64,
    /// Fraction of steps on a warm file.
    pub warm_fraction: f64,
    /// Fraction of steps on a shared file (always read).
    pub shared_fraction: f64,
    /// Fraction of steps reading a new, cold file. The rest of the steps
    /// (1 - warm - shared - cold) are on hot files.
    pub cold_fraction: f64,
    /// Fraction of private (hot or warm) steps that write the file instead
    /// of reading it.
    pub write_fraction: f64,
    /// Seed of every random choice.
    pub seed: u64,
}

impl Default for SpriteLike {
    /// The calibrated defaults (see `docs/reproduction.md`).
    fn default() -> Self {
        SpriteLike {
            clients: 42,
            requests: 700_000,
            activity_skew: 1.25,
            active_clients: 2,
            phase_steps: 600,
            hot_files: 40,
            hot_skew: 1.2,
            hot_max_blocks: 16,
            warm_files: 600,
            warm_skew: 0.5,
            shared_files: 4_000,
            shared_skew: 1.0,
            warm_fraction: 0.06,
            shared_fraction: 0.15,
            cold_fraction: 0.0075,
            write_fraction: 0.05,
            seed: 1,
        }
    }
}

const KEYS: &str = "clients, requests, activity_skew, active_clients, phase_steps, hot_files, hot_skew, hot_max_blocks, warm_files, warm_skew, \
                    shared_files, shared_skew, warm_fraction, shared_fraction, cold_fraction, write_fraction, seed";

impl SpriteLike {
    /// Sets the parameter `key` from `value`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), OptionError> {
        let files = "a number of files";
        let exponent = "a Zipf exponent";
        match key {
            "clients" => self.clients = parse_param(key, value, "a number of clients")?,
            "requests" => self.requests = parse_param(key, value, "a number of requests")?,
            "activity_skew" => self.activity_skew = parse_param(key, value, exponent)?,
            "active_clients" => {
                self.active_clients = parse_param(key, value, "a number of clients")?
            }
            "phase_steps" => {
                self.phase_steps = parse_param(key, value, "a number of file accesses")?
            }
            "hot_files" => self.hot_files = parse_param(key, value, files)?,
            "hot_skew" => self.hot_skew = parse_param(key, value, exponent)?,
            "hot_max_blocks" => {
                self.hot_max_blocks = parse_param(key, value, "a number of blocks (1 to 65535)")?
            }
            "warm_files" => self.warm_files = parse_param(key, value, files)?,
            "warm_skew" => self.warm_skew = parse_param(key, value, exponent)?,
            "shared_files" => self.shared_files = parse_param(key, value, files)?,
            "shared_skew" => self.shared_skew = parse_param(key, value, exponent)?,
            "warm_fraction" => self.warm_fraction = parse_fraction(key, value)?,
            "shared_fraction" => self.shared_fraction = parse_fraction(key, value)?,
            "cold_fraction" => self.cold_fraction = parse_fraction(key, value)?,
            "write_fraction" => self.write_fraction = parse_fraction(key, value)?,
            "seed" => self.seed = parse_param(key, value, "an unsigned integer")?,
            _ => return Err(unknown_key("sprite-like", key, KEYS)),
        }
        Ok(())
    }

    /// The requests.
    pub fn generate(&self) -> impl Iterator<Item = Request> + Send + use<> {
        SpriteGen::new(self.clone())
    }
}

/// Blocks per file id: a block id is `file << 16 | block`.
const BLOCK_BITS: u32 = 16;

/// A file: its id (which changes with each new version) and size.
#[derive(Clone, Copy, Debug)]
struct File {
    id: u64,
    blocks: u16,
}

/// The run of block requests of the file access in progress.
#[derive(Clone, Copy, Debug)]
struct Run {
    client: u32,
    file: File,
    next: u16,
    op: Op,
}

struct SpriteGen {
    p: SpriteLike,
    rng: Pcg64,
    /// Each client's weight for joining a phase's active set.
    weights: Vec<f64>,
    /// The clients active in this phase, and the steps left in it.
    active: Vec<u32>,
    phase_left: u32,
    hot_rank: Option<Zipf<f64>>,
    warm_rank: Option<Zipf<f64>>,
    shared_rank: Option<Zipf<f64>>,
    /// Per client: its hot files, then its warm files.
    private: Vec<Vec<File>>,
    shared: Vec<File>,
    next_id: u64,
    run: Option<Run>,
    emitted: u64,
}

impl SpriteGen {
    fn new(p: SpriteLike) -> Self {
        let mut rng = Pcg64::seed_from_u64(p.seed);
        let weights: Vec<f64> = (1..=p.clients)
            .map(|k| 1.0 / f64::from(k).powf(p.activity_skew))
            .collect();
        let zipf = |n: u32, s: f64| {
            (n > 0)
                .then(|| Zipf::new(f64::from(n), s.max(0.0)).ok())
                .flatten()
        };
        let mut next_id = 0;
        let mut new_file = |rng: &mut Pcg64| {
            next_id += 1;
            File {
                id: next_id,
                blocks: file_blocks(rng),
            }
        };
        let shared = (0..p.shared_files).map(|_| new_file(&mut rng)).collect();
        let hot_max = p.hot_max_blocks.max(1);
        let private = (0..p.clients)
            .map(|_| {
                let hot = (0..p.hot_files).map(|_| {
                    let f = new_file(&mut rng);
                    File {
                        blocks: f.blocks.min(hot_max),
                        ..f
                    }
                });
                let hot: Vec<File> = hot.collect();
                let warm = (0..p.warm_files).map(|_| new_file(&mut rng));
                hot.into_iter().chain(warm).collect()
            })
            .collect();
        SpriteGen {
            hot_rank: zipf(p.hot_files, p.hot_skew),
            warm_rank: zipf(p.warm_files, p.warm_skew),
            shared_rank: zipf(p.shared_files, p.shared_skew),
            rng,
            weights,
            active: Vec::new(),
            phase_left: 0,
            private,
            shared,
            next_id,
            run: None,
            emitted: 0,
            p,
        }
    }

    /// Draws a new phase's active clients: `active_clients` distinct ones,
    /// by weight.
    fn new_phase(&mut self) {
        self.active.clear();
        let mut weights = self.weights.clone();
        let want = self.p.active_clients.clamp(1, self.p.clients.max(1));
        while self.active.len() < want as usize {
            let Ok(pick) = WeightedIndex::new(&weights) else {
                break;
            };
            let client = pick.sample(&mut self.rng);
            weights[client] = 0.0;
            self.active.push(client as u32);
        }
        self.phase_left = self.p.phase_steps.max(1);
    }

    /// Starts the next file access.
    fn start(&mut self) -> Option<Run> {
        if self.phase_left == 0 {
            self.new_phase();
        }
        self.phase_left -= 1;
        let client = *self
            .active
            .get(self.rng.random_range(0..self.active.len().max(1)))?;
        let rank =
            |z: &Option<Zipf<f64>>, rng: &mut Pcg64| z.as_ref().map(|z| z.sample(rng) as usize - 1);
        let p = &self.p;
        let u: f64 = self.rng.random();
        let read = |file| Run {
            client,
            file,
            next: 0,
            op: Op::Read,
        };
        if u < p.shared_fraction {
            if let Some(i) = rank(&self.shared_rank, &mut self.rng) {
                return Some(read(self.shared[i]));
            }
        } else if u < p.shared_fraction + p.cold_fraction {
            self.next_id += 1;
            let file = File {
                id: self.next_id,
                blocks: file_blocks(&mut self.rng),
            };
            return Some(read(file));
        }
        let warm = u >= 1.0 - p.warm_fraction;
        let i = match (
            warm,
            rank(&self.hot_rank, &mut self.rng),
            rank(&self.warm_rank, &mut self.rng),
        ) {
            (true, _, Some(w)) => self.p.hot_files as usize + w,
            (_, Some(h), _) => h,
            (_, None, Some(w)) => self.p.hot_files as usize + w,
            (_, None, None) => return None,
        };
        let op = if self.rng.random_bool(self.p.write_fraction) {
            Op::Write
        } else {
            Op::Read
        };
        Some(Run {
            op,
            ..read(self.private[client as usize][i])
        })
    }
}

impl Iterator for SpriteGen {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        if self.emitted >= self.p.requests {
            return None;
        }
        let run = match self.run {
            Some(run) if run.next < run.file.blocks => run,
            _ => self.start()?,
        };
        let request = Request {
            id: (run.file.id << BLOCK_BITS) | u64::from(run.next),
            time: self.emitted,
            size: 8192,
            client: run.client,
            op: run.op,
        };
        self.run = Some(Run {
            next: run.next + 1,
            ..run
        });
        self.emitted += 1;
        Some(request)
    }
}

/// A file size in blocks with Sprite's skew (Baker et al.: most files
/// accessed are small, most bytes are in large files): half are one
/// block, a quarter 2-4, 15% 5-16, 8% 17-64 and 2% 65-256 (mean about 9).
fn file_blocks(rng: &mut Pcg64) -> u16 {
    let (lo, hi) = match rng.random::<f64>() {
        u if u < 0.50 => (1, 1),
        u if u < 0.75 => (2, 4),
        u if u < 0.90 => (5, 16),
        u if u < 0.98 => (17, 64),
        _ => (65, 256),
    };
    rng.random_range(lo..=hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_requests_and_the_count_asked_for() {
        let w = SpriteLike {
            requests: 5_000,
            ..SpriteLike::default()
        };
        let a: Vec<Request> = w.generate().collect();
        let b: Vec<Request> = w.generate().collect();
        assert_eq!(a.len(), 5_000);
        assert_eq!(a, b);
        let other: Vec<Request> = SpriteLike { seed: 2, ..w }.generate().collect();
        assert_ne!(a, other);
    }

    #[test]
    fn clients_come_and_go_share_files_and_write() {
        let reqs: Vec<Request> = SpriteLike::default().generate().collect();
        let clients: std::collections::HashSet<u32> = reqs.iter().map(|r| r.client).collect();
        assert!(
            clients.len() > 30,
            "{} of 42 clients active over the trace",
            clients.len()
        );
        let first_phase: std::collections::HashSet<u32> =
            reqs[..2_000].iter().map(|r| r.client).collect();
        assert!(
            first_phase.len() <= 2,
            "{} clients active at once",
            first_phase.len()
        );
        assert!(reqs.iter().any(|r| r.op == Op::Write));
        let mut readers: std::collections::HashMap<u64, std::collections::HashSet<u32>> =
            Default::default();
        for r in &reqs {
            readers.entry(r.id).or_default().insert(r.client);
        }
        assert!(
            readers.values().any(|c| c.len() > 5),
            "no block read by several clients"
        );
    }
}
