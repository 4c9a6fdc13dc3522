//! Why a policy could not be built from its parameters.

use crate::error::CapacityError;

/// A policy's `with_params` refused its capacity or one of its parameters.
/// Nothing was built; the caller may retry with the value in range.
#[derive(Clone, Debug, thiserror::Error, PartialEq)]
pub enum ParamError {
    /// The capacity is out of the policy's range.
    #[error(transparent)]
    Capacity(#[from] CapacityError),
    /// A parameter (named as libCacheSim names it) is out of range.
    #[error("{policy}: parameter {name} = {value} is out of range: expected {expected}")]
    OutOfRange {
        /// The policy's name.
        policy: &'static str,
        /// libCacheSim's name of the parameter.
        name: &'static str,
        /// The value given.
        value: String,
        /// The values accepted.
        expected: &'static str,
    },
}
