//! Cache and block sizes as users write them: `1000` blocks or `16MiB`.

use crate::error::OptionError;
use std::fmt;
use std::str::FromStr;

/// A cache size: a count of blocks, or bytes to divide by the block size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheSize {
    /// A plain number: this many blocks (objects).
    Blocks(u64),
    /// A number with a unit: this many bytes.
    Bytes(u64),
}

const SIZE_FORM: &str = "a block count (`2750`) or a size with a unit (`16MiB`, `1.5GiB`, `64KB`; B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)";

impl CacheSize {
    /// The capacity in blocks of `block_size` bytes (a byte size rounds
    /// down). Errors if that is zero.
    pub fn blocks(self, block_size: u64) -> Result<usize, OptionError> {
        let blocks = match self {
            CacheSize::Blocks(n) => n,
            CacheSize::Bytes(b) => b / block_size.max(1),
        };
        usize::try_from(blocks)
            .ok()
            .filter(|&b| b > 0)
            .ok_or_else(|| OptionError {
                what: "cache size",
                value: self.to_string(),
                expected: format!("at least one block of {block_size} bytes"),
            })
    }
}

impl fmt::Display for CacheSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CacheSize::Blocks(n) => write!(f, "{n}"),
            CacheSize::Bytes(b) => write!(f, "{b}B"),
        }
    }
}

impl FromStr for CacheSize {
    type Err = OptionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        if let Ok(n) = text.parse::<u64>() {
            return Ok(CacheSize::Blocks(n));
        }
        parse_bytes(text)
            .map(CacheSize::Bytes)
            .ok_or_else(|| OptionError {
                what: "cache size",
                value: s.to_string(),
                expected: SIZE_FORM.to_string(),
            })
    }
}

/// Parses a byte size with a unit: `8KiB`, `1.5GiB`, `512B`, `64KB`.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "b" => 1,
        "kib" | "k" => 1 << 10,
        "mib" | "m" => 1 << 20,
        "gib" | "g" => 1 << 30,
        "tib" | "t" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return None,
    };
    let number = number.trim();
    if let Ok(n) = number.parse::<u64>() {
        return n.checked_mul(multiplier);
    }
    let value = number
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)?;
    let bytes = value * multiplier as f64;
    (bytes < u64::MAX as f64).then_some(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_numbers_are_blocks_and_units_are_bytes() {
        assert_eq!("2750".parse(), Ok(CacheSize::Blocks(2750)));
        assert_eq!("16MiB".parse(), Ok(CacheSize::Bytes(16 << 20)));
        assert_eq!("1.5 GiB".parse(), Ok(CacheSize::Bytes(3 << 29)));
        assert_eq!("64KB".parse(), Ok(CacheSize::Bytes(64_000)));
        assert_eq!("16mib".parse(), Ok(CacheSize::Bytes(16 << 20)));
    }

    #[test]
    fn bytes_divide_by_the_block_size() {
        assert_eq!(CacheSize::Bytes(16 << 20).blocks(8192), Ok(2048));
        assert_eq!(CacheSize::Bytes(12_000).blocks(8192), Ok(1));
        assert_eq!(CacheSize::Blocks(7).blocks(8192), Ok(7));
    }

    #[test]
    fn zero_and_garbage_are_errors_naming_the_input() {
        let err = CacheSize::Blocks(0).blocks(8192).unwrap_err();
        assert!(err.to_string().contains("`0`"), "{err}");
        let err = CacheSize::Bytes(100).blocks(8192).unwrap_err();
        assert!(err.to_string().contains("at least one block"), "{err}");
        for bad in ["", "-3", "12 parsecs", "MiB", "1e400GiB"] {
            let err = bad.parse::<CacheSize>().unwrap_err();
            assert!(err.to_string().contains(&format!("`{bad}`")), "{err}");
        }
    }
}
