//! The HTTP gateway's `Range` header (`gateway::parse_range`) against a
//! file of any size. Input: 8 bytes of size (big-endian), then the header
//! value. Beyond not panicking: a `Part(start, end)` is a nonempty range
//! inside the file (`start < end <= size`), so the response's length
//! (`end - start`) and `Content-Range` last byte (`end - 1`) are sound; an
//! `Unsatisfiable` range is refused only with a reason (a start at or past
//! the end, or a suffix of 0 bytes, or an empty file). Conditional headers
//! have their own target, `gateway_conditional`.

use coopcache_node::gateway::{RangeSpec, parse_range};

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    let Some((size, value)) = data.split_first_chunk::<8>() else {
        return;
    };
    let size = u64::from_be_bytes(*size);
    let Ok(value) = std::str::from_utf8(value) else {
        return;
    };
    match parse_range(value, size) {
        RangeSpec::Part(start, end) => {
            assert!(
                start < end && end <= size,
                "{value:?} of {size}: {start}..{end}"
            );
        }
        RangeSpec::Unsatisfiable => {
            assert!(value.trim().starts_with("bytes="), "{value:?}");
        }
        RangeSpec::Whole => {}
    }
}
