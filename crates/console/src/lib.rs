//! The terminal face the `coopcache` binary and its benchmarks share:
//! aligned tables, PNG plots, progress bars, reports as JSON lines or CSV,
//! the parsers of sizes and durations and the argument groups several
//! commands take, and the runtime with a temporary directory that a
//! command's async work runs in.

pub mod args;
pub mod output;
pub mod plot;
pub mod progress;
pub mod table;
pub mod tasks;
