//! Errors of the simulator crate.

use std::io;
use std::path::PathBuf;
use thiserror::Error;

/// A trace could not be read. Each variant names the file and, where there
/// is one, the line or record at fault and the form that was expected.
/// Reading stops at the first error; no partial result is reported as whole.
#[derive(Debug, Error)]
pub enum TraceError {
    /// The file could not be opened or read, or failed to decompress.
    #[error("{}: {source}", path.display())]
    Io {
        /// The trace file.
        path: PathBuf,
        /// What the operating system or decompressor reported.
        source: io::Error,
    },
    /// A text line does not have the expected form.
    #[error("{}:{line}: {problem}; expected {expected}", path.display())]
    Line {
        /// The trace file.
        path: PathBuf,
        /// 1-based line number (after decompression).
        line: u64,
        /// What is wrong with it.
        problem: String,
        /// The form the format requires.
        expected: &'static str,
    },
    /// A binary trace ends in the middle of a record.
    #[error(
        "{}: record {record} is truncated ({got} of {size} bytes); expected {expected}",
        path.display()
    )]
    Truncated {
        /// The trace file.
        path: PathBuf,
        /// 1-based number of the incomplete record.
        record: u64,
        /// Bytes present.
        got: usize,
        /// Bytes a record has.
        size: usize,
        /// The record layout.
        expected: &'static str,
    },
    /// A binary trace's header is missing or not of its format (a wrong
    /// magic number, an unknown version); nothing was read from the file.
    #[error("{}: {problem}; expected {expected}", path.display())]
    Header {
        /// The trace file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
        /// The header the format requires.
        expected: &'static str,
    },
    /// A record is well-formed but its values cannot be represented (a block
    /// number or client count beyond the id layout).
    #[error("{}: record {record}: {problem}", path.display())]
    OutOfRange {
        /// The trace file.
        path: PathBuf,
        /// 1-based record (or line) number.
        record: u64,
        /// What does not fit.
        problem: String,
    },
}

/// An option for reading traces is malformed (the CSV column map, a format
/// name). Nothing was opened.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{what} `{value}`: expected {expected}")]
pub struct OptionError {
    /// Which option.
    pub what: &'static str,
    /// The offending text.
    pub value: String,
    /// The accepted form.
    pub expected: String,
}
