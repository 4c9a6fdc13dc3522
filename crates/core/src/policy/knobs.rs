//! Knobs: a policy's (or an admission policy's) parameters, as written on a
//! command line, `s3fifo(small=0.2,ghost=0.5)`.
//!
//! Each parameter struct (`S3FifoParams`, `TwoQParams`, ...) implements
//! [`Knobs`]: a table of its knobs ([`Knob`]: short name, libCacheSim's
//! name, range) and a get/set by position. Parsing, range checks, messages
//! and the canonical form (defaults left out) are written once, here.

use std::fmt;

/// What values a knob takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnobUnit {
    /// A real number.
    Real,
    /// A whole number.
    Integer,
    /// A whole number of bytes: `65536`, `64KiB`, `1MiB`.
    Bytes,
}

/// One parameter: its name on the command line, libCacheSim's name for it,
/// and the values it accepts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Knob {
    /// Short name: `small`.
    pub name: &'static str,
    /// libCacheSim's parameter: `small-size-ratio`.
    pub libcachesim: &'static str,
    /// Smallest value accepted.
    pub min: f64,
    /// Largest value accepted.
    pub max: f64,
    /// Whole numbers (or bytes) only, or any real.
    pub unit: KnobUnit,
    /// What the knob does, for messages and help.
    pub help: &'static str,
}

/// A parameter struct whose fields are knobs.
///
/// `get(i)` and `set(i, v)` read and write the field of `KNOBS[i]`; values
/// are `f64` (whole numbers up to 2^53 are exact). `Default` gives
/// libCacheSim's defaults.
pub trait Knobs: Copy + Default + PartialEq + fmt::Debug {
    /// The knobs, in the order the canonical form prints them.
    const KNOBS: &'static [Knob];
    /// The value of knob `i`.
    fn get(&self, i: usize) -> f64;
    /// Sets knob `i` to `value` (already checked against its range).
    fn set(&mut self, i: usize, value: f64);
}

/// A knob list that cannot be used: names the policy, the knob, the value
/// and what was expected.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum KnobError {
    /// A knob the policy does not have.
    #[error("{policy} has no knob `{knob}`: expected {expected}")]
    Unknown {
        /// The policy or admission policy.
        policy: String,
        /// The knob given.
        knob: String,
        /// The knobs it has, or that it has none.
        expected: String,
    },
    /// A value that does not parse or is out of range.
    #[error("{policy}: `{knob}={value}` is out of range: expected {expected}")]
    Value {
        /// The policy or admission policy.
        policy: String,
        /// The knob.
        knob: String,
        /// The value given.
        value: String,
        /// The range, and what the knob means.
        expected: String,
    },
    /// Text that is not `name(knob=value,...)`.
    #[error("{policy}: `{text}` is not a knob list: expected {expected}")]
    Syntax {
        /// The policy or admission policy.
        policy: String,
        /// The offending text.
        text: String,
        /// The expected form.
        expected: String,
    },
}

/// Every knob of `P`, `small (libCacheSim small-size-ratio), ghost (...)`,
/// or that there are none.
pub fn knob_names<P: Knobs>() -> String {
    if P::KNOBS.is_empty() {
        return "no knobs".into();
    }
    let names: Vec<String> = P::KNOBS
        .iter()
        .map(|k| format!("{} (libCacheSim {})", k.name, k.libcachesim))
        .collect();
    format!("one of {}", names.join(", "))
}

/// The range of `knob`, for messages: `a real number from 0 to 1 (...)`.
fn expected(knob: &Knob) -> String {
    let what = match knob.unit {
        KnobUnit::Real => "a number",
        KnobUnit::Integer => "a whole number",
        KnobUnit::Bytes => "a size in bytes (65536, 64KiB, 1MiB)",
    };
    format!(
        "{what} from {} to {}: {}",
        Value(knob.min, knob.unit),
        Value(knob.max, knob.unit),
        knob.help
    )
}

