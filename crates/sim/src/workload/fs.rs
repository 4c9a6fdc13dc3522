//! A file-system workload with file types and sizes, for attribute caches.

use super::{parse_fraction, parse_param, size_sample, unknown_key};
use crate::error::OptionError;
use coopcache_core::attr::{Access, FileRequest, FileType};
use rand::Rng;
use rand::prelude::Distribution;
use rand_distr::{LogNormal, Zipf};
use rand_pcg::Pcg64;
use rand_pcg::rand_core::SeedableRng;
use std::sync::Arc;

/// A workstation's file-system requests as the attribute-cache paper
/// characterises its eleven traces (section 1 and appendix A.4): most
/// requests go to small files; inodes and directories make about three
/// quarters of them; most bytes move in long sequential runs through large
/// files, in 8 KiB requests; executables are read whole.
///
/// The trace is a series of episodes. A *lookup* episode picks a file by
/// Zipf popularity, reads its directory and its inode, then the file: an
/// executable whole in one request; a datafile in `request_size` requests,
/// whole if small, else whole or a sequential run from a random place; a
/// share of datafile accesses write instead. The inode is then updated (its
/// access time) with probability `inode_write_fraction`. A *stat* episode
/// (`ls -l`, `make` checking dates) reads a directory and the inodes of
/// several of its files. File `f` lives in directory `f / (files /
/// directories)`, so popular files share directories as a user's working
/// files do. Inodes are 128 bytes; directories 512 B or 1 KiB; file sizes
/// are log-normal (or drawn from a real sample).
///
/// The defaults give, on 2,000,000 requests: inodes and directories 74% of
/// requests, 79% of requests to files under 10 KiB, 66% of datafile bytes
/// in sequential runs over 64 KiB (the test below checks the ranges).
#[derive(Clone, Debug, PartialEq)]
pub struct FsWorkload {
    /// Clients (the paper's traces are of one workstation each).
    pub clients: u32,
    /// Requests to generate.
    pub requests: u64,
    /// Directories.
    pub directories: u32,
    /// Datafiles and executables.
    pub files: u32,
    /// Zipf exponent of file popularity.
    pub file_skew: f64,
    /// Fraction of files that are executables.
    pub exec_fraction: f64,
    /// Median datafile size, bytes.
    pub data_median: u64,
    /// Log-normal shape (sigma) of datafile sizes.
    pub data_sigma: f64,
    /// Real datafile sizes to draw from instead of the log-normal (key
    /// `size_sample=PATH`: the Tencent photo sample's sizes).
    pub size_sample: Option<Arc<[u64]>>,
    /// Median executable size, bytes.
    pub exec_median: u64,
    /// Log-normal shape of executable sizes.
    pub exec_sigma: f64,
    /// Largest file, bytes.
    pub max_file: u64,
    /// Bytes per datafile request (the library's buffer).
    pub request_size: u64,
    /// Fraction of accesses to large datafiles (64 KiB or more) that read
    /// the whole file; the rest read a run from a random place.
    pub whole_fraction: f64,
    /// Mean length of such a run, bytes.
    pub run_mean: u64,
    /// Fraction of datafile accesses that write.
    pub write_fraction: f64,
    /// Fraction of episodes that are stat episodes.
    pub stat_fraction: f64,
    /// Inodes a stat episode reads.
    pub inodes_per_stat: u32,
    /// Fraction of lookups followed by an inode write.
    pub inode_write_fraction: f64,
    /// Seed of every random choice.
    pub seed: u64,
}

impl Default for FsWorkload {
    fn default() -> Self {
        FsWorkload {
            clients: 1,
            requests: 2_000_000,
            directories: 400,
            files: 8_000,
            file_skew: 1.2,
            exec_fraction: 0.08,
            data_median: 3 << 10,
            data_sigma: 2.5,
            size_sample: None,
            exec_median: 48 << 10,
            exec_sigma: 1.2,
            max_file: 32 << 20,
            request_size: 8 << 10,
            whole_fraction: 0.5,
            run_mean: 128 << 10,
            write_fraction: 0.15,
            stat_fraction: 0.5,
            inodes_per_stat: 6,
            inode_write_fraction: 0.6,
            seed: 1,
        }
    }
}

const KEYS: &str = "clients, requests, directories, files, file_skew, exec_fraction, data_median, data_sigma, size_sample, \
                    exec_median, exec_sigma, max_file, request_size, whole_fraction, run_mean, write_fraction, \
                    stat_fraction, inodes_per_stat, inode_write_fraction, seed";

