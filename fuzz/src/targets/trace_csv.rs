//! A delimited trace with a user's column map: the first line is the
//! `--csv` spec (parsed by `CsvSpec::from_str`), the rest the trace, read
//! by `trace::read` with `--format csv`, uncompressed. Beyond not
//! panicking: the stream ends at its first error (up to `MAX_REQUESTS`
//! requests are taken).

use coopcache_sim::trace::{CsvSpec, ReadOptions, TraceFormat};

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    let (spec, trace) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(spec) = std::str::from_utf8(spec) else {
        return;
    };
    let Ok(csv) = spec.parse::<CsvSpec>() else {
        return;
    };
    let opts = ReadOptions {
        csv: Some(csv),
        ..ReadOptions::default()
    };
    crate::read_trace(trace, TraceFormat::Csv, &opts);
}
