//! The `Range` header (RFC 9110 section 14), one range at a time.

/// A parsed `Range` header against a file of `size` bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum RangeSpec {
    /// No (usable) range: the whole file.
    Whole,
    /// One satisfiable range, end exclusive.
    Part(u64, u64),
    /// No byte of the range is in the file.
    Unsatisfiable,
}

/// Parses a single `bytes=` range (RFC 9110 section 14.1.2). Several
/// ranges, other units or malformed values are ignored (the whole file is
/// sent), as the RFC allows.
pub fn parse_range(value: &str, size: u64) -> RangeSpec {
    let Some(spec) = value.trim().strip_prefix("bytes=") else {
        return RangeSpec::Whole;
    };
    if spec.contains(',') {
        return RangeSpec::Whole;
    }
    let Some((a, b)) = spec.split_once('-') else {
        return RangeSpec::Whole;
    };
    let (a, b) = (a.trim(), b.trim());
    match (a.parse::<u64>(), b.parse::<u64>()) {
        // bytes=-N: the last N bytes; an empty file has none (RFC 9110
        // section 14.1.3), and `Part(0, 0)` would give an empty 206 whose
        // `Content-Range` last byte is `0 - 1`.
        (Err(_), Ok(n)) if a.is_empty() => match n {
            0 => RangeSpec::Unsatisfiable,
            _ if size == 0 => RangeSpec::Unsatisfiable,
            n => RangeSpec::Part(size.saturating_sub(n), size),
        },
        (Ok(start), _) if start >= size => RangeSpec::Unsatisfiable,
        (Ok(start), Err(_)) if b.is_empty() => RangeSpec::Part(start, size),
        // `last` may be u64::MAX: the end saturates rather than overflow.
        (Ok(start), Ok(last)) if last >= start => {
            RangeSpec::Part(start, last.saturating_add(1).min(size))
        }
        _ => RangeSpec::Whole,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_rfc_9110() {
        use RangeSpec::*;
        assert_eq!(parse_range("bytes=0-9", 100), Part(0, 10));
        assert_eq!(parse_range("bytes=90-200", 100), Part(90, 100));
        assert_eq!(parse_range("bytes=50-", 100), Part(50, 100));
        assert_eq!(parse_range("bytes=-10", 100), Part(90, 100));
        assert_eq!(parse_range("bytes=-500", 100), Part(0, 100));
        assert_eq!(parse_range("bytes=100-", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=-0", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=5-1", 100), Whole);
        assert_eq!(parse_range("bytes=0-1,5-6", 100), Whole);
        assert_eq!(parse_range("items=0-1", 100), Whole);
        assert_eq!(parse_range("bytes=x-1", 100), Whole);
    }

    /// Found by the fuzz target `gateway_range`: a suffix range of an empty
    /// file was `Part(0, 0)`, and a last byte of u64::MAX overflowed.
    #[test]
    fn ranges_of_empty_files_and_huge_ends_are_sound() {
        use RangeSpec::*;
        assert_eq!(parse_range("bytes=-5", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-0", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-", 0), Unsatisfiable);
        let max = u64::MAX.to_string();
        assert_eq!(parse_range(&format!("bytes=0-{max}"), 100), Part(0, 100));
        assert_eq!(
            parse_range(&format!("bytes=5-{max}"), u64::MAX),
            Part(5, u64::MAX)
        );
    }
}