impl FsWorkload {
    /// Sets the parameter `key` from `value`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), OptionError> {
        let count = "a positive integer";
        let bytes = "a number of bytes";
        match key {
            "clients" => self.clients = parse_param(key, value, count)?,
            "requests" => self.requests = parse_param(key, value, count)?,
            "directories" => self.directories = parse_param(key, value, count)?,
            "files" => self.files = parse_param(key, value, count)?,
            "file_skew" => self.file_skew = parse_param(key, value, "a Zipf exponent")?,
            "exec_fraction" => self.exec_fraction = parse_fraction(key, value)?,
            "data_median" => self.data_median = parse_param(key, value, bytes)?,
            "data_sigma" => self.data_sigma = parse_param(key, value, "a log-normal sigma")?,
            "size_sample" => self.size_sample = Some(size_sample(key, value)?),
            "exec_median" => self.exec_median = parse_param(key, value, bytes)?,
            "exec_sigma" => self.exec_sigma = parse_param(key, value, "a log-normal sigma")?,
            "max_file" => self.max_file = parse_param(key, value, bytes)?,
            "request_size" => self.request_size = parse_param(key, value, bytes)?,
            "whole_fraction" => self.whole_fraction = parse_fraction(key, value)?,
            "run_mean" => self.run_mean = parse_param(key, value, bytes)?,
            "write_fraction" => self.write_fraction = parse_fraction(key, value)?,
            "stat_fraction" => self.stat_fraction = parse_fraction(key, value)?,
            "inodes_per_stat" => self.inodes_per_stat = parse_param(key, value, count)?,
            "inode_write_fraction" => self.inode_write_fraction = parse_fraction(key, value)?,
            "seed" => self.seed = parse_param(key, value, "an unsigned integer")?,
            _ => return Err(unknown_key("fs", key, KEYS)),
        }
        Ok(())
    }

    /// Applies `key=value,...` settings.
    pub fn set_all(&mut self, settings: &str) -> Result<(), OptionError> {
        super::set_pairs(settings, |k, v| self.set(k, v))
    }

    /// The requests.
    pub fn generate(&self) -> impl Iterator<Item = FileRequest> + Send + use<> {
        FsGen::new(self.clone())
    }
}

/// Ids: files from 0, directories from `DIR_BASE`, inodes from
/// `INODE_BASE` (one per file and directory).
const DIR_BASE: u64 = 1 << 32;
const INODE_BASE: u64 = 1 << 33;
const INODE_BYTES: u64 = 128;

#[derive(Clone, Copy)]
struct File {
    kind: FileType,
    size: u64,
}

struct FsGen {
    p: FsWorkload,
    rng: Pcg64,
    files: Vec<File>,
    dir_sizes: Vec<u64>,
    popularity: Option<Zipf<f64>>,
    pending: std::collections::VecDeque<FileRequest>,
    client: u32,
    emitted: u64,
}

impl FsGen {
    fn new(p: FsWorkload) -> Self {
        let mut rng = Pcg64::seed_from_u64(p.seed);
        let lognormal = |median: u64, sigma: f64| {
            LogNormal::new((median.max(1) as f64).ln(), sigma.max(0.0)).ok()
        };
        let (data, exec) = (
            lognormal(p.data_median, p.data_sigma),
            lognormal(p.exec_median, p.exec_sigma),
        );
        let files = (0..p.files)
            .map(|_| {
                let executable = rng.random_bool(p.exec_fraction);
                let size = match (&p.size_sample, executable) {
                    (Some(sample), false) => sample[rng.random_range(0..sample.len())],
                    _ => {
                        let dist = if executable { exec } else { data };
                        dist.map_or(p.data_median, |d| d.sample(&mut rng) as u64)
                    }
                };
                let size = size.clamp(1, p.max_file.max(1));
                File {
                    kind: if executable {
                        FileType::Executable
                    } else {
                        FileType::Datafile
                    },
                    size,
                }
            })
            .collect();
        let dir_sizes = (0..p.directories.max(1))
            .map(|_| 512 << rng.random_range(0..2))
            .collect();
        FsGen {
            popularity: (p.files > 0)
                .then(|| Zipf::new(f64::from(p.files), p.file_skew.max(0.0)).ok())
                .flatten(),
            rng,
            files,
            dir_sizes,
            pending: Default::default(),
            client: 0,
            emitted: 0,
            p,
        }
    }

    fn push(
        &mut self,
        file: u64,
        kind: FileType,
        file_size: u64,
        offset: u64,
        len: u64,
        access: Access,
    ) {
        self.pending.push_back(FileRequest {
            client: self.client,
            file,
            kind,
            file_size,
            offset,
            len,
            access,
        });
    }

    /// Files per directory: file `f` is in directory `f / per_dir`, so
    /// popular files share directories, as a user's working files do.
    fn per_dir(&self) -> u64 {
        u64::from(self.p.files)
            .div_ceil(self.dir_sizes.len() as u64)
            .max(1)
    }

