//! Errors of the core crate.

use thiserror::Error;

/// A cache was asked for a capacity its policy cannot work with. Nothing was
/// built; the caller may retry with a capacity in `min..=max`.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error(
    "cache size {capacity} {unit} is out of range for {policy}: expected {min} to {max} {unit}"
)]
pub struct CapacityError {
    /// The policy's name.
    pub policy: &'static str,
    /// The capacity asked for, in `unit`.
    pub capacity: u64,
    /// `blocks` or `bytes`.
    pub unit: &'static str,
    /// The smallest capacity the policy accepts.
    pub min: u64,
    /// The largest capacity any policy accepts.
    pub max: u64,
}
