//! Errors of the core crate.

use thiserror::Error;

/// A cache was asked for a capacity its policy cannot work with. Nothing was
/// built; the caller may retry with a capacity in `min..=max`.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("cache size {capacity} is out of range for {policy}: expected {min} to {max} blocks")]
pub struct CapacityError {
    /// The policy's name.
    pub policy: &'static str,
    /// The capacity asked for, in blocks.
    pub capacity: usize,
    /// The smallest capacity the policy accepts.
    pub min: usize,
    /// The largest capacity any policy accepts.
    pub max: usize,
}
