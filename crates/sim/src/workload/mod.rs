//! Seeded synthetic multi-client workloads.
//!
//! No public multi-client file-system trace with sharing survives (the
//! Sprite and Auspex traces are gone), so the cooperative study runs on
//! generators whose every parameter is documented and settable:
//!
//! - [`SpriteLike`]: 42 clients reading and writing private and shared
//!   files, calibrated to the paper's Sprite base case;
//! - [`Leff`]: fixed per-client access probabilities, as the workload the
//!   paper validated its simulator with;
//! - [`ZipfWorkload`]: every client reading one Zipf-popular block set;
//! - [`WebStone`]: static web documents in WebStone's size classes on two
//!   serving nodes, for size-class policies;
//! - [`FsWorkload`]: file-system requests with file types and sizes, for
//!   attribute caches (`coopcache sim mrc`, or a cluster whose nodes have
//!   attribute caches: its requests split into 8 KiB blocks, or the
//!   attribute cache's).
//!
//! The same seed gives the same requests, on any machine.

mod fs;
mod leff;
mod sprite;
mod web;
mod zipf;

pub use fs::FsWorkload;
pub use leff::Leff;
pub use sprite::SpriteLike;
pub use web::{WEBSTONE_BOUNDS, WebStone};
pub use zipf::ZipfWorkload;

use crate::error::OptionError;
use crate::trace::Requests;
use std::fmt;
use std::str::FromStr;

/// The built-in workload generators.
#[derive(Clone, Debug, PartialEq)]
pub enum Workload {
    /// [`SpriteLike`]
    SpriteLike(SpriteLike),
    /// [`Leff`]
    Leff(Leff),
    /// [`ZipfWorkload`]
    Zipf(ZipfWorkload),
    /// [`WebStone`]
    Web(WebStone),
    /// [`FsWorkload`]
    Fs(FsWorkload),
}

impl Workload {
    /// The names `--workload` takes.
    pub const NAMES: [&'static str; 5] = ["sprite-like", "leff", "zipf", "web", "fs"];

    /// Block size of the `fs` workload's requests without an attribute
    /// cache: the papers' 8 KiB.
    pub const FS_BLOCK: u64 = 8 << 10;

    /// The name of this workload.
    pub fn name(&self) -> &'static str {
        match self {
            Workload::SpriteLike(_) => "sprite-like",
            Workload::Leff(_) => "leff",
            Workload::Zipf(_) => "zipf",
            Workload::Web(_) => "web",
            Workload::Fs(_) => "fs",
        }
    }

    /// Clients (nodes) the workload drives.
    pub fn clients(&self) -> u32 {
        match self {
            Workload::SpriteLike(w) => w.clients,
            Workload::Leff(w) => w.clients,
            Workload::Zipf(w) => w.clients,
            Workload::Web(w) => w.clients,
            Workload::Fs(w) => w.clients,
        }
    }

    /// Requests it generates.
    pub fn requests(&self) -> u64 {
        match self {
            Workload::SpriteLike(w) => w.requests,
            Workload::Leff(w) => w.requests,
            Workload::Zipf(w) => w.requests,
            Workload::Web(w) => w.requests,
            Workload::Fs(w) => w.requests,
        }
    }

    /// The default warm-up: the paper warmed its caches with the first
    /// 400,000 of 700,000 Sprite accesses, so 4/7 of the requests; half of
    /// a web run.
    pub fn default_warmup(&self) -> u64 {
        match self {
            Workload::Web(w) => w.requests / 2,
            _ => self.requests() * 4 / 7,
        }
    }

    /// The block size the workload's requests are in, if it sets one.
    pub fn block_size(&self) -> Option<u64> {
        match self {
            Workload::Web(w) => Some(w.block_size),
            Workload::Fs(_) => Some(Self::FS_BLOCK),
            _ => None,
        }
    }

    /// Sets one parameter from its `key=value` text form.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), OptionError> {
        match self {
            Workload::SpriteLike(w) => w.set(key, value),
            Workload::Leff(w) => w.set(key, value),
            Workload::Zipf(w) => w.set(key, value),
            Workload::Web(w) => w.set(key, value),
            Workload::Fs(w) => w.set(key, value),
        }
    }

    /// Applies comma-separated `key=value` settings.
    pub fn set_all(&mut self, settings: &str) -> Result<(), OptionError> {
        set_pairs(settings, |k, v| self.set(k, v))
    }

    /// The requests, generated lazily.
    pub fn requests_iter(&self) -> Requests {
        match self {
            Workload::SpriteLike(w) => Box::new(w.generate().map(Ok)),
            Workload::Leff(w) => Box::new(w.generate().map(Ok)),
            Workload::Zipf(w) => Box::new(w.generate().map(Ok)),
            Workload::Web(w) => Box::new(w.generate().map(Ok)),
            Workload::Fs(w) => Box::new(
                crate::attr::block_requests(w.generate(), crate::attr::uniform(Self::FS_BLOCK))
                    .map(Ok),
            ),
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Workload {
    type Err = OptionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "sprite-like" | "sprite" => Ok(Workload::SpriteLike(SpriteLike::default())),
            "leff" => Ok(Workload::Leff(Leff::default())),
            "zipf" => Ok(Workload::Zipf(ZipfWorkload::default())),
            "web" | "webstone" => Ok(Workload::Web(WebStone::default())),
            "fs" => Ok(Workload::Fs(FsWorkload::default())),
            _ => Err(OptionError {
                what: "workload",
                value: s.to_string(),
                expected: "one of sprite-like, leff, zipf, web, fs".into(),
            }),
        }
    }
}

/// Applies `key=value,...` settings through `set`, in order.
pub(crate) fn set_pairs(
    settings: &str,
    mut set: impl FnMut(&str, &str) -> Result<(), OptionError>,
) -> Result<(), OptionError> {
    for pair in settings.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').ok_or_else(|| OptionError {
            what: "workload setting",
            value: pair.to_string(),
            expected: "key=value".into(),
        })?;
        set(key.trim(), value.trim())?;
    }
    Ok(())
}

/// Parses one parameter value, naming the key in the error.
pub(crate) fn parse_param<T: FromStr>(
    key: &str,
    value: &str,
    expected: &str,
) -> Result<T, OptionError> {
    value.parse().map_err(|_| OptionError {
        what: "workload setting",
        value: format!("{key}={value}"),
        expected: expected.to_string(),
    })
}

/// The sizes of the Tencent photo trace at `path` (setting `key`), as a
/// real size distribution.
pub(crate) fn size_sample(key: &str, path: &str) -> Result<std::sync::Arc<[u64]>, OptionError> {
    let sizes = crate::trace::photo_sizes(std::path::Path::new(path)).map_err(|e| OptionError {
        what: "workload setting",
        value: format!("{key}={path}"),
        expected: format!("a Tencent photo trace with sizes in field 5 ({e})"),
    })?;
    Ok(sizes.into())
}

/// A probability in `[0, 1]`.
pub(crate) fn parse_fraction(key: &str, value: &str) -> Result<f64, OptionError> {
    let v: f64 = parse_param(key, value, "a fraction between 0 and 1")?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(OptionError {
            what: "workload setting",
            value: format!("{key}={value}"),
            expected: "a fraction between 0 and 1".into(),
        })
    }
}

/// An unknown key for `workload`, listing the known ones.
pub(crate) fn unknown_key(workload: &str, key: &str, known: &str) -> OptionError {
    OptionError {
        what: "workload setting",
        value: key.to_string(),
        expected: format!("a {workload} parameter: {known}"),
    }
}