    fn read_directory(&mut self, dir: u64) {
        let size = self.dir_sizes[dir as usize];
        self.push(
            DIR_BASE + dir,
            FileType::Directory,
            size,
            0,
            size,
            Access::Read,
        );
    }

    fn inode(&mut self, n: u64, access: Access) {
        self.push(
            INODE_BASE + n,
            FileType::Inode,
            INODE_BYTES,
            0,
            INODE_BYTES,
            access,
        );
    }

    fn episode(&mut self) -> Option<()> {
        self.client = self.rng.random_range(0..self.p.clients.max(1));
        let per_dir = self.per_dir();
        let f = self.popularity.as_ref()?.sample(&mut self.rng) as u64 - 1;
        let dir = f / per_dir;
        if self.rng.random_bool(self.p.stat_fraction) {
            self.read_directory(dir);
            for _ in 0..self.p.inodes_per_stat {
                // Another file of the same directory.
                let k = self.rng.random_range(0..per_dir);
                self.inode(
                    (dir * per_dir + k).min(u64::from(self.p.files) - 1),
                    Access::Read,
                );
            }
            return Some(());
        }
        self.read_directory(dir);
        self.inode(f, Access::Read);
        let file = self.files[f as usize];
        match file.kind {
            FileType::Executable => self.push(f, file.kind, file.size, 0, file.size, Access::Read),
            _ => self.data_access(f, file),
        }
        if self.rng.random_bool(self.p.inode_write_fraction) {
            self.inode(f, Access::Write);
        }
        Some(())
    }

    /// A datafile access: whole if small, else whole or a run; in
    /// `request_size` requests.
    fn data_access(&mut self, f: u64, file: File) {
        let access = if self.rng.random_bool(self.p.write_fraction) {
            Access::Write
        } else {
            Access::Read
        };
        let (start, len) = if file.size < 64 << 10 || self.rng.random_bool(self.p.whole_fraction) {
            (0, file.size)
        } else {
            let run = (self.rng.random::<f64>().ln() * -(self.p.run_mean as f64)) as u64;
            let run = run.clamp(1, file.size);
            let step = self.p.request_size.max(1);
            let start = self.rng.random_range(0..=(file.size - run) / step) * step;
            (start, run)
        };
        let step = self.p.request_size.max(1);
        let mut offset = start;
        while offset < start + len {
            let n = step.min(start + len - offset);
            self.push(f, file.kind, file.size, offset, n, access);
            offset += n;
        }
    }
}

impl Iterator for FsGen {
    type Item = FileRequest;

    fn next(&mut self) -> Option<FileRequest> {
        if self.emitted >= self.p.requests {
            return None;
        }
        while self.pending.is_empty() {
            self.episode()?;
        }
        self.emitted += 1;
        self.pending.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper's characterisation (appendix A.4), measured on the
    /// default workload.
    #[test]
    fn matches_the_papers_characterisation() {
        let reqs: Vec<FileRequest> = FsWorkload::default().generate().collect();
        assert_eq!(reqs.len(), 2_000_000);
        let id = reqs
            .iter()
            .filter(|r| matches!(r.kind, FileType::Inode | FileType::Directory))
            .count();
        let id_share = id as f64 / reqs.len() as f64;
        assert!(
            (0.70..=0.80).contains(&id_share),
            "inodes and directories are {id_share:.2} of requests"
        );
        let small =
            reqs.iter().filter(|r| r.file_size < 10 << 10).count() as f64 / reqs.len() as f64;
        assert!(
            small > 0.5,
            "{small:.2} of requests go to files under 10 KiB"
        );
        // Bytes in sequential runs over 64 KiB: consecutive requests to one
        // file, each starting where the last ended.
        let (mut run_file, mut run_end, mut run_bytes) = (u64::MAX, 0, 0u64);
        let (mut total, mut long) = (0u64, 0u64);
        for r in reqs.iter().filter(|r| r.kind == FileType::Datafile) {
            total += r.len;
            if r.file == run_file && r.offset == run_end {
                run_bytes += r.len;
            } else {
                if run_bytes > 64 << 10 {
                    long += run_bytes;
                }
                run_bytes = r.len;
            }
            run_file = r.file;
            run_end = r.offset + r.len;
        }
        let share = long as f64 / total as f64;
        assert!(
            (0.4..=0.8).contains(&share),
            "{share:.2} of datafile bytes in runs over 64 KiB"
        );
        assert!(
            reqs.iter()
                .filter(|r| r.kind == FileType::Executable)
                .all(|r| r.offset == 0 && r.len == r.file_size)
        );
    }
}
