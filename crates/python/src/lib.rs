//! `coopcache._coopcache`: the Rust half of the `coopcache` Python
//! package. Each function opens what the CLI opens, runs the simulator
//! crate's own code (never a copy of it) with the GIL released, and hands
//! back the rows `coopcache ... --json` prints, as JSON text that the
//! package's Python half (`python/coopcache/__init__.py`) turns into
//! pandas DataFrames. Bad input raises `ValueError` (or `OSError` for a
//! file that cannot be read) with the library's message; nothing here
//! panics on what Python passes.
#![forbid(unsafe_code)]

mod cluster;
mod error;
mod input;
mod local;
mod stats;

use pyo3::prelude::*;

/// The module's functions.
#[pymodule]
fn _coopcache(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(input::read_trace, m)?)?;
    m.add_function(wrap_pyfunction!(local::simulate, m)?)?;
    m.add_function(wrap_pyfunction!(local::mrc, m)?)?;
    m.add_function(wrap_pyfunction!(stats::trace_stats, m)?)?;
    m.add_function(wrap_pyfunction!(cluster::simulate_cluster, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
