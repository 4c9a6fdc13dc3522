//! Admission policies: whether an object that missed is cached at all.
//!
//! An admission policy sits in front of any replacement policy, as
//! libCacheSim's admissioners do: the request loop
//! ([`access_admitted`](crate::policy::access_admitted)) tells it of every
//! request ([`Admission::update`]) and asks it on a miss
//! ([`Admission::admit`]), before the policy's own check that the object
//! fits. A refused object is not cached, evicts nothing, and the request is
//! a miss. [`NoAdmission`] admits everything and compiles away, so a replay
//! without admission pays nothing.

mod adaptsize;
mod bloom;
mod size;

pub use adaptsize::{AdaptSize, AdaptSizeParams};
pub use bloom::SecondHit;
pub use size::{SizeParams, SizeThreshold};

use crate::policy::BlockKey;
use crate::policy::knobs::{KnobError, NoKnobs, parse_knobs, write_knobs};
use std::fmt;

/// Decides which missed objects a cache takes.
pub trait Admission<K: BlockKey> {
    /// Whether this ever refuses: `false` only for [`NoAdmission`], whose
    /// request loop is then exactly the one without admission.
    const ACTIVE: bool = true;

    /// Every request, hit or miss, after the lookup (libCacheSim's
    /// `update`, called with the cache's capacity): by default nothing.
    #[inline(always)]
    fn update(&mut self, key: K, size: u32, capacity: u64) {
        let _ = (key, size, capacity);
    }

    /// Whether the object `key` of `size`, which missed, may be cached
    /// (libCacheSim's `admit`, asked before the policy's `can_insert`).
    fn admit(&mut self, key: K, size: u32) -> bool;
}

/// No admission policy: every object is admitted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoAdmission;

impl<K: BlockKey> Admission<K> for NoAdmission {
    const ACTIVE: bool = false;

    #[inline(always)]
    fn admit(&mut self, _: K, _: u32) -> bool {
        true
    }
}

/// An admission policy as a command line names it: `bloom`,
/// `size(below=1MiB)`, `adaptsize(interval=30000)`, or none.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum AdmissionSpec {
    /// Every object is admitted.
    #[default]
    None,
    /// [`SecondHit`]: libCacheSim's `bloomfilter`.
    Bloom,
    /// [`SizeThreshold`]: libCacheSim's `size`.
    Size(SizeParams),
    /// [`AdaptSize`]: libCacheSim's `adaptsize`.
    AdaptSize(AdaptSizeParams),
}

/// Every admission policy's name, for messages.
pub const ADMISSION_NAMES: &str = "none, bloom, size, adaptsize";

/// An admission name that is not one coopcache has.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum AdmissionError {
    /// Not a known admission policy.
    #[error("unknown admission policy `{0}`: expected one of {ADMISSION_NAMES}")]
    Unknown(String),
    /// A knob is unknown or out of range.
    #[error(transparent)]
    Knob(#[from] KnobError),
}

impl AdmissionSpec {
    /// Whether this admits everything.
    pub fn is_none(&self) -> bool {
        *self == AdmissionSpec::None
    }

    /// The name `parse` accepts.
    pub fn name(&self) -> &'static str {
        match self {
            AdmissionSpec::None => "none",
            AdmissionSpec::Bloom => "bloom",
            AdmissionSpec::Size(_) => "size",
            AdmissionSpec::AdaptSize(_) => "adaptsize",
        }
    }

    /// `name` with the knob list `knobs` (the text between parentheses).
    pub fn parse(name: &str, knobs: &str) -> Result<AdmissionSpec, AdmissionError> {
        let lower = name.trim().to_ascii_lowercase();
        Ok(match lower.as_str() {
            "none" => {
                parse_knobs::<NoKnobs>("none", knobs)?;
                AdmissionSpec::None
            }
            "bloom" | "bloomfilter" => {
                parse_knobs::<NoKnobs>("bloom", knobs)?;
                AdmissionSpec::Bloom
            }
            "size" => AdmissionSpec::Size(parse_knobs("size", knobs)?),
            "adaptsize" => AdmissionSpec::AdaptSize(parse_knobs("adaptsize", knobs)?),
            _ => return Err(AdmissionError::Unknown(name.trim().into())),
        })
    }

    /// The admission policy this names, for keys `K`.
    pub fn build<K: BlockKey>(self) -> AnyAdmission<K> {
        match self {
            AdmissionSpec::None => AnyAdmission::None,
            AdmissionSpec::Bloom => AnyAdmission::Bloom(SecondHit::default()),
            AdmissionSpec::Size(p) => AnyAdmission::Size(SizeThreshold::new(p)),
            AdmissionSpec::AdaptSize(p) => AnyAdmission::AdaptSize(Box::new(AdaptSize::new(p))),
        }
    }
}

impl fmt::Display for AdmissionSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        match self {
            AdmissionSpec::Size(p) => write_knobs(p, f),
            AdmissionSpec::AdaptSize(p) => write_knobs(p, f),
            _ => Ok(()),
        }
    }
}

/// One of the admission policies, chosen at run time: a replay with
/// admission dispatches on it per miss, one without uses [`NoAdmission`].
#[derive(Debug)]
pub enum AnyAdmission<K: BlockKey> {
    /// Everything admitted.
    None,
    /// [`SecondHit`].
    Bloom(SecondHit<K>),
    /// [`SizeThreshold`].
    Size(SizeThreshold),
    /// [`AdaptSize`] (boxed: its model is large).
    AdaptSize(Box<AdaptSize<K>>),
}

impl<K: BlockKey> Admission<K> for AnyAdmission<K> {
    #[inline]
    fn update(&mut self, key: K, size: u32, capacity: u64) {
        if let AnyAdmission::AdaptSize(a) = self {
            a.update(key, size, capacity);
        }
    }

    #[inline]
    fn admit(&mut self, key: K, size: u32) -> bool {
        match self {
            AnyAdmission::None => true,
            AnyAdmission::Bloom(a) => a.admit(key, size),
            AnyAdmission::Size(a) => a.admit(key, size),
            AnyAdmission::AdaptSize(a) => a.admit(key, size),
        }
    }
}