/// Parses `knobs` (the text between the parentheses, `small=0.2,ghost=0.5`)
/// into `P`'s defaults overridden by the knobs given. `policy` names the
/// policy in messages.
pub fn parse_knobs<P: Knobs>(policy: &str, knobs: &str) -> Result<P, KnobError> {
    let mut params = P::default();
    for item in knobs.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((name, value)) = item.split_once('=') else {
            return Err(KnobError::Syntax {
                policy: policy.into(),
                text: item.into(),
                expected: format!("knob=value, with knob {}", knob_names::<P>()),
            });
        };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        let Some(i) = P::KNOBS
            .iter()
            .position(|k| k.name == name || k.libcachesim == name)
        else {
            return Err(KnobError::Unknown {
                policy: policy.into(),
                knob: name,
                expected: knob_names::<P>(),
            });
        };
        let knob = &P::KNOBS[i];
        let parsed = parse_value(value, knob.unit)
            .filter(|v| (knob.min..=knob.max).contains(v))
            .ok_or_else(|| KnobError::Value {
                policy: policy.into(),
                knob: knob.name.into(),
                value: value.into(),
                expected: expected(knob),
            })?;
        params.set(i, parsed);
    }
    Ok(params)
}

/// A value of `unit`: a finite real, a whole number, or bytes with an
/// optional binary or decimal unit.
fn parse_value(text: &str, unit: KnobUnit) -> Option<f64> {
    let value = match unit {
        KnobUnit::Real => text.parse::<f64>().ok()?,
        KnobUnit::Integer => text.parse::<u64>().ok()? as f64,
        KnobUnit::Bytes => parse_bytes(text)? as f64,
    };
    value.is_finite().then_some(value)
}

/// `65536`, `64KiB`, `1MiB`, `2GB`: bytes.
fn parse_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().ok()?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        _ => return None,
    };
    number.checked_mul(scale)
}

/// A knob value printed in its unit: `0.1`, `4`, `1MiB`.
struct Value(f64, KnobUnit);

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Value(v, unit) = *self;
        if unit == KnobUnit::Bytes && v >= 1024.0 {
            let b = v as u64;
            for (shift, name) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
                if b.is_multiple_of(1 << shift) {
                    return write!(f, "{}{name}", b >> shift);
                }
            }
        }
        write!(f, "{v}")
    }
}

/// Writes `(knob=value,...)` for the knobs of `params` that differ from
/// their defaults, or nothing when none does: the canonical form.
pub fn write_knobs<P: Knobs>(params: &P, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let defaults = P::default();
    let mut first = true;
    for (i, knob) in P::KNOBS.iter().enumerate() {
        let v = params.get(i);
        if v == defaults.get(i) {
            continue;
        }
        f.write_str(if first { "(" } else { "," })?;
        first = false;
        write!(f, "{}={}", knob.name, Value(v, knob.unit))?;
    }
    if !first {
        f.write_str(")")?;
    }
    Ok(())
}

/// The smallest cache whose queue of `share` of it, truncated as
/// libCacheSim does, holds a block.
pub(crate) fn min_units(share: f64) -> usize {
    let n = (1.0 / share).ceil() as usize;
    if (n as f64 * share) as usize >= 1 {
        n
    } else {
        n + 1
    }
}

/// A policy without knobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoKnobs;

impl Knobs for NoKnobs {
    const KNOBS: &'static [Knob] = &[];
    fn get(&self, _: usize) -> f64 {
        0.0
    }
    fn set(&mut self, _: usize, _: f64) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_take_binary_and_decimal_units() {
        assert_eq!(parse_bytes("65536"), Some(65536));
        assert_eq!(parse_bytes("64KiB"), Some(64 << 10));
        assert_eq!(parse_bytes("1MiB"), Some(1 << 20));
        assert_eq!(parse_bytes("2GB"), Some(2_000_000_000));
        assert_eq!(parse_bytes("1XB"), None);
        assert_eq!(Value((1 << 20) as f64, KnobUnit::Bytes).to_string(), "1MiB");
        assert_eq!(Value(1000.0, KnobUnit::Bytes).to_string(), "1000");
        assert_eq!(Value(0.1, KnobUnit::Real).to_string(), "0.1");
        assert_eq!(Value(4.0, KnobUnit::Integer).to_string(), "4");
    }
}
