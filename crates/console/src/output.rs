//! Printing reports: JSON lines, CSV, counts and sizes for people.

use anyhow::Result;

/// `n` and `word`, plural unless `n` is 1: "1 node", "4 nodes".
pub fn count(n: impl Into<u64>, word: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}
use serde::Serialize;
use std::io::Write;

/// Bytes with a binary unit, to 1 decimal (`1.5 GiB`).
pub fn human_size(b: u64) -> String {
    let units = [
        (50, "PiB"),
        (40, "TiB"),
        (30, "GiB"),
        (20, "MiB"),
        (10, "KiB"),
    ];
    for (shift, unit) in units {
        if b >= 1 << shift {
            return format!("{:.1} {unit}", b as f64 / (1u64 << shift) as f64);
        }
    }
    format!("{b} B")
}

/// `b` bytes with the largest binary unit that divides it: `100MiB`.
pub fn human_bytes(b: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if b >= 1 << shift && b.is_multiple_of(1 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    format!("{b}B")
}

/// How a command prints its rows (`--output`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// An aligned table, for people.
    #[default]
    Table,
    /// One JSON object per line.
    Json,
    /// A header row, then one comma-separated row per line (RFC 4180).
    Csv,
}

/// Prints `rows` as `output` says; a table through `table`.
pub fn print_rows<T: Serialize>(
    output: Output,
    rows: &[T],
    table: impl FnOnce(&[T]),
) -> Result<()> {
    match output {
        Output::Table => {
            table(rows);
            Ok(())
        }
        Output::Json => print_json(rows),
        Output::Csv => print_csv(rows),
    }
}

/// A header row named after the fields, then one row per record, on
/// stdout; a field that is `None` is empty.
pub fn print_csv<T: Serialize>(rows: impl IntoIterator<Item = T>) -> Result<()> {
    let mut out = csv::Writer::from_writer(std::io::stdout().lock());
    for row in rows {
        out.serialize(row)?;
    }
    out.flush()?;
    Ok(())
}

/// One JSON object per line, on stdout.
pub fn print_json<T: Serialize>(rows: impl IntoIterator<Item = T>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    for row in rows {
        serde_json::to_writer(&mut out, &row)?;
        writeln!(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_print_with_the_largest_unit_that_divides_them() {
        assert_eq!(super::human_bytes(100 << 20), "100MiB");
        assert_eq!(super::human_bytes(1536), "1536B");
        assert_eq!(super::human_bytes(3 << 10), "3KiB");
    }
}

#[cfg(test)]
mod count_tests {
    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(super::count(1u64, "node"), "1 node");
        assert_eq!(super::count(0u64, "node"), "0 nodes");
        assert_eq!(super::count(4u64, "file"), "4 files");
    }
}
