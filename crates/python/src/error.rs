//! Errors as Python sees them: `OSError` where a file could not be read,
//! `ValueError` for everything else Python passed, each with the message
//! the CLI prints for the same mistake.

use coopcache_sim::TraceError;
use pyo3::PyErr;
use pyo3::exceptions::{PyOSError, PyValueError};
use std::fmt::Display;

/// An error raised into Python.
#[derive(Debug)]
pub enum Error {
    /// A file could not be opened or read: `OSError`.
    Io(String),
    /// Anything else wrong with the input: `ValueError`.
    Value(String),
}

/// A `ValueError` with `message`.
pub(crate) fn value(message: impl Display) -> Error {
    Error::Value(message.to_string())
}

impl From<TraceError> for Error {
    fn from(e: TraceError) -> Self {
        match e {
            TraceError::Io { .. } => Error::Io(e.to_string()),
            other => Error::Value(other.to_string()),
        }
    }
}

impl From<Error> for PyErr {
    fn from(e: Error) -> Self {
        match e {
            Error::Io(m) => PyOSError::new_err(m),
            Error::Value(m) => PyValueError::new_err(m),
        }
    }
}

/// Rows as the JSON text the CLI's `--json` prints (an array of them).
pub(crate) fn json(rows: &impl serde::Serialize) -> Result<String, Error> {
    serde_json::to_string(rows).map_err(value)
}
