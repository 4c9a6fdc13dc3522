//! Errors of the simulator crate.

use std::io;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// `text` with its control characters escaped (`\x1b`, `\n`, `\u{9b}`),
/// everything else as it is: errors quote trace lines and file names, and
/// a terminal must never receive a file's escape sequences.
pub fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A path for an error message, control characters escaped.
fn shown(path: &Path) -> String {
    escaped(&path.display().to_string())
}

/// A trace could not be read. Each variant names the file and, where there
/// is one, the line or record at fault and the form that was expected.
/// Reading stops at the first error; no partial result is reported as whole.
#[derive(Debug, Error)]
pub enum TraceError {
    /// The file could not be opened or read, or failed to decompress.
    #[error("{}: {source}", shown(path))]
    Io {
        /// The trace file.
        path: PathBuf,
        /// What the operating system or decompressor reported.
        source: io::Error,
    },
    /// A text line does not have the expected form.
    #[error("{}:{line}: {}; expected {expected}", shown(path), escaped(problem))]
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
        shown(path)
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
    #[error("{}: {}; expected {expected}", shown(path), escaped(problem))]
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
    #[error("{}: record {record}: {}", shown(path), escaped(problem))]
    OutOfRange {
        /// The trace file.
        path: PathBuf,
        /// 1-based record (or line) number.
        record: u64,
        /// What does not fit.
        problem: String,
    },
    /// The trace holds no request at all: an empty file, or one of blank
    /// lines and comments only. Nothing is replayed from it.
    #[error(
        "{}: no requests in it (empty, or blank lines and comments only); expected {expected}",
        shown(path)
    )]
    Empty {
        /// The trace file.
        path: PathBuf,
        /// The format it was read as.
        expected: String,
    },
}

/// An option for reading traces is malformed (the CSV column map, a format
/// name). Nothing was opened.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{what} `{}`: expected {expected}", escaped(value))]
pub struct OptionError {
    /// Which option.
    pub what: &'static str,
    /// The offending text.
    pub value: String,
    /// The accepted form.
    pub expected: String,
}
